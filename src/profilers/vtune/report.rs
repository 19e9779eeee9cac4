//! VTune `-report hotspots -format csv` exports: GPU computing tasks (`-group-by
//! computing-task`) and CPU functions (the default grouping). VTune prints warning lines before
//! the table; the header is the first other line and tells the delimiter (tab, which polyprof
//! asks for, or comma). Columns are read by name, hierarchical names joined by `:`
//! (`XVE Array:Active`), with or without a unit suffix (`Memory Bound(%)`); missing columns
//! leave fields empty and extra ones are kept as metrics.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};

use crate::model::error::{Error, Result};
use crate::model::input::{LineBound, MAX_LINE_BYTES};
use crate::model::number::{self, BadNumbers};
use crate::model::parsed::{Diagnostic, ParsedOutput, Severity};
use crate::model::record::{KernelRecord, Metric, MetricName, MetricValue, short_kernel_name};

/// The delimiter of a VTune CSV export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delimiter {
    Tab,
    Comma,
}

impl Delimiter {
    fn byte(self) -> u8 {
        match self {
            Delimiter::Tab => b'\t',
            Delimiter::Comma => b',',
        }
    }
}

/// The table of one report, cells as printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub delimiter: Option<Delimiter>,
    /// The warning lines VTune printed before the table.
    pub preamble: Vec<String>,
    pub diagnostics: Vec<Diagnostic>,
    /// Column positions by lower-case name, exact names before bare ones; built on first use
    /// (every row looks columns up by name).
    index: std::cell::OnceCell<HashMap<String, usize>>,
}

impl Report {
    /// The first column names the grouping: `Computing Task`, `Function`, `Package`, ….
    pub fn grouping(&self) -> &str {
        self.columns.first().map(String::as_str).unwrap_or("")
    }

    /// Index of a column by name, ignoring case and a trailing unit such as `(%)` or `(s)`.
    pub fn column(&self, name: &str) -> Option<usize> {
        let index = self.index.get_or_init(|| {
            let mut index = HashMap::new();
            for (i, column) in self.columns.iter().enumerate() {
                index.entry(column.trim().to_ascii_lowercase()).or_insert(i);
            }
            for (i, column) in self.columns.iter().enumerate() {
                index.entry(bare(column).to_ascii_lowercase()).or_insert(i);
            }
            index
        });
        index.get(&name.trim().to_ascii_lowercase()).copied()
    }
}

/// `XVE Array:Active(%)` → `XVE Array:Active`.
fn bare(column: &str) -> String {
    let column = column.trim();
    match column
        .strip_suffix(')')
        .and_then(|c| c.rfind('(').map(|at| &c[..at]))
    {
        Some(head) if !head.trim().is_empty() => head.trim_end().to_string(),
        _ => column.to_string(),
    }
}

fn is_preamble(line: &str) -> bool {
    let lower = line.trim_start().to_ascii_lowercase();
    lower.is_empty()
        || lower.starts_with("vtune:")
        || lower.starts_with("war:")
        || lower.starts_with("warning")
}

/// Read the table of a VTune CSV report. `asked` is the `-csv-delimiter` polyprof passed; the
/// header decides when it disagrees (a report made without the flag, or by hand).
pub fn parse_report(text: &str, asked: Option<Delimiter>, context: &str) -> Result<Report> {
    let mut rows = Vec::new();
    let mut report = read_rows(text.as_bytes(), asked, context, &mut |_, _, row| {
        rows.push(row.to_vec())
    })?;
    report.rows = rows;
    Ok(report)
}

/// How many of VTune's message lines before the table are kept.
const PREAMBLE_KEPT: usize = 100;

