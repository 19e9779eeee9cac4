//! `polyprof parse --profiler vtune FILE…` without a run document: each report is read row by
//! row and each record written as soon as it is made (JSON), or the files are read twice, once
//! for the table's column widths and once to print its rows, so memory stays a small multiple
//! of one row however large the report (a 100 MB CSV held whole took 11 GB).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use polyprof::model::ParsedOutput;
use polyprof::model::input;
use polyprof::model::record::KernelRecord;
use polyprof::profilers::vtune::REPORT_FILE;
use polyprof::profilers::vtune::report::{Delimiter, parse_stream};

use super::parse_output::{
    StreamedTable, exit_code, print_left_out, report_diagnostics, table_row,
};

/// Parse `files` as VTune reports; `json` and `metrics` as `polyprof parse` takes them.
pub fn execute(files: &[PathBuf], json: bool, metrics: &[String]) -> anyhow::Result<u8> {
    for file in files {
        input::require_regular_file(file)
            .with_context(|| format!("cannot read `{}`", file.display()))?;
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut write_error: Option<std::io::Error> = None;
    let mut keep = |result: std::io::Result<()>| {
        if let Err(e) = result {
            write_error.get_or_insert(e);
        }
    };
    let (merged, errors) = if json {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        write!(
            out,
            "{{\"profiler\":\"vtune\",\"files\":{},\"kernels\":[",
            serde_json::to_string(&names)?
        )?;
        let mut first = true;
        let parsed = parse_all(files, &mut |record| {
            let separator = if first { "\n" } else { ",\n" };
            first = false;
            keep(out.write_all(separator.as_bytes()).and_then(|_| {
                serde_json::to_writer(&mut out, &record).map_err(std::io::Error::from)
            }));
        });
        let (merged, errors) = &parsed;
        write!(
            out,
            "\n],\"diagnostics\":{},\"session\":{},\"errors\":{}}}\n",
            serde_json::to_string(&merged.diagnostics)?,
            serde_json::to_string(&merged.session)?,
            serde_json::to_string(errors)?
        )?;
        parsed
    } else {
        let mut table = StreamedTable::new(metrics);
        let parsed = parse_all(files, &mut |record| {
            table.widen(&table_row(&record, metrics))
        });
        let width = super::width::table_width_for(false);
        let left_out = table.fit(width);
        table.start(&mut out)?;
        // The second reading only prints: what it finds was found by the first.
        parse_all(files, &mut |record| {
            keep(table.row(&mut out, &table_row(&record, metrics)))
        });
        table.end(&mut out)?;
        if let Some(width) = width {
            print_left_out(&mut out, width, &left_out)?;
        }
        parsed
    };
    if let Some(error) = write_error {
        return Err(error.into());
    }
    out.flush()?;
    for error in &errors {
        super::parse_output::print_error(error);
    }
    report_diagnostics(&merged, json);
    // A file the parser could not read is like an unreadable one; the others were printed.
    Ok(exit_code(&merged, !errors.is_empty()))
}

/// Every file's records to `emit`, launch ids unique across the files (as the backend numbers
/// them); the diagnostics and session of all, and the files that could not be read.
fn parse_all(files: &[PathBuf], emit: &mut dyn FnMut(KernelRecord)) -> (ParsedOutput, Vec<String>) {
    let mut merged = ParsedOutput::default();
    let mut errors = Vec::new();
    let mut count = 0u64;
    for file in files {
        let first = count;
        let mut numbered = |mut record: KernelRecord| {
            record.launch_id += first;
            count += 1;
            emit(record);
        };
        match parse_file(file, &mut numbered) {
            Ok(parsed) => {
                merged.diagnostics.extend(parsed.diagnostics);
                merged.session.extend(parsed.session);
            }
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    (merged, errors)
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
