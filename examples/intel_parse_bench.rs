//! Benchmark helper for scripts/bench-intel-parse.sh.
//!
//! `intel_parse_bench gen-timeline SRC OUT N`: a device timeline of N lines made by repeating the
//! lines of the real fixture SRC (timestamps shifted so every line is distinct).
//! `intel_parse_bench gen-summary SRC OUT N`: a device timing summary of N kernel rows made by
//! repeating the real fixture's rows, names made distinct (`"name#i"`); prints the number of
//! lines before the header (for pandas' `skiprows`).
//! `intel_parse_bench timeline|summary FILE`: read FILE, parse it into normalized records held in
//! memory, print `seconds records peak_rss_bytes seconds_until_parsed`.

use std::io::Write;
use std::time::Instant;

use polyprof::profilers::unitrace::records::{summary_records, timeline_records};
use polyprof::profilers::unitrace::tables::parse_tables;
use polyprof::profilers::unitrace::timeline::parse_timeline;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match (args.get(1).map(String::as_str), args.len()) {
        (Some("gen-timeline"), 5) => gen_timeline(&args[2], &args[3], args[4].parse()?),
        (Some("gen-summary"), 5) => gen_summary(&args[2], &args[3], args[4].parse()?),
        (Some(kind @ ("timeline" | "summary")), 3) => run(kind, &args[2]),
        _ => anyhow::bail!(
            "usage: intel_parse_bench gen-timeline|gen-summary SRC OUT N | timeline|summary FILE"
        ),
    }
}

fn gen_timeline(source: &str, out: &str, lines: usize) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(source)?;
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("Thread ")).collect();
    anyhow::ensure!(!rows.is_empty(), "{source} has no timeline lines");
    let mut file = std::io::BufWriter::new(std::fs::File::create(out)?);
    for n in 0..lines {
        let row = rows[n % rows.len()];
        // Keep the line's shape; only the round number changes the timestamps' last digits.
        let round = (n / rows.len()) as u64;
        let at = row.rfind(" [ns] ").unwrap_or(row.len());
        write!(file, "{} [ns]", &row[..at])?;
        let mut tokens = row[(at + 6).min(row.len())..].split_ascii_whitespace();
        while let (Some(value), Some(label)) = (tokens.next(), tokens.next()) {
            let value: u64 = value.parse()?;
            write!(file, " {} {label}", value + round * 10_000_000)?;
        }
        writeln!(file)?;
    }
    file.flush()?;
    Ok(())
}

fn gen_summary(source: &str, out: &str, rows: usize) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(source)?;
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.trim_start().starts_with("Kernel,"))
        .ok_or_else(|| anyhow::anyhow!("{source} has no device timing header"))?;
    let body: Vec<&str> = lines[header + 1..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .copied()
        .collect();
    let mut file = std::io::BufWriter::new(std::fs::File::create(out)?);
    for line in &lines[..=header] {
        writeln!(file, "{line}")?;
    }
    for n in 0..rows {
        let row = body[n % body.len()];
        // Make the name distinct: `"name"` → `"name#n"`, `name,` → `name#n,`.
        let end = if row.trim_start().starts_with('"') {
            row.find("\",").unwrap_or(0)
        } else {
            row.find(',').unwrap_or(0)
        };
        writeln!(file, "{}#{n}{}", &row[..end], &row[end..])?;
    }
    file.flush()?;
    println!("{header}");
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

fn run(kind: &str, file: &str) -> anyhow::Result<()> {
    let start = Instant::now();
    // Reading the file is part of the measured time, as it is for pandas.read_csv.
    let text = std::fs::read_to_string(file)?;
    let (parsed_at, records) = if kind == "timeline" {
        let timeline = parse_timeline(&text);
        (start.elapsed(), timeline_records(timeline, "unitrace"))
    } else {
        let tables = parse_tables(&text);
        (start.elapsed(), summary_records(&tables, "unitrace"))
    };
    let seconds = start.elapsed().as_secs_f64();
    // `seconds records peak_rss_bytes seconds_until_parsed` (the rest builds the records).
    println!(
        "{seconds:.4} {} {} {:.4}",
        records.len(),
        peak_rss(),
        parsed_at.as_secs_f64()
    );
    Ok(())
}
