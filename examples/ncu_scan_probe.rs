use std::time::Instant;
fn main() {
    let f = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&f).unwrap();
    let t = Instant::now();
    let segs = polyprof::profilers::ncu::scan::scan(&bytes);
    println!("scan {:.3}s {}", t.elapsed().as_secs_f64(), segs.len());
    let t = Instant::now();
    let mut r = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(&bytes[..]);
    let mut rec = csv::ByteRecord::new();
    let mut n = 0usize;
    while r.read_byte_record(&mut rec).unwrap() { n += rec.len(); }
    println!("csv {:.3}s {}", t.elapsed().as_secs_f64(), n);
    let t = Instant::now();
    let mut r = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(&bytes[..]);
    let mut s = 0.0;
    while r.read_byte_record(&mut rec).unwrap() { for c in rec.iter() { if let Some(v) = std::str::from_utf8(c).ok().and_then(polyprof::profilers::ncu::units::parse_number) { s += v; } } }
    println!("csv+num {:.3}s {}", t.elapsed().as_secs_f64(), s);
}
