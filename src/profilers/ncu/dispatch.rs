//! Table dispatch: each CSV row goes to the page table it belongs to (raw, details, session),
//! headers switch the table, rows the fast tokenizer refused go through the csv crate, and
//! routine `==PROF==` lines leave session facts.

use std::collections::HashSet;

use super::context::{Context, ParseOptions};
use super::details::{self, DetailsTable};
use super::raw::RawTable;
use super::row::{Row, Splitter};
use super::scan::{self, Level};
use super::session::SessionTable;
use crate::model::parsed::{Diagnostic, Severity};
use crate::model::record::KernelRecord;

/// The table the rows that follow belong to.
pub(super) enum Table {
    None,
    Raw(RawTable),
    Details(DetailsTable),
    Session(SessionTable),
}

/// Facts from routine `==PROF==` lines.
pub(super) fn note_message(message: &scan::Message, context: &mut Context) {
    if message.level != Level::Prof {
        return;
    }
    if let Some(rest) = message.text.strip_prefix("Connected to process ") {
        let (pid, exe) = rest.split_once(' ').unwrap_or((rest, ""));
        let exe = exe.trim().trim_start_matches('(').trim_end_matches(')');
        context.session_insert(format!("process.{pid}"), exe.to_string());
    } else if let Some(path) = message.text.strip_prefix("Report: ") {
        context.session_insert("report_path".to_string(), path.trim().to_string());
    }
}

/// Rows the fast tokenizer refused (escaped quotes, quoted newlines, unquoted fields).
pub(super) fn read_with_csv_crate(
    block: &[u8],
    table: &mut Table,
    options: &ParseOptions,
    requested: &HashSet<&str>,
    context: &mut Context,
    sink: &mut dyn FnMut(KernelRecord),
) {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(block);
    let mut record = csv::ByteRecord::new();
    let mut splitter = Splitter::default();
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(error) => {
                context.push_diagnostic(Diagnostic {
                    severity: Severity::Error,
                    kind: "csv_error".to_string(),
                    message: format!("unreadable CSV in ncu output: {error}"),
                    hint: None,
                    metric: None,
                });
                break;
            }
        }
        let row = splitter.from_record(&record);
        read_row(&row, table, options, requested, context, sink);
    }
}

pub(super) fn read_row(
    row: &Row,
    table: &mut Table,
    options: &ParseOptions,
    requested: &HashSet<&str>,
    context: &mut Context,
    sink: &mut dyn FnMut(KernelRecord),
) {
    if is_launch_header(row) {
        let header = strings(row);
        context.tables_seen += 1;
        if details::is_details_header(&header) {
            *table = Table::Details(DetailsTable::new(&header));
        } else {
            let raw = RawTable::new(&header, &options.keep, requested);
            context
                .metrics_seen
                .extend(raw.metric_names().map(str::to_string));
            *table = Table::Raw(raw);
        }
        return;
    }
    if is_session_header(row)
        && let Some(session) = SessionTable::from_header(&strings(row))
    {
        *table = Table::Session(session);
        return;
    }
    match table {
        Table::None => {}
        Table::Session(session) => session.apply(&strings(row), context),
        Table::Details(details) => details.apply(&row.to_byte_record(), context),
        Table::Raw(raw) => {
            if raw.is_units_row(row) {
                raw.read_units(row);
                return;
            }
            let record = raw.record(row, context);
            context.kernels += 1;
            sink(record);
        }
    }
}

/// Cheap pre-check on the first cell before building strings for [`SessionTable::from_header`].
fn is_session_header(row: &Row) -> bool {
    matches!(
        row.get(0),
        Some(b"Launch Attribute" | b"Session Attribute" | b"Process Id" | b"Device Attribute")
    )
}

fn is_launch_header(row: &Row) -> bool {
    row.get(0) == Some(b"ID") && row.get(1) == Some(b"Process ID")
}

fn strings(row: &Row) -> Vec<String> {
    row.iter()
        .map(|f| String::from_utf8_lossy(f).trim().to_string())
        .collect()
}
