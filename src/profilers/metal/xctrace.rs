//! Reader for `xctrace export` XML (Instruments' Metal System Trace), and the GPU-interval
//! summary built from it.
//!
//! The export interns values: the first use of a value carries `id="N"`, later uses are
//! `<tag ref="N"/>`, across rows, tables and nesting; `<sentinel/>` is an empty cell. Columns are
//! found by their schema mnemonic, not by position. The reader streams (quick-xml) and keeps only
//! the rows of the tables asked for, because real exports reach many gigabytes.
//! [`parse_export`] is pure: bytes in, intervals out; the pipeline reads the files, and
//! [`super::records`] turns the intervals into kernel records.

use std::collections::HashMap;
use std::io::BufRead;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use serde::Serialize;

use crate::model::error::{Error, Result};

/// The table of GPU intervals (one row per encoder run on the GPU).
pub const GPU_INTERVALS: &str = "metal-gpu-intervals";

/// One cell value with its nested values (a `process` holds a `pid`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Value {
    pub tag: String,
    pub text: String,
    pub fmt: Option<String>,
    pub children: Vec<Value>,
}

impl Value {
    /// The first descendant (or self) with `tag`.
    pub fn find(&self, tag: &str) -> Option<&Value> {
        if self.tag == tag {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(tag))
    }

    /// Text, or the display string when the element has no text.
    pub fn display(&self) -> &str {
        let t = self.text.trim();
        if t.is_empty() {
            self.fmt.as_deref().unwrap_or("")
        } else {
            t
        }
    }
}

/// A cell: a value or `<sentinel/>`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Cell {
    Empty,
    Value(Value),
}

impl Cell {
    pub fn value(&self) -> Option<&Value> {
        match self {
            Cell::Value(v) => Some(v),
            Cell::Empty => None,
        }
    }
}

/// A schema column.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Column {
    pub mnemonic: String,
    pub name: String,
    pub engineering_type: String,
}

/// One exported table.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Table {
    pub schema: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn column(&self, mnemonic: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.mnemonic == mnemonic)
    }
}

/// Tables read from an export, plus what was odd about it.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Tables {
    pub tables: Vec<Table>,
    pub warnings: Vec<String>,
}

fn parse_error(message: impl Into<String>) -> Error {
    Error::Parse {
        context: "xctrace export".to_string(),
        message: message.into(),
    }
}

struct Open {
    value: Value,
    id: Option<String>,
    reference: Option<String>,
}

#[derive(PartialEq)]
enum Col {
    None,
    Mnemonic,
    Name,
    Type,
}