/// Read a report from `input` row by row: the header after VTune's messages, then each
/// non-empty row handed to `row` with the report so far and the row's line, nothing kept
/// (`Report::rows` stays empty). Lines are bounded ([`MAX_LINE_BYTES`]).
pub fn read_rows(
    input: impl Read,
    asked: Option<Delimiter>,
    context: &str,
    row: &mut dyn FnMut(&Report, u64, &[String]),
) -> Result<Report> {
    let io_error = |e: std::io::Error| Error::Parse {
        context: context.to_string(),
        message: e.to_string(),
    };
    let mut input = BufReader::new(LineBound::new(input, MAX_LINE_BYTES));
    let mut report = Report::default();
    let mut line = Vec::new();
    let mut header_line = 0u64;
    let header = loop {
        line.clear();
        if input.read_until(b'\n', &mut line).map_err(io_error)? == 0 {
            return Err(Error::Parse {
                context: context.to_string(),
                message: "no table header after VTune's messages; the report is empty (did the \
                          collection record any data? `vtune -report summary` says)"
                    .into(),
            });
        }
        header_line += 1;
        let text = String::from_utf8_lossy(&line);
        let content = text.trim_end_matches(['\n', '\r']);
        if is_preamble(content) || !(content.contains('\t') || content.contains(',')) {
            if !content.trim().is_empty() && report.preamble.len() < PREAMBLE_KEPT {
                report.preamble.push(content.to_string());
            }
            continue;
        }
        break content.to_string();
    };
    let found = if header.contains('\t') {
        Delimiter::Tab
    } else {
        Delimiter::Comma
    };
    if let Some(asked) = asked
        && asked != found
    {
        report.diagnostics.push(Diagnostic {
            severity: Severity::Info,
            metric: None,
            kind: "vtune_delimiter".into(),
            message: format!("{context}: asked for {asked:?}-separated values, the header is {found:?}-separated; read as {found:?}"),
            hint: None,
        });
    }
    report.delimiter = Some(found);
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(found.byte())
        .has_headers(false)
        .flexible(true)
        .from_reader(std::io::Cursor::new(line).chain(input));
    let mut record = csv::ByteRecord::new();
    match reader.read_byte_record(&mut record) {
        Ok(true) => {
            report.columns = cells(&record);
            // Every hotspots report has CPU time (functions, packages, …) or GPU task columns.
            let vtune = report.columns.iter().any(|c| {
                let c = bare(c);
                c.starts_with("CPU Time") || c.starts_with("Computing Task") || c.starts_with("GPU")
            });
            if !vtune {
                return Err(Error::Parse {
                    context: context.to_string(),
                    message: format!(
                        "the header (`{}`) has no `CPU Time`, `Computing Task` or `GPU` column; \
                         this is not a VTune hotspots report",
                        clip(&header)
                    ),
                });
            }
        }
        _ => {
            return Err(Error::Parse {
                context: context.to_string(),
                message: "unreadable header line".into(),
            });
        }
    }
    let mut n = 0u64;
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {
                n += 1;
                let cells = cells(&record);
                if cells.iter().all(String::is_empty) {
                    continue;
                }
                let line = record.position().map_or(0, |p| p.line()) + header_line - 1;
                row(&report, line, &cells);
            }
            // A line past the bound: nothing after it can be trusted to be the report.
            Err(e) if matches!(e.kind(), csv::ErrorKind::Io(_)) => {
                return Err(Error::Parse {
                    context: context.to_string(),
                    message: e.to_string(),
                });
            }
            Err(e) => {
                n += 1;
                report.diagnostics.push(Diagnostic {
                    severity: Severity::Warning,
                    metric: None,
                    kind: "vtune_bad_row".into(),
                    message: format!("{context}: row {n}: {e}"),
                    hint: None,
                })
            }
        }
    }
    Ok(report)
}

fn clip(text: &str) -> String {
    if text.chars().count() <= 80 {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(80).collect::<String>())
    }
}

/// A row's cells, trimmed, invalid UTF-8 replaced.
fn cells(record: &csv::ByteRecord) -> Vec<String> {
    record
        .iter()
        .map(|c| String::from_utf8_lossy(c).trim().to_string())
        .collect()
}

/// A saved report (bytes as VTune wrote them) as records and diagnostics.
pub fn parse_output(bytes: &[u8], asked: Option<Delimiter>, context: &str) -> Result<ParsedOutput> {
    let mut kernels = Vec::new();
    let mut out = parse_stream(bytes, asked, context, &mut |k| kernels.push(k))?;
    out.kernels = kernels;
    Ok(out)
}

