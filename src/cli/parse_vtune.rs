//! `polyprof parse --profiler vtune FILE…` without a run document: each report is read row by
//! row and, for `--json`, each record written as soon as it is made, so memory stays a small
//! multiple of one row however large the report (a 100 MB CSV held whole took 11 GB).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use polyprof::model::ParsedOutput;
use polyprof::model::input;
use polyprof::model::record::KernelRecord;
use polyprof::profilers::vtune::REPORT_FILE;
use polyprof::profilers::vtune::report::{Delimiter, parse_stream};

use super::parse_output::{exit_code, print_table, report_diagnostics, table_row};

/// Parse `files` as VTune reports; `json` and `metrics` as `polyprof parse` takes them.
pub fn execute(files: &[PathBuf], json: bool, metrics: &[String]) -> anyhow::Result<u8> {
    for file in files {
        input::require_regular_file(file)
            .with_context(|| format!("cannot read `{}`", file.display()))?;
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    if json {
        write!(
            out,
            "{{\"profiler\":\"vtune\",\"files\":{},\"kernels\":[",
            serde_json::to_string(&names)?
        )?;
    }
    let mut merged = ParsedOutput::default();
    let mut errors = Vec::new();
    let mut rows = Vec::new();
    let mut count = 0u64;
    let mut write_error: Option<std::io::Error> = None;
    for file in files {
        // Launch ids stay unique across the files, as the backend numbers them.
        let first = count;
        let mut emit = |mut record: KernelRecord| {
            record.launch_id += first;
            count += 1;
            if !json {
                rows.push(table_row(&record, metrics));
                return;
            }
            if write_error.is_some() {
                return;
            }
            let separator = if count == 1 { "\n" } else { ",\n" };
            let written = out.write_all(separator.as_bytes()).and_then(|_| {
                serde_json::to_writer(&mut out, &record).map_err(std::io::Error::from)
            });
            if let Err(e) = written {
                write_error = Some(e);
            }
        };
        match parse_file(file, &mut emit) {
            Ok(parsed) => {
                merged.diagnostics.extend(parsed.diagnostics);
                merged.session.extend(parsed.session);
            }
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    if let Some(error) = write_error {
        return Err(error.into());
    }
    if json {
        write!(
            out,
            "\n],\"diagnostics\":{},\"session\":{},\"errors\":{}}}\n",
            serde_json::to_string(&merged.diagnostics)?,
            serde_json::to_string(&merged.session)?,
            serde_json::to_string(&errors)?
        )?;
    } else {
        print_table(&mut out, rows, metrics)?;
    }
    out.flush()?;
    for error in &errors {
        eprintln!("error: {error}");
    }
    report_diagnostics(&merged, json);
    // A file the parser could not read is like an unreadable one; the others were printed.
    Ok(exit_code(&merged, !errors.is_empty()))
}

/// One report: VTune's own file (`vtune_hotspots.tsv`) was asked for tabs; another is told by
/// its header.
fn parse_file(file: &Path, emit: &mut dyn FnMut(KernelRecord)) -> anyhow::Result<ParsedOutput> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let asked = (name == REPORT_FILE).then_some(Delimiter::Tab);
    let reader = input::open_regular_file(file)?;
    Ok(parse_stream(reader, asked, &name, emit)?)
}
