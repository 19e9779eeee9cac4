//! `polyprof parse`: turn saved profiler output into normalized records, without a GPU.
//!
//! Exit codes: 0 parsed, no error-level diagnostic; 1 parsed, but ncu reported an error (or a
//! requested metric is missing); 2 unreadable file (or one the parser could not read: the others
//! are still printed), or bad flags.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_BORDERS_ONLY};
use polyprof::model::record::KernelRecord;
use polyprof::model::{
    NormalizedField, ParsedOutput, ProfilerOutput, RawArtifact, RawOutput, Severity,
    normalized_field,
};
use polyprof::profilers::ncu::parse::flag_empty;
use polyprof::profilers::ncu::{
    MetricFilter, ParseOptions, device_from_session, merge, parse, parse_reader,
};
use polyprof::profilers::registry::{self, BACKENDS, BackendEntry};

/// Arguments of `polyprof parse`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which profiler wrote the files (every registered backend; those without a parser yet
    /// say so).
    #[arg(long, default_value = "ncu", value_parser = clap::builder::PossibleValuesParser::new(BACKENDS.iter().map(|b| b.name)))]
    pub profiler: String,
    /// Files to parse: ncu stdout, its --log-file, or --import exports (raw, details, session
    /// pages). Several files of one run are merged on (process id, launch id).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Keep (and show) only these metrics besides the normalized fields; each must be present.
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Keep every metric ncu printed in each record (JSON). By default records hold the
    /// normalized fields, the launch facts (occupancy limits, shared memory, registers, waves)
    /// and the --metrics names.
    #[arg(long, conflicts_with = "metrics")]
    pub all_metrics: bool,
    /// Print JSON (kernels, diagnostics, session) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write a run document (run.json) of the parsed records to FILE, which `polyprof
    /// report` and `polyprof diff` read like a profiled run's.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        conflicts_with = "run_dir"
    )]
    pub run_file: Option<PathBuf>,
    /// Also write the run document as DIR/run.json (DIR is created).
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

fn options(args: &Args) -> ParseOptions {
    let metrics: Vec<String> = args
        .metrics
        .iter()
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
    ParseOptions {
        keep: if args.all_metrics {
            MetricFilter::All
        } else if metrics.is_empty() {
            MetricFilter::Essential
        } else {
            MetricFilter::Only(metrics.iter().cloned().collect::<BTreeSet<_>>())
        },
        requested: metrics,
        // Raw files carry no `--kernel` filter: every launch in them is shown.
        instance: None,
    }
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let entry = registry::lookup(&args.profiler)?;
    if !entry.parses_kernels {
        let with_parser: Vec<&str> = BACKENDS
            .iter()
            .filter(|b| b.parses_kernels)
            .map(|b| b.name)
            .collect();
        anyhow::bail!(
            "`{}` has no parser yet: polyprof runs it and keeps its raw files in the run directory \
             (`polyprof run --profiler {}` lists them in run.json), but cannot turn them into \
             kernel records; `polyprof parse` reads output of: {}",
            entry.name,
            entry.name,
            with_parser.join(", ")
        );
    }
    if args.run_file.is_some() || args.run_dir.is_some() {
        let parsed = if entry.name == "ncu" {
            (parse_all(&args.files, &options(&args))?, Vec::new())
        } else {
            let output = backend_output(entry, &args)?;
            (output.parsed, output.errors)
        };
        return super::parse_run::write(
            entry.name,
            &args.files,
            parsed,
            args.run_file.as_deref(),
            args.run_dir.as_deref(),
        );
    }
    if entry.name != "ncu" {
        return parse_with_backend(entry, &args);
    }
    let options = options(&args);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (parsed, kernels) = if let [file] = args.files.as_slice() {
        // One file: read in pieces and, for JSON, write records as they come, so memory stays
        // flat on huge inputs.
        // A directory opens fine and fails on the first read: refuse it before any output.
        let reader = std::fs::File::open(file)
            .and_then(|f| match f.metadata()?.is_dir() {
                true => Err(std::io::Error::other("is a directory")),
                false => Ok(f),
            })
            .with_context(|| format!("cannot read `{}`", file.display()))?;
        if args.json {
            stream_json(reader, &options, &args.files, &mut out)?
        } else {
            let mut rows = Vec::new();
            let parsed = parse_reader(reader, &options, &mut |k| {
                rows.push(table_row(&k, &args.metrics))
            })
            .with_context(|| format!("cannot read `{}`", file.display()))?;
            let count = rows.len();
            print_table(&mut out, rows, &args.metrics)?;
            (parsed, count)
        }
    } else {
        let mut inputs = Vec::with_capacity(args.files.len());
        for file in &args.files {
            let bytes = read_input(file)?;
            inputs.push(bytes);
        }
        let mut merged = ParsedOutput::default();
        for input in &inputs {
            merge(&mut merged, parse(input, &options));
        }
        let count = merged.kernels.len();
        if args.json {
            let files: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
            let kernels = std::mem::take(&mut merged.kernels);
            flag_empty(&mut merged, count);
            let document = serde_json::json!({
                "profiler": "ncu",
                "files": files,
                "kernels": kernels,
                "diagnostics": merged.diagnostics,
                "session": merged.session,
            });
            serde_json::to_writer_pretty(&mut out, &document)?;
            writeln!(out)?;
        } else {
            let rows = merged
                .kernels
                .iter()
                .map(|k| table_row(k, &args.metrics))
                .collect();
            print_table(&mut out, rows, &args.metrics)?;
        }
        merged.kernels.clear();
        (merged, count)
    };
    out.flush()?;
    let mut parsed = parsed;
    flag_empty(&mut parsed, kernels);
    report_diagnostics(&parsed, args.json);
    let failed = parsed
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    Ok(u8::from(failed))
}