/// A report read from `input` row by row, each record handed to `emit` as soon as it is
/// complete (a function row at once; a computing task, whose SIMD variants are merged, at the
/// end), so memory stays bounded by the distinct task names, not the report's size. The
/// output holds the diagnostics and session, no records.
pub fn parse_stream(
    input: impl Read,
    asked: Option<Delimiter>,
    context: &str,
    emit: &mut dyn FnMut(KernelRecord),
) -> Result<ParsedOutput> {
    let mut builder: Option<Builder> = None;
    let mut count = 0usize;
    let mut counting = |record: KernelRecord| {
        count += 1;
        emit(record)
    };
    let report = read_rows(input, asked, context, &mut |report, line, row| {
        builder
            .get_or_insert_with(|| Builder::new(report, "vtune", context))
            .row(report, line, row, &mut counting);
    })?;
    let mut out = ParsedOutput {
        diagnostics: report.diagnostics.clone(),
        ..Default::default()
    };
    if let Some(builder) = builder {
        out.diagnostics
            .extend(builder.finish(&report, &mut counting));
    }
    out.session
        .insert("grouping".into(), report.grouping().to_string());
    if count == 0 {
        out.diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            metric: None,
            kind: "no_kernels".into(),
            message: format!("{context}: the report has a header but no task or function rows"),
            hint: Some(
                "the collection may have stayed paused: the harness resumes it with `vtune \
                 -command resume -r <result dir>` (or ITT `__itt_resume`)"
                    .into(),
            ),
        });
    }
    Ok(out)
}

/// Pseudo-rows that are no kernel or function.
fn is_pseudo_row(name: &str) -> bool {
    name.is_empty()
        || name.starts_with("[Outside any")
        || name.starts_with("vtune:")
        || name.starts_with("war:")
}

/// Normalized names of the GPU columns (the shared record has no typed field for most).
const GPU_FIELDS: &[(&str, &str, &str)] = &[
    ("XVE Array:Active", "xve_active_pct", "%"),
    ("XVE Array:Stalled", "xve_stalled_pct", "%"),
    ("XVE Array:Idle", "xve_idle_pct", "%"),
    ("Computing Task:SIMD Width", "simd_width", ""),
    ("Computing Task:Average Time", "gpu_time_avg", "ns"),
];

/// Records from a whole report (its rows kept): one per computing task (duplicates merged)
/// for a GPU report, one per row with its CPU time otherwise.
pub fn report_records(report: &Report, profiler: &str) -> Vec<KernelRecord> {
    let mut records = Vec::new();
    let mut builder = Builder::new(report, profiler, "report");
    for row in &report.rows {
        builder.row(report, 0, row, &mut |r| records.push(r));
    }
    builder.finish(report, &mut |r| records.push(r));
    records
}

fn cell<'a>(report: &Report, row: &'a [String], column: &str) -> Option<&'a str> {
    let value = row.get(report.column(column)?)?.as_str();
    (!value.is_empty()).then_some(value)
}

/// A cell as a number a normalized field may hold; bad ones were noted when the row was read.
fn number_in(report: &Report, row: &[String], column: &str) -> Option<f64> {
    number::parse_measure(cell(report, row, column)?.trim_end_matches('%'))
        .ok()
        .flatten()
}

/// Columns that fill normalized fields: their cells must be numbers a field may hold.
const CHECKED: &[&str] = &[
    TOTAL_TIME,
    INSTANCE_COUNT,
    "XVE Array:Active",
    "XVE Array:Stalled",
    "XVE Array:Idle",
    "Computing Task:SIMD Width",
    "Computing Task:Average Time",
    OCCUPANCY,
    "CPU Time",
];
const TOTAL_TIME: &str = "Computing Task:Total Time";
const INSTANCE_COUNT: &str = "Computing Task:Instance Count";
const OCCUPANCY: &str = "XVE Threads Occupancy";

/// Seconds (VTune's time unit in CSV) to whole ns.
fn seconds_to_ns(seconds: f64) -> f64 {
    (seconds * 1e9).round()
}

fn unit_of(column: &str) -> Cow<'static, str> {
    let column = column.trim();
    if column.ends_with("(%)") {
        Cow::Borrowed("%")
    } else if column.ends_with("(s)") {
        Cow::Borrowed("s")
    } else if let Some(open) = column
        .strip_suffix(')')
        .and_then(|c| c.rfind('(').map(|at| &c[at + 1..]))
    {
        Cow::Owned(open.to_string())
    } else {
        Cow::Borrowed("")
    }
}

/// Every cell under VTune's own column name (finite numbers as numbers, the rest as text).
fn all_cells(
    report: &Report,
    names: &[MetricName],
    row: &[String],
    skip: usize,
    record: &mut KernelRecord,
) {
    for (i, value) in row.iter().enumerate() {
        if i == skip || value.is_empty() || i >= names.len() {
            continue;
        }
        let metric = match value.parse::<f64>() {
            Ok(n) if n.is_finite() => Metric {
                value: MetricValue::Number(n),
                unit: unit_of(&report.columns[i]),
            },
            _ => Metric {
                value: MetricValue::Text(value.clone()),
                unit: Cow::Borrowed(""),
            },
        };
        record.metrics.insert(names[i].clone(), metric);
    }
}

