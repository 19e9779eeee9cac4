//! `polyprof parse --profiler rocprofv3 FILE…`: the files of one rocprofv3 pass (kernel trace,
//! memory copies, counter collections, stats, agent info, `-S` summary text), recognised by
//! name and joined into one list of normalized records.
//!
//! Exit codes: 0 parsed; 1 parsed with an error-level diagnostic; 2 a file could not be read
//! or parsed (what the other files gave is still printed).

use std::io::Write;

use anyhow::Context as _;
use polyprof::profilers::Severity;
use polyprof::profilers::rocprofv3::{FileKind, parse_files};

use super::parse::{Args, print_table, report_diagnostics, table_row};

pub fn execute(args: &Args) -> anyhow::Result<u8> {
    let mut inputs = Vec::with_capacity(args.files.len());
    for file in &args.files {
        let name = file.display().to_string();
        if FileKind::of(&name) == FileKind::Other {
            anyhow::bail!(
                "`{name}` is not a rocprofv3 output this parser knows; pass `*_kernel_trace.csv`, \
                 `*_memory_copy_trace.csv`, `*_counter_collection.csv`, `*_stats.csv`, \
                 `*_agent_info.csv` or a `-S` summary saved as `*summary*.txt`"
            );
        }
        let bytes = std::fs::read(file).with_context(|| format!("cannot read `{name}`"))?;
        inputs.push((name, bytes));
    }
    let files: Vec<(&str, &[u8], bool)> = inputs
        .iter()
        .map(|(name, bytes)| (name.as_str(), bytes.as_slice(), false))
        .collect();
    let pass = parse_files(&files);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.json {
        let names: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
        let document = serde_json::json!({
            "profiler": "rocprofv3",
            "files": names,
            "kernels": pass.parsed.kernels,
            "diagnostics": pass.parsed.diagnostics,
            "session": pass.parsed.session,
            "errors": pass.errors,
        });
        serde_json::to_writer_pretty(&mut out, &document)?;
        writeln!(out)?;
    } else {
        let rows = pass
            .parsed
            .kernels
            .iter()
            .map(|k| table_row(k, &args.metrics))
            .collect();
        print_table(&mut out, rows, &args.metrics)?;
    }
    out.flush()?;
    report_diagnostics(&pass.parsed, args.json);
    for error in &pass.errors {
        eprintln!("error: {error}");
    }
    if !pass.errors.is_empty() {
        return Ok(2);
    }
    let failed = pass
        .parsed
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    Ok(u8::from(failed))
}