/// A backend other than ncu (whose parser streams): the files become raw artifacts named by
/// their file names and go through the backend's own parser.
fn parse_with_backend(entry: &BackendEntry, args: &Args) -> anyhow::Result<u8> {
    let output = backend_output(entry, args)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.json {
        let files: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
        let document = serde_json::json!({
            "profiler": entry.name,
            "files": files,
            "kernels": output.parsed.kernels,
            "diagnostics": output.parsed.diagnostics,
            "session": output.parsed.session,
            "errors": output.errors,
        });
        serde_json::to_writer_pretty(&mut out, &document)?;
        writeln!(out)?;
    } else {
        let rows = output
            .parsed
            .kernels
            .iter()
            .map(|k| table_row(k, &args.metrics))
            .collect();
        print_table(&mut out, rows, &args.metrics)?;
    }
    out.flush()?;
    for error in &output.errors {
        eprintln!("error: {error}");
    }
    report_diagnostics(&output.parsed, args.json);
    // A file the parser could not read is like an unreadable one; the others were printed.
    if !output.errors.is_empty() {
        return Ok(2);
    }
    let failed = output
        .parsed
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    Ok(u8::from(failed))
}

/// Every file parsed and merged into one output, with its device (for a run document).
fn parse_all(files: &[PathBuf], options: &ParseOptions) -> anyhow::Result<ParsedOutput> {
    let mut merged = ParsedOutput::default();
    for file in files {
        let bytes = read_input(file)?;
        merge(&mut merged, parse(&bytes, options));
    }
    merged.device = device_from_session(&merged.session);
    let count = merged.kernels.len();
    flag_empty(&mut merged, count);
    Ok(merged)
}

/// The files as raw artifacts named by their file names, through the backend's own parser.
fn backend_output(entry: &BackendEntry, args: &Args) -> anyhow::Result<ProfilerOutput> {
    let mut raw = RawOutput::default();
    for file in &args.files {
        let content = read_input(file)?;
        raw.artifacts.push(RawArtifact {
            name: file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            path: file.clone(),
            size: content.len() as u64,
            content,
            truncated: false,
        });
    }
    let dir = args
        .files
        .first()
        .and_then(|f| f.parent())
        .map(PathBuf::from)
        .unwrap_or_default();
    let backend = (entry.create)(dir, &Default::default())?;
    Ok(backend.parse(raw)?)
}

