//! `polyprof parse … -o run.json` / `--run-dir DIR`: the parsed records as a run document, so
//! saved profiler output goes through `report` and `diff` like a profiled run.
//!
//! The document is labelled as parsed, not run: no process steps, no outcome, a warning naming
//! the files, and the error diagnostics in `errors` (as a profiled run has them).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use polyprof::model::{ErrorKind, ParsedOutput, ProfileRun, RunError, Severity};
use polyprof::results::export::table::PARSED_CONFIGURATION;

/// Write the run document of `parsed` to `run_file`, or to `run_dir`/run.json. Exit status: as
/// `parse` without a document ([`super::parse_output::exit_code`]: 2 when a file could not be
/// parsed or holds nothing of the profiler's, 1 for an error diagnostic), and 1 at least when the
/// document has errors. The document is written in every case: what was read is kept.
pub fn write(
    profiler: &str,
    files: &[PathBuf],
    (parsed, parse_errors): (ParsedOutput, Vec<String>),
    run_file: Option<&Path>,
    run_dir: Option<&Path>,
) -> anyhow::Result<u8> {
    let status = super::parse_output::exit_code(&parsed, !parse_errors.is_empty());
    let run = run_document(profiler, files, parsed, parse_errors);
    let path = match (run_file, run_dir) {
        (Some(file), _) => write_to(&run, file)?,
        (None, Some(dir)) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create `{}`", dir.display()))?;
            run.write(dir)?
        }
        (None, None) => anyhow::bail!("parse: no run document requested"),
    };
    for d in &run.diagnostics {
        let level = match d.severity {
            Severity::Info => continue,
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        super::parse_output::print_diagnostic(level, d);
    }
    let mut err = std::io::stderr();
    writeln!(
        err,
        "polyprof: wrote {} ({} kernel records from {} file(s); read it with `polyprof report {}`)",
        path.display(),
        run.kernels.len(),
        files.len(),
        path.display()
    )?;
    Ok(status.max(u8::from(!run.errors.is_empty())))
}

/// The run document of parsed output.
pub fn run_document(
    profiler: &str,
    files: &[PathBuf],
    parsed: ParsedOutput,
    parse_errors: Vec<String>,
) -> ProfileRun {
    let dir = files
        .first()
        .and_then(|f| f.parent())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    // `<profiler>.000` like the first pass of a run, so exports of two parsed captures of one
    // program get the same frame names.
    let mut run = ProfileRun::new(&format!("{profiler}.000"), profiler, &[], &dir);
    run.profiler.configuration = Some(PARSED_CONFIGURATION.to_string());
    run.profiler.version = parsed
        .session
        .get("version")
        .or_else(|| parsed.session.get("ncu_version"))
        .cloned();
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    run.warnings.push(format!(
        "parsed from saved files ({}): no process was run, so there are no steps, wall time or exit status",
        names.join(", ")
    ));
    run.device = parsed.device;
    run.errors = parse_errors
        .into_iter()
        .map(|e| RunError::new(ErrorKind::ProfilerOutput, e))
        .collect();
    run.errors.extend(
        parsed
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| RunError::new(ErrorKind::Diagnostic, format!("{}: {}", d.kind, d.message))),
    );
    run.kernels = parsed.kernels;
    run.memory_commands = parsed.memory_commands;
    run.diagnostics = parsed.diagnostics;
    run.session = parsed.session;
    run
}

/// Write the document to `file` atomically (the one document writer).
fn write_to(run: &ProfileRun, file: &Path) -> anyhow::Result<PathBuf> {
    // Serialized straight into the file: the document of a large capture is ten times its input,
    // and need not be held in memory beside the records.
    polyprof::model::atomic_file::write_atomic_with(file, |out| {
        serde_json::to_writer_pretty(out, run).map_err(std::io::Error::other)
    })
    .with_context(|| format!("cannot write `{}`", file.display()))?;
    tracing::debug!(path = %file.display(), "wrote the run document");
    Ok(file.to_path_buf())
}
