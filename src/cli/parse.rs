//! `polyprof parse`: turn saved profiler output into normalized records, without a GPU.
//!
//! Exit codes, the same for every profiler (`parse_output::exit_code`): 0 parsed, no error-level
//! diagnostic; 1 parsed, but with an error-level diagnostic (the profiler reported an error, a
//! requested metric is missing, a number that cannot be); 2 a file that is unreadable, not a
//! regular file, or that the parser could not read (the others are still printed), input in
//! which nothing is the profiler's output, or bad flags.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use polyprof::model::{ParsedOutput, ProfilerOutput, RawArtifact, RawOutput};
use polyprof::model::{input, number};

use super::parse_output::{
    exit_code, print_memory_note, print_table, report_diagnostics, table_row,
};
use polyprof::pipeline::artifacts::DEFAULT_ARTIFACT_CAP;
use polyprof::profilers::ncu::parse::flag_empty;
use polyprof::profilers::ncu::{
    MetricFilter, ParseOptions, device_from_session, merge, parse_reader,
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
    if entry.name == "vtune" {
        return super::parse_vtune::execute(&args.files, args.json, &args.metrics);
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
        // A directory, FIFO or device is refused before any output (a FIFO would hang).
        let reader = open_regular_file(file)?;
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
        for file in &args.files {
            require_regular_file(file)?;
        }
        let mut merged = ParsedOutput::default();
        for file in &args.files {
            merge(&mut merged, parse_ncu_file(file, &options)?);
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
    if let [file] = args.files.as_slice() {
        name_the_file(&mut parsed, file);
    }
    flag_empty(&mut parsed, kernels);
    report_diagnostics(&parsed, args.json);
    Ok(exit_code(&parsed, false))
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
            "memory_commands": output.parsed.memory_commands,
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
        print_memory_note(&mut out, &output.parsed.memory_commands)?;
    }
    out.flush()?;
    for error in &output.errors {
        super::parse_output::print_error(error);
    }
    report_diagnostics(&output.parsed, args.json);
    // A file the parser could not read is like an unreadable one; the others were printed.
    Ok(exit_code(&output.parsed, !output.errors.is_empty()))
}

/// Every file parsed and merged into one output, with its device (for a run document).
fn parse_all(files: &[PathBuf], options: &ParseOptions) -> anyhow::Result<ParsedOutput> {
    for file in files {
        require_regular_file(file)?;
    }
    let mut merged = ParsedOutput::default();
    for file in files {
        merge(&mut merged, parse_ncu_file(file, options)?);
    }
    merged.device = device_from_session(&merged.session);
    let count = merged.kernels.len();
    flag_empty(&mut merged, count);
    Ok(merged)
}

/// One ncu file, read in pieces (lines bounded), its records collected.
fn parse_ncu_file(file: &Path, options: &ParseOptions) -> anyhow::Result<ParsedOutput> {
    let reader = open_regular_file(file)?;
    let mut kernels = Vec::new();
    let mut parsed = parse_reader(reader, options, &mut |k| kernels.push(k))
        .with_context(|| format!("cannot read `{}`", file.display()))?;
    parsed.kernels = kernels;
    name_the_file(&mut parsed, file);
    Ok(parsed)
}

/// The ncu parser reads a stream and names it `ncu output` in its bad-number diagnostics; the
/// file it came from goes in its place.
fn name_the_file(parsed: &mut ParsedOutput, file: &Path) {
    let placeholder = format!("`{}`", number::NCU_OUTPUT);
    for diagnostic in &mut parsed.diagnostics {
        if diagnostic.kind == number::BAD_NUMBER && diagnostic.message.contains(&placeholder) {
            diagnostic.message = diagnostic
                .message
                .replace(&placeholder, &format!("`{}`", file.display()));
        }
    }
}

/// `path` when it is a regular file; a clear error (exit 2) when it is a FIFO, device or
/// directory, before anything opens it.
fn require_regular_file(path: &Path) -> anyhow::Result<()> {
    input::require_regular_file(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    Ok(())
}

fn open_regular_file(path: &Path) -> anyhow::Result<std::fs::File> {
    let file = input::open_regular_file(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    tracing::debug!(file = %path.display(), "reading a profiler output file");
    Ok(file)
}

/// The files as raw artifacts named by their file names, through the backend's own parser.
/// Each is read up to the pipeline's artifact cap, as a run's would be (the parser warns when
/// one is cut).
fn backend_output(entry: &BackendEntry, args: &Args) -> anyhow::Result<ProfilerOutput> {
    for file in &args.files {
        require_regular_file(file)?;
    }
    let mut raw = RawOutput::default();
    for file in &args.files {
        let (content, size, truncated) = input::read_regular_file(file, DEFAULT_ARTIFACT_CAP)
            .with_context(|| format!("cannot read `{}`", file.display()))?;
        tracing::debug!(file = %file.display(), bytes = size, truncated, "read a profiler output file");
        raw.artifacts.push(RawArtifact {
            name: file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            path: file.clone(),
            size,
            content,
            truncated,
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
    name_the_file(&mut parsed, Path::new(&files[0]));
    flag_empty(&mut parsed, count);
    write!(
        out,
        "\n],\"diagnostics\":{},\"session\":{}}}\n",
        serde_json::to_string(&parsed.diagnostics)?,
        serde_json::to_string(&parsed.session)?
    )?;
    Ok((parsed, count))
}
