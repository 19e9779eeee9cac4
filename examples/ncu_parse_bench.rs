//! Benchmark helper for scripts/bench-ncu-parse.sh.
//!
//! `ncu_parse_bench gen SRC OUT N`: write a raw-page CSV of N launches by replicating the data
//! rows of the real fixture SRC (header and units row kept, `ID` renumbered).
//! `ncu_parse_bench parse FILE [METRIC,…]`: parse FILE into records held in memory, print
//! `seconds kernels peak_rss_bytes`.

use std::io::Write;
use std::time::Instant;

use polyprof::profilers::ncu::{MetricFilter, ParseOptions, parse};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("gen") if args.len() == 5 => generate(&args[2], &args[3], args[4].parse()?),
        Some("parse") if args.len() >= 3 => run_parse(&args[2], args.get(3)),
        _ => anyhow::bail!("usage: ncu_parse_bench gen SRC OUT N | parse FILE [METRICS]"),
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

fn run_parse(file: &str, metrics: Option<&String>) -> anyhow::Result<()> {
    let start = Instant::now();
    let bytes = std::fs::read(file)?;
    let keep = match metrics {
        Some(list) => MetricFilter::Only(list.split(',').map(str::to_string).collect()),
        None => MetricFilter::All,
    };
    let parsed = parse(
        &bytes,
        &ParseOptions {
            keep,
            requested: Vec::new(),
        },
    );
    let seconds = start.elapsed().as_secs_f64();
    println!("{seconds:.4} {} {}", parsed.kernels.len(), peak_rss());
    Ok(())
}