/// The rows of one computing task name so far: SIMD-width variants of a kernel, or its work
/// sizes.
struct Group {
    /// The longest-running variant (the last of equal ones): per-instance fields come from it.
    longest: Vec<String>,
    longest_total: f64,
    totals: Option<f64>,
    counts: Option<f64>,
    rows: usize,
}

/// Records made as rows come: a function row is a record at once; computing-task rows are
/// merged by name and become records, in first-seen order, at [`finish`](Builder::finish).
struct Builder {
    gpu: bool,
    profiler: String,
    names: Vec<MetricName>,
    bad: BadNumbers,
    next_id: u64,
    order: Vec<String>,
    groups: HashMap<String, Group>,
}

impl Builder {
    fn new(report: &Report, profiler: &str, context: &str) -> Self {
        Builder {
            gpu: bare(report.grouping()).eq_ignore_ascii_case("Computing Task"),
            profiler: profiler.to_string(),
            names: report.columns.iter().map(|c| MetricName::new(c)).collect(),
            bad: BadNumbers::new(context),
            next_id: 0,
            order: Vec::new(),
            groups: HashMap::new(),
        }
    }

    fn row(
        &mut self,
        report: &Report,
        line: u64,
        row: &[String],
        emit: &mut dyn FnMut(KernelRecord),
    ) {
        let name = row.first().map(String::as_str).unwrap_or("");
        if is_pseudo_row(name) {
            return;
        }
        for column in CHECKED {
            if let Some(text) = cell(report, row, column)
                && let Err(problem) = number::parse_measure(text.trim_end_matches('%'))
            {
                self.bad.note(line, column, text, problem);
            }
        }
        if !self.gpu {
            let record = self.cpu_record(report, row);
            emit(record);
            return;
        }
        let total = number_in(report, row, TOTAL_TIME);
        let count = number_in(report, row, INSTANCE_COUNT);
        let add = |sum: &mut Option<f64>, value: Option<f64>| {
            if let Some(value) = value {
                *sum = Some(sum.unwrap_or(0.0) + value);
            }
        };
        match self.groups.get_mut(name) {
            Some(group) => {
                if total.unwrap_or(0.0) >= group.longest_total {
                    group.longest = row.to_vec();
                    group.longest_total = total.unwrap_or(0.0);
                }
                add(&mut group.totals, total);
                add(&mut group.counts, count);
                group.rows += 1;
            }
            None => {
                self.order.push(name.to_string());
                self.groups.insert(
                    name.to_string(),
                    Group {
                        longest: row.to_vec(),
                        longest_total: total.unwrap_or(0.0),
                        totals: total,
                        counts: count,
                        rows: 1,
                    },
                );
            }
        }
    }

    /// Emit the merged computing tasks; the bad-number diagnostics.
    fn finish(mut self, report: &Report, emit: &mut dyn FnMut(KernelRecord)) -> Vec<Diagnostic> {
        for name in std::mem::take(&mut self.order) {
            if let Some(group) = self.groups.remove(&name) {
                let record = self.gpu_record(report, name, group);
                emit(record);
            }
        }
        self.bad.into_diagnostics()
    }

    fn gpu_record(&mut self, report: &Report, name: String, group: Group) -> KernelRecord {
        let longest = &group.longest;
        let mut record = KernelRecord {
            profiler: self.profiler.clone(),
            launch_id: self.next_id,
            short_name: short_kernel_name(&name),
            name,
            calls: 1,
            ..Default::default()
        };
        self.next_id += 1;
        all_cells(report, &self.names, longest, 0, &mut record);
        record.duration_ns = group.totals.map(seconds_to_ns);
        if let Some(counts) = group.counts {
            record.calls = counts as u64;
        }
        for (column, field, unit) in GPU_FIELDS {
            if let Some(value) = number_in(report, longest, column) {
                let value = if *unit == "ns" {
                    seconds_to_ns(value)
                } else {
                    value
                };
                record.metrics.insert((*field).into(), metric(value, unit));
            }
        }
        if group.rows > 1 {
            // The mean over every merged variant, not the longest one's.
            if let (Some(total), true) = (record.duration_ns, record.calls > 0) {
                record.metrics.insert(
                    "gpu_time_avg".into(),
                    metric(total / record.calls as f64, "ns"),
                );
            }
            record
                .metrics
                .insert("merged_rows".into(), metric(group.rows as f64, ""));
        }
        record.achieved_occupancy_pct = number_in(report, longest, OCCUPANCY);
        if let Some(local) = cell(report, longest, "Work Size:Local").and_then(dims) {
            record.block = Some(local);
        }
        record
            .metrics
            .insert("record_source".into(), text("summary"));
        record
    }