/// Reads the tables whose schema `keep` accepts. Malformed XML is an error; an export that
/// ends early keeps the rows read so far and says so in `warnings`.
pub fn read_tables<R: BufRead>(input: R, keep: impl Fn(&str) -> bool) -> Result<Tables> {
    let mut reader = Reader::from_reader(input);
    let mut out = Tables::default();
    let mut interned: HashMap<String, Value> = HashMap::new();
    let mut buf = Vec::new();
    let mut table: Option<Table> = None;
    let mut keep_table = false;
    let mut in_schema = false;
    let mut col_field = Col::None;
    let mut row: Option<Vec<Cell>> = None;
    let mut open: Vec<Open> = Vec::new();
    let mut unresolved = 0usize;

    loop {
        let event = match reader.read_event_into(&mut buf) {
            Ok(event) => event,
            // Syntax errors are all "input ended inside a construct": a cut-off export.
            Err(quick_xml::Error::Syntax(e)) => {
                out.warnings.push(format!(
                    "the export is cut off near byte {} ({e}); the rows before it are kept",
                    reader.buffer_position()
                ));
                row = None;
                break;
            }
            Err(e) => {
                return Err(parse_error(format!(
                    "{e} near byte {}",
                    reader.buffer_position()
                )));
            }
        };
        match event {
            Event::Eof => break,
            Event::Start(ref e) | Event::Empty(ref e) => {
                let is_empty = matches!(event, Event::Empty(_));
                let tag = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if row.is_some() {
                    open.push(open_value(&reader, e, tag)?);
                    if is_empty {
                        close_value(&mut open, &mut row, &mut interned, &mut unresolved);
                    }
                    buf.clear();
                    continue;
                }
                match tag.as_str() {
                    "node" if !is_empty => {
                        finish_table(&mut out, table.take(), keep_table);
                        table = Some(Table::default());
                        keep_table = false;
                    }
                    "schema" => {
                        let name = attr(&reader, e, b"name")?.unwrap_or_default();
                        keep_table = keep(&name);
                        if let Some(t) = table.as_mut() {
                            t.schema = name;
                        }
                        in_schema = !is_empty;
                    }
                    "col" if in_schema => {
                        if let Some(t) = table.as_mut() {
                            t.columns.push(Column::default());
                        }
                    }
                    "mnemonic" if in_schema => col_field = Col::Mnemonic,
                    "name" if in_schema => col_field = Col::Name,
                    "engineering-type" if in_schema => col_field = Col::Type,
                    "row" if table.is_some() => {
                        row = Some(Vec::new());
                        if is_empty {
                            finish_row(&mut table, &mut row, keep_table);
                        }
                    }
                    _ => {}
                }
                if is_empty {
                    col_field = Col::None;
                }
            }
            Event::Text(ref t) => {
                let text = t.decode().map_err(|e| parse_error(e.to_string()))?;
                push_text(&text, &mut open, &mut table, &col_field);
            }
            Event::CData(ref t) => {
                let text = t.decode().map_err(|e| parse_error(e.to_string()))?;
                push_text(&text, &mut open, &mut table, &col_field);
            }
            Event::GeneralRef(ref r) => {
                let resolved = match r
                    .resolve_char_ref()
                    .map_err(|e| parse_error(e.to_string()))?
                {
                    Some(c) => c.to_string(),
                    None => {
                        let name = r.decode().map_err(|e| parse_error(e.to_string()))?;
                        match name.as_ref() {
                            "amp" => "&",
                            "lt" => "<",
                            "gt" => ">",
                            "quot" => "\"",
                            "apos" => "'",
                            _ => "",
                        }
                        .to_string()
                    }
                };
                push_text(&resolved, &mut open, &mut table, &col_field);
            }
            Event::End(ref e) => {
                if row.is_some() {
                    if open.is_empty() {
                        // `</row>`
                        finish_row(&mut table, &mut row, keep_table);
                    } else {
                        close_value(&mut open, &mut row, &mut interned, &mut unresolved);
                    }
                } else {
                    match e.name().as_ref() {
                        b"schema" => in_schema = false,
                        b"mnemonic" | b"name" | b"engineering-type" => col_field = Col::None,
                        b"node" => {
                            finish_table(&mut out, table.take(), keep_table);
                            keep_table = false;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        buf.clear();
    }
    if row.is_some() {
        out.warnings.push(
            "the export ends inside a row (truncated?); the rows before it are kept".to_string(),
        );
    }
    finish_table(&mut out, table.take(), keep_table);
    if unresolved > 0 {
        out.warnings.push(format!(
            "{unresolved} cell(s) refer to a value id never defined earlier; they are read as empty"
        ));
    }
    Ok(out)
}

fn push_text(text: &str, open: &mut [Open], table: &mut Option<Table>, col_field: &Col) {
    if let Some(top) = open.last_mut() {
        top.value.text.push_str(text);
        return;
    }
    if let Some(col) = table.as_mut().and_then(|t| t.columns.last_mut()) {
        match col_field {
            Col::Mnemonic => col.mnemonic.push_str(text.trim()),
            Col::Name => col.name.push_str(text.trim()),
            Col::Type => col.engineering_type.push_str(text.trim()),
            Col::None => {}
        }
    }
}

fn attr<R>(reader: &Reader<R>, e: &BytesStart, key: &[u8]) -> Result<Option<String>> {
    for a in e.attributes() {
        let a = a.map_err(|err| parse_error(format!("bad attribute: {err}")))?;
        if a.key.as_ref() == key {
            let v = a
                .decode_and_unescape_value(reader.decoder())
                .map_err(|err| parse_error(format!("bad attribute value: {err}")))?;
            return Ok(Some(v.into_owned()));
        }
    }
    Ok(None)
}

fn open_value<R>(reader: &Reader<R>, e: &BytesStart, tag: String) -> Result<Open> {
    Ok(Open {
        value: Value {
            tag,
            fmt: attr(reader, e, b"fmt")?,
            ..Value::default()
        },
        id: attr(reader, e, b"id")?,
        reference: attr(reader, e, b"ref")?,
    })
}

fn close_value(
    open: &mut Vec<Open>,
    row: &mut Option<Vec<Cell>>,
    interned: &mut HashMap<String, Value>,
    unresolved: &mut usize,
) {
    let Some(done) = open.pop() else { return };
    let cell = if let Some(r) = &done.reference {
        match interned.get(r) {
            Some(v) => Cell::Value(v.clone()),
            None => {
                *unresolved += 1;
                Cell::Empty
            }
        }
    } else if done.value.tag == "sentinel" {
        Cell::Empty
    } else {
        if let Some(id) = done.id {
            interned.insert(id, done.value.clone());
        }
        Cell::Value(done.value)
    };
    match open.last_mut() {
        Some(parent) => {
            if let Cell::Value(v) = cell {
                parent.value.children.push(v);
            }
        }
        None => {
            if let Some(r) = row.as_mut() {
                r.push(cell);
            }
        }
    }
}

fn finish_row(table: &mut Option<Table>, row: &mut Option<Vec<Cell>>, keep: bool) {
    if let (Some(t), Some(r)) = (table.as_mut(), row.take())
        && keep
    {
        t.rows.push(r);
    }
}

fn finish_table(out: &mut Tables, table: Option<Table>, keep: bool) {
    if let Some(t) = table
        && keep
    {
        out.tables.push(t);
    }
}

/// One encoder run on the GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuInterval {
    pub start_ns: u64,
    pub duration_ns: u64,
    pub channel: Option<String>,
    pub label: Option<String>,
    pub pid: Option<u32>,
    pub process: Option<String>,
    pub cmdbuffer_id: Option<String>,
    pub encoder_id: Option<String>,
    /// The GPU's name (`gpu` column: `Apple M1`).
    pub gpu: Option<String>,
}

impl GpuInterval {
    pub fn end_ns(&self) -> u64 {
        self.start_ns.saturating_add(self.duration_ns)
    }
}

/// Intervals grouped by one key (label or command buffer).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSummary {
    pub key: String,
    pub count: usize,
    /// Sum of durations (overlaps counted twice).
    pub total_ns: u64,
    /// Union of the group's intervals.
    pub busy_ns: u64,
}

/// The normalized GPU view of one export.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuTrace {
    /// The pid kept (`None`: every process).
    pub pid: Option<u32>,
    pub intervals: Vec<GpuInterval>,
    /// Union of all kept intervals: GPU busy time. Never the sum: intervals overlap.
    pub busy_ns: u64,
    /// From the first start to the last end.
    pub span_ns: u64,
    pub by_label: Vec<GroupSummary>,
    pub by_command_buffer: Vec<GroupSummary>,
    pub warnings: Vec<String>,
}

/// Length of the union of `[start, end)` intervals.
pub fn union_ns(intervals: impl IntoIterator<Item = (u64, u64)>) -> u64 {
    let mut v: Vec<(u64, u64)> = intervals.into_iter().filter(|(s, e)| e > s).collect();
    v.sort_unstable();
    let mut total = 0u64;
    let mut current: Option<(u64, u64)> = None;
    for (s, e) in v {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((cs, ce)) = current {
        total += ce - cs;
    }
    total
}

/// The pid of the launched process from `xctrace export --toc` output
/// (`<process type="launched" … pid="N">`; the first process with a pid otherwise).
pub fn launched_pid(toc_xml: &[u8]) -> Result<Option<u32>> {
    let mut reader = Reader::from_reader(toc_xml);
    let mut buf = Vec::new();
    let mut first: Option<u32> = None;
    loop {
        match reader
            .read_event_into(&mut buf)
            .map_err(|e| parse_error(format!("table of contents: {e}")))?
        {
            Event::Eof => return Ok(first),
            Event::Start(ref e) | Event::Empty(ref e) if e.name().as_ref() == b"process" => {
                let pid = attr(&reader, e, b"pid")?.and_then(|p| p.trim().parse::<u32>().ok());
                let launched = attr(&reader, e, b"type")?.as_deref() == Some("launched");
                if let Some(pid) = pid {
                    if launched {
                        return Ok(Some(pid));
                    }
                    first.get_or_insert(pid);
                }
            }
            _ => {}
        }
        buf.clear();
    }
}

fn pid_of(v: &Value) -> Option<u32> {
    if let Some(p) = v.find("pid") {
        return p.display().parse().ok();
    }
    // "name (42)"
    let f = v.fmt.as_deref()?;
    let inner = f.rsplit_once('(')?.1.strip_suffix(')')?;
    inner.trim().parse().ok()
}

/// Turns a `metal-gpu-intervals` export into the GPU view of process `pid` (all when `None`).
///
/// An export without GPU interval rows for the target is a failed capture, not "0 ms": it is
/// reported as [`Error::NoData`] saying so.
pub fn parse_export(tables_xml: &[u8], pid: Option<u32>) -> Result<GpuTrace> {
    let tables = read_tables(tables_xml, |s| s == GPU_INTERVALS)?;
    let mut warnings = tables.warnings;
    let Some(table) = tables.tables.into_iter().next() else {
        return Err(empty_capture(format!(
            "the export has no `{GPU_INTERVALS}` table; export it with --xpath (see profilers/metal/mod.rs)"
        )));
    };
    let col = |m: &str| table.column(m);
    let (Some(start), Some(duration)) = (col("start"), col("duration")) else {
        return Err(parse_error(format!(
            "`{GPU_INTERVALS}` has no start/duration columns (columns: {})",
            table
                .columns
                .iter()
                .map(|c| c.mnemonic.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let (channel, label, process, cmdbuffer, encoder, gpu) = (
        col("channel-name"),
        col("event-label"),
        col("process"),
        col("cmdbuffer-id"),
        col("encoder-id"),
        col("gpu"),
    );
    let cell = |row: &[Cell], i: Option<usize>| -> Option<Value> {
        i.and_then(|i| row.get(i)).and_then(Cell::value).cloned()
    };
    let text = |v: Option<Value>| v.map(|v| v.display().to_string()).filter(|s| !s.is_empty());
    let mut all = Vec::new();
    let mut skipped = 0usize;
    for row in &table.rows {
        // Whole ns no larger than any real measurement (`model::number::LARGEST`).
        let num = |i| {
            cell(row, Some(i))
                .and_then(|v| v.display().parse::<u64>().ok())
                .filter(|v| *v as f64 <= crate::model::number::LARGEST)
        };
        let (Some(s), Some(d)) = (num(start), num(duration)) else {
            skipped += 1;
            continue;
        };
        let proc_value = cell(row, process);
        all.push(GpuInterval {
            start_ns: s,
            duration_ns: d,
            channel: text(cell(row, channel)),
            label: text(cell(row, label)),
            pid: proc_value.as_ref().and_then(pid_of),
            process: proc_value.and_then(|v| v.fmt.clone()),
            cmdbuffer_id: text(cell(row, cmdbuffer)),
            encoder_id: text(cell(row, encoder)),
            gpu: text(cell(row, gpu)),
        });
    }
    if skipped > 0 {
        warnings.push(format!(
            "{skipped} row(s) without a start or duration in whole ns (at most 1e18) were skipped"
        ));
    }
    if all.is_empty() {
        return Err(empty_capture(format!(
            "`{GPU_INTERVALS}` has no rows: the capture recorded no GPU work (`--launch` \
             captures can come back empty; rerun, or record with --attach)"
        )));
    }
    let intervals: Vec<GpuInterval> = all
        .iter()
        .filter(|i| pid.is_none() || i.pid == pid)
        .cloned()
        .collect();
    if intervals.is_empty() {
        let mut seen: Vec<u32> = all.iter().filter_map(|i| i.pid).collect();
        seen.sort_unstable();
        seen.dedup();
        return Err(empty_capture(format!(
            "no GPU intervals for pid {} (the capture has some for pids {seen:?}): the target's \
             GPU work was not recorded",
            pid.map_or("?".to_string(), |p| p.to_string())
        )));
    }
    let busy_ns = union_ns(intervals.iter().map(|i| (i.start_ns, i.end_ns())));
    let first = intervals.iter().map(|i| i.start_ns).min().unwrap_or(0);
    let last = intervals.iter().map(GpuInterval::end_ns).max().unwrap_or(0);
    Ok(GpuTrace {
        pid,
        by_label: group(&intervals, |i| {
            i.label.clone().unwrap_or_else(|| "(no label)".into())
        }),
        by_command_buffer: group(&intervals, |i| {
            i.cmdbuffer_id.clone().unwrap_or_else(|| "(no id)".into())
        }),
        busy_ns,
        span_ns: last - first,
        intervals,
        warnings,
    })
}

fn empty_capture(reason: String) -> Error {
    Error::NoData {
        profiler: "metal (xctrace)".to_string(),
        reason,
    }
}

fn group(intervals: &[GpuInterval], key: impl Fn(&GpuInterval) -> String) -> Vec<GroupSummary> {
    let mut order: Vec<String> = Vec::new();
    let mut members: HashMap<String, Vec<&GpuInterval>> = HashMap::new();
    for i in intervals {
        let k = key(i);
        if !members.contains_key(&k) {
            order.push(k.clone());
        }
        members.entry(k).or_default().push(i);
    }
    order
        .into_iter()
        .map(|k| {
            let m = &members[&k];
            GroupSummary {
                count: m.len(),
                total_ns: m.iter().map(|i| i.duration_ns).sum(),
                busy_ns: union_ns(m.iter().map(|i| (i.start_ns, i.end_ns()))),
                key: k,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_merges_overlaps_and_gaps() {
        assert_eq!(union_ns([(0, 10), (5, 15), (20, 30)]), 25);
        assert_eq!(union_ns([(0, 10), (2, 3)]), 10);
        assert_eq!(union_ns([(5, 5)]), 0);
        assert_eq!(union_ns(Vec::new()), 0);
    }

    #[test]
    fn refs_resolve_across_rows_and_nesting() {
        let xml = br#"<trace-query-result><node><schema name="t"><col><mnemonic>a</mnemonic></col><col><mnemonic>b</mnemonic></col></schema>
<row><formatted-label id="1" fmt="x"><process id="2" fmt="p (7)"><pid id="3">7</pid></process></formatted-label><sentinel/></row>
<row><process ref="2"/><x ref="99"/></row></node></trace-query-result>"#;
        let t = read_tables(&xml[..], |_| true).unwrap();
        let table = &t.tables[0];
        assert_eq!(table.column("b"), Some(1));
        assert_eq!(table.rows[0][1], Cell::Empty);
        let p = table.rows[1][0].value().unwrap();
        assert_eq!(pid_of(p), Some(7));
        assert_eq!(table.rows[1][1], Cell::Empty);
        assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    }

    #[test]
    fn truncated_export_keeps_rows_and_malformed_is_an_error() {
        let xml = br#"<trace-query-result><node><schema name="t"><col><mnemonic>a</mnemonic></col></schema><row><a id="1">5</a></row><row><a ref="1"/>"#;
        let t = read_tables(&xml[..], |_| true).unwrap();
        assert_eq!(t.tables[0].rows.len(), 1);
        assert!(t.warnings[0].contains("truncated"));
        assert!(read_tables(&b"<a><b></a>"[..], |_| true).is_err());
    }

    #[test]
    fn toc_pid() {
        let toc = br#"<trace-toc><run number="1"><info><target><device name="Mac"/><process type="launched" name="bench" pid="4242" return-exit-status="0"/></target></info></run></trace-toc>"#;
        assert_eq!(launched_pid(toc).unwrap(), Some(4242));
        assert_eq!(launched_pid(b"<trace-toc/>").unwrap(), None);
    }
}