/// `{"profiler":…,"files":…,"kernels":[…],"diagnostics":[…],"session":{…}}`, kernels written as
/// they are parsed.
fn stream_json(
    input: impl std::io::Read,
    options: &ParseOptions,
    files: &[PathBuf],
    out: &mut impl Write,
) -> anyhow::Result<(ParsedOutput, usize)> {
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    write!(
        out,
        "{{\"profiler\":\"ncu\",\"files\":{},\"kernels\":[",
        serde_json::to_string(&files)?
    )?;
    let mut count = 0usize;
    let mut error: Option<anyhow::Error> = None;
    let mut parsed = parse_reader(input, options, &mut |kernel| {
        if error.is_some() {
            return;
        }
        let separator = if count == 0 { "\n" } else { ",\n" };
        let result = out
            .write_all(separator.as_bytes())
            .map_err(anyhow::Error::from)
            .and_then(|_| serde_json::to_writer(&mut *out, &kernel).map_err(anyhow::Error::from));
        if let Err(e) = result {
            error = Some(e);
        }
        count += 1;
    })
    .with_context(|| format!("cannot read `{}`", files[0]))?;
    if let Some(error) = error {
        return Err(error);
    }
    flag_empty(&mut parsed, count);
    write!(
        out,
        "\n],\"diagnostics\":{},\"session\":{}}}\n",
        serde_json::to_string(&parsed.diagnostics)?,
        serde_json::to_string(&parsed.session)?
    )?;
    Ok((parsed, count))
}

fn fmt(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

fn dim3(value: Option<[u64; 3]>) -> String {
    value.map_or_else(|| "-".to_string(), |[x, y, z]| format!("{x}x{y}x{z}"))
}

fn truncate(name: &str, max: usize) -> String {
    if name.chars().count() <= max {
        name.to_string()
    } else {
        let head: String = name.chars().take(max - 1).collect();
        format!("{head}…")
    }
}

const HEADER: [&str; 10] = [
    "pid", "id", "kernel", "grid", "block", "time us", "DRAM MB", "GB/s", "GFLOP/s", "FLOP/B",
];

/// The normalized numbers shown as they are, after [`HEADER`]'s columns (titles and units from
/// `model::fields`).
const AS_REPORTED: [&str; 6] = [
    "achieved_occupancy_pct",
    "theoretical_occupancy_pct",
    "sm_throughput_pct",
    "memory_throughput_pct",
    "registers_per_thread",
    "shared_mem_per_block",
];

fn as_reported() -> impl Iterator<Item = &'static NormalizedField> {
    AS_REPORTED.iter().filter_map(|name| normalized_field(name))
}

fn table_row(k: &KernelRecord, metrics: &[String]) -> Vec<String> {
    let mut row = vec![
        k.process_id
            .map_or_else(|| "-".to_string(), |p| p.to_string()),
        k.launch_id.to_string(),
        truncate(&k.short_name, 48),
        dim3(k.grid),
        dim3(k.block),
        fmt(k.duration_ns.map(|ns| ns / 1e3), 2),
        fmt(k.total_dram_bytes().map(|b| b / 1e6), 2),
        fmt(k.dram_gb_per_s(), 1),
        fmt(k.gflops_per_s(), 1),
        fmt(k.arithmetic_intensity(), 2),
    ];
    row.extend(as_reported().map(|field| fmt((field.get)(k), if field.integer { 0 } else { 1 })));
    for name in metrics {
        row.push(match k.metrics.get(name.as_str()) {
            Some(metric) => match metric.value.as_f64() {
                Some(v) => format!("{v} {}", metric.unit).trim().to_string(),
                None => format!("{:?}", metric.value),
            },
            None => "-".to_string(),
        });
    }
    row
}

fn print_table(
    out: &mut impl Write,
    rows: Vec<Vec<String>>,
    metrics: &[String],
) -> anyhow::Result<()> {
    let mut table = Table::new();
    table.load_style(UTF8_BORDERS_ONLY);
    let mut header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
    header.extend(as_reported().map(|field| field.label.to_string()));
    header.extend(metrics.iter().cloned());
    table.set_header(header);
    for row in rows {
        table.add_row(row.into_iter().enumerate().map(|(i, cell)| {
            let cell = Cell::new(cell);
            if i == 2 {
                cell
            } else {
                cell.set_alignment(CellAlignment::Right)
            }
        }));
    }
    writeln!(out, "{table}")?;
    Ok(())
}

/// Diagnostics go to stderr so stdout stays machine-readable (they are in the JSON too).
fn report_diagnostics(parsed: &ParsedOutput, json: bool) {
    for d in &parsed.diagnostics {
        if json && d.severity == Severity::Info {
            continue;
        }
        let level = match d.severity {
            Severity::Info => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        eprintln!("{level} [{}]: {}", d.kind, d.message);
        if let Some(hint) = &d.hint {
            eprintln!("  hint: {hint}");
        }
    }
}

/// One input file's bytes, logged (debug) with its size.
fn read_input(file: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read `{}`", file.display()))?;
    tracing::debug!(file = %file.display(), bytes = bytes.len(), "read a profiler output file");
    Ok(bytes)
}