    fn cpu_record(&mut self, report: &Report, row: &[String]) -> KernelRecord {
        let short = row[0].clone();
        let name = report
            .column("Function (Full)")
            .and_then(|i| row.get(i))
            .filter(|n| !n.is_empty())
            .cloned()
            .unwrap_or_else(|| short.clone());
        let mut record = KernelRecord {
            profiler: self.profiler.clone(),
            launch_id: self.next_id,
            name,
            short_name: short,
            calls: 1,
            ..Default::default()
        };
        self.next_id += 1;
        all_cells(report, &self.names, row, 0, &mut record);
        if let Some(seconds) = number_in(report, row, "CPU Time") {
            record
                .metrics
                .insert("cpu_time".into(), metric(seconds_to_ns(seconds), "ns"));
        }
        record
            .metrics
            .insert("record_source".into(), text("summary"));
        record
    }
}

fn metric(value: f64, unit: &'static str) -> Metric {
    Metric {
        value: MetricValue::Number(value),
        unit: Cow::Borrowed(unit),
    }
}

fn text(value: &str) -> Metric {
    Metric {
        value: MetricValue::Text(value.to_string()),
        unit: Cow::Borrowed(""),
    }
}

/// `256`, `16 x 16`, `64x8x1` → three dimensions, missing ones 1.
fn dims(text: &str) -> Option<[u64; 3]> {
    let parts: Vec<u64> = text
        .split(|c: char| c == 'x' || c == 'X' || c == ',' || c == ';' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [x] => Some([*x, 1, 1]),
        [x, y] => Some([*x, *y, 1]),
        [x, y, z] => Some([*x, *y, *z]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FN: &str =
        include_str!("../../../tests/fixtures/vtune/grappolo-friendster-t192-dram-hotspots-fn.csv");
    const PKG: &str = include_str!(
        "../../../tests/fixtures/vtune/grappolo-friendster-t192-dram-hotspots-pkg.csv"
    );
    const ADV: &str = include_str!("../../../tests/fixtures/vtune/advanced-hotspots.csv");
    const GPU: &str = include_str!("../../../tests/fixtures/vtune/synthetic_gpu_hotspots.tsv");

    #[test]
    fn cpu_function_reports_read_by_column_name() {
        let report = parse_report(FN, Some(Delimiter::Comma), "fn.csv").unwrap();
        assert_eq!(report.delimiter, Some(Delimiter::Comma));
        assert_eq!(report.columns.len(), 19);
        assert_eq!(report.rows.len(), 475);
        let records = report_records(&report, "vtune");
        assert_eq!(records.len(), 475);
        let first = &records[0];
        assert_eq!(first.short_name, "buildLocalMapCounter");
        assert!(
            first
                .name
                .starts_with("buildLocalMapCounter(long, long, std::map<long, long")
        );
        assert_eq!(first.metric("cpu_time"), Some(31090513078000.0));
        assert_eq!(first.metric("CPU Time"), Some(31090.513078));
        assert_eq!(first.metric("Memory Bound:DRAM Bound(%)"), Some(58.7));
        assert_eq!(first.metrics["Memory Bound:DRAM Bound(%)"].unit, "%");
        assert_eq!(
            first.metrics["Module"].value,
            MetricValue::Text("driverForGraphClustering".into())
        );
        assert_eq!(first.duration_ns, None, "CPU time is no GPU time");
        // A quoted function name with commas stays one cell.
        assert!(records[1].short_name.starts_with("_INTERNAL_25_______src_kmp_barrier_cpp_ddfed41b::__kmp_wait_template<kmp_flag_64, (int)1"));
        assert_eq!(records[1].metric("cpu_time"), Some(5738184313000.0));
    }

    #[test]
    fn other_groupings_and_loop_rows_are_read_too() {
        let pkg = report_records(&parse_report(PKG, None, "pkg.csv").unwrap(), "vtune");
        let names: Vec<&str> = pkg.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["package_0", "package_1", "package_2", "package_3"]);
        assert_eq!(pkg[3].metric("cpu_time"), Some(3231199921000.0));
        let adv = parse_report(ADV, None, "adv.csv").unwrap();
        assert_eq!(adv.column("cpu time:effective time:idle"), Some(3));
        let records = report_records(&adv, "vtune");
        // `[Outside any loop]` is a pseudo-row; real loops in brackets stay.
        assert_eq!(records.len(), adv.rows.len() - 1);
        assert_eq!(records[0].name, "[Loop at line 4015 in gwce_new]");
        assert_eq!(records[0].metric("cpu_time"), Some(20119159000.0));
        assert!(records.iter().all(|r| !r.name.starts_with("[Outside any")));
    }

    #[test]
    fn gpu_reports_skip_warnings_merge_variants_and_drop_outside_rows() {
        let report = parse_report(GPU, Some(Delimiter::Tab), "gpu.tsv").unwrap();
        assert_eq!(report.delimiter, Some(Delimiter::Tab));
        assert_eq!(report.preamble.len(), 2);
        assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
        let records = report_records(&report, "vtune");
        let names: Vec<&str> = records.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["gemm_kernel", "softmax_kernel"]);
        let gemm = &records[0];
        // Two SIMD variants: total times and instance counts add up; per-instance fields are the
        // longer one's (SIMD16).
        assert_eq!(gemm.duration_ns, Some(seconds_to_ns(0.250 + 0.050)));
        assert_eq!(gemm.calls, 120);
        assert_eq!(gemm.metric("simd_width"), Some(16.0));
        assert_eq!(gemm.metric("xve_active_pct"), Some(71.5));
        assert_eq!(gemm.metric("xve_stalled_pct"), Some(20.1));
        assert_eq!(gemm.metric("xve_idle_pct"), Some(8.4));
        assert_eq!(gemm.achieved_occupancy_pct, Some(88.2));
        assert_eq!(gemm.metric("XVE Pipelines:XMX active(%)"), Some(35.0));
        assert_eq!(
            gemm.metric("GPU Memory Bandwidth, GB/sec:Read"),
            Some(410.5)
        );
        assert_eq!(
            gemm.metric("gpu_time_avg"),
            Some(seconds_to_ns(0.300) / 120.0)
        );
        assert_eq!(gemm.metric("merged_rows"), Some(2.0));
        assert_eq!(gemm.block, Some([16, 16, 1]));
        let softmax = &records[1];
        // Missing columns leave fields empty instead of failing.
        assert_eq!(softmax.achieved_occupancy_pct, None);
        assert_eq!(softmax.calls, 100);
        assert_eq!(softmax.metric("gpu_time_avg"), Some(200000.0));
    }

    #[test]
    fn saved_reports_parse_to_output_with_grouping() {
        let out = parse_output(GPU.as_bytes(), Some(Delimiter::Tab), "gpu.tsv").unwrap();
        assert_eq!(out.kernels.len(), 2);
        assert_eq!(out.session["grouping"], "Computing Task");
        let empty = parse_output(
            b"Computing Task\tComputing Task:Total Time\n[Outside any task]\t1\n",
            None,
            "e",
        )
        .unwrap();
        assert_eq!(empty.diagnostics[0].kind, "no_kernels");
    }

    #[test]
    fn delimiter_is_told_by_the_header_and_empty_reports_fail_clearly() {
        let comma = "vtune: Warning: x\nComputing Task,Computing Task:Total Time\nk,0.5\n";
        let report = parse_report(comma, Some(Delimiter::Tab), "r").unwrap();
        assert_eq!(report.delimiter, Some(Delimiter::Comma));
        assert_eq!(report.diagnostics[0].kind, "vtune_delimiter");
        assert_eq!(report_records(&report, "vtune")[0].duration_ns, Some(5e8));
        let err = parse_report(
            "vtune: Error: 0x40000024 (No data) -- No data is collected.\n",
            None,
            "r.tsv",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("r.tsv") && err.contains("no table header"),
            "{err}"
        );
        let ragged = "Computing Task\tComputing Task:Total Time\tExtra\nk\t1\na\tb\tc\td\n\"open\n";
        let report = parse_report(ragged, None, "r").unwrap();
        assert_eq!(report_records(&report, "vtune").len(), 3);
    }
}
