//! Benchmark helper for scripts/bench-ncu-parse.sh.
//!
//! `ncu_parse_bench gen SRC OUT N`: write a raw-page CSV of N launches by replicating the data
//! rows of the real fixture SRC (header and units row kept, `ID` renumbered).
//! `ncu_parse_bench parse FILE MODE [THREADS]`: parse FILE (read in pieces by
//! `parse_reader_threads`, THREADS 1 or 2, default 2) into records held in memory, print
//! `seconds kernels metric_cells peak_rss_bytes`. MODE: `default` (the default
//! [`MetricFilter::Essential`]), `all` (every metric), or a comma-separated list of names kept.
//! `ncu_parse_bench phases FILE`: where the single-threaded time goes.

use std::io::Write;
use std::time::Instant;

use polyprof::profilers::ncu::{MetricFilter, ParseOptions, parse_reader_threads};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("gen") if args.len() == 5 => generate(&args[2], &args[3], args[4].parse()?),
        Some("phases") if args.len() == 3 => phases(&args[2]),
        Some("parse") if args.len() == 4 => run_parse(&args[2], &args[3], 2),
        Some("parse") if args.len() == 5 => run_parse(&args[2], &args[3], args[4].parse()?),
        _ => anyhow::bail!(
            "usage: ncu_parse_bench gen SRC OUT N | parse FILE default|all|A,B,… [THREADS] | \
             phases FILE"
        ),
    }
}

fn generate(source: &str, out: &str, launches: usize) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(source)?;
    let csv: Vec<&str> = text.lines().filter(|l| l.starts_with('"')).collect();
    anyhow::ensure!(csv.len() > 2, "{source} has no raw-page rows");
    let (header, units, rows) = (csv[0], csv[1], &csv[2..]);
    let mut file = std::io::BufWriter::new(std::fs::File::create(out)?);
    writeln!(file, "{header}\n{units}")?;
    for id in 0..launches {
        let row = rows[id % rows.len()];
        // Every row starts with `"<ID>",`; replace the ID so launches stay distinct.
        let rest = &row[row.find("\",").map_or(0, |i| i + 1)..];
        writeln!(file, "\"{id}\"{rest}")?;
    }
    file.flush()?;
    Ok(())
}

fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

fn run_parse(file: &str, mode: &str, threads: usize) -> anyhow::Result<()> {
    let start = Instant::now();
    let keep = match mode {
        "default" => MetricFilter::default(),
        "all" => MetricFilter::All,
        list => MetricFilter::Only(list.split(',').map(str::to_string).collect()),
    };
    let options = ParseOptions {
        keep,
        ..Default::default()
    };
    // Records are kept in memory, as pandas keeps its frame.
    let mut kernels = Vec::new();
    parse_reader_threads(std::fs::File::open(file)?, &options, threads, &mut |k| {
        kernels.push(k)
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let cells: usize = kernels.iter().map(|k| k.metrics.len()).sum();
    println!("{seconds:.4} {} {cells} {}", kernels.len(), peak_rss());
    Ok(())
}

/// Where the time goes: read, line ends, tokenizing, then the whole parse (no records kept).
fn phases(file: &str) -> anyhow::Result<()> {
    use polyprof::profilers::ncu::{row::Splitter, scan};
    let start = Instant::now();
    let bytes = std::fs::read(file)?;
    let read = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let (mut pos, mut lines) = (0, 0usize);
    while pos < bytes.len() {
        pos = scan::line_end(&bytes, pos) + 1;
        lines += 1;
    }
    let line_ends = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let (mut pos, mut fields) = (0, 0usize);
    let mut splitter = Splitter::default();
    while pos < bytes.len() {
        let end = scan::line_end(&bytes, pos);
        fields += splitter.split(&bytes[pos..end]).map_or(0, |row| row.len());
        pos = end + 1;
    }
    let split = start.elapsed().as_secs_f64();
    let options = ParseOptions::default();
    let mut parsed = Vec::new();
    for threads in [1, 2] {
        let start = Instant::now();
        parse_reader_threads(std::fs::File::open(file)?, &options, threads, &mut |_| {})?;
        let dropped = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let mut kernels = Vec::new();
        parse_reader_threads(std::fs::File::open(file)?, &options, threads, &mut |k| {
            kernels.push(k)
        })?;
        let kept = start.elapsed().as_secs_f64();
        parsed.push(format!(
            "{threads} thread(s): records dropped {dropped:.4}s, kept {kept:.4}s"
        ));
    }
    println!(
        "read {read:.4}s, line ends {line_ends:.4}s ({lines} lines), line ends + split \
         {split:.4}s ({fields} fields); parse_reader_threads, default mode: {}",
        parsed.join("; ")
    );
    Ok(())
}
