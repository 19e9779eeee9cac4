//! VTune `-report hotspots -format csv` exports: GPU computing tasks (`-group-by
//! computing-task`) and CPU functions (the default grouping). VTune prints warning lines before
//! the table; the header is the first other line and tells the delimiter (tab, which polyprof
//! asks for, or comma). Columns are read by name, hierarchical names joined by `:`
//! (`XVE Array:Active`), with or without a unit suffix (`Memory Bound(%)`); missing columns
//! leave fields empty and extra ones are kept as metrics.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::model::error::{Error, Result};
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
}

impl Report {
    /// The first column names the grouping: `Computing Task`, `Function`, `Package`, ….
    pub fn grouping(&self) -> &str {
        self.columns.first().map(String::as_str).unwrap_or("")
    }

    /// Index of a column by name, ignoring case and a trailing unit such as `(%)` or `(s)`.
    pub fn column(&self, name: &str) -> Option<usize> {
        let wanted = name.trim();
        self.columns
            .iter()
            .position(|c| c.trim().eq_ignore_ascii_case(wanted))
            .or_else(|| {
                self.columns
                    .iter()
                    .position(|c| bare(c).eq_ignore_ascii_case(wanted))
            })
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
    let mut report = Report::default();
    let mut offset = 0;
    let mut header = None;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        if is_preamble(content) || !(content.contains('\t') || content.contains(',')) {
            if !content.trim().is_empty() {
                report.preamble.push(content.to_string());
            }
            offset += line.len();
            continue;
        }
        header = Some(content);
        break;
    }
    let header = header.ok_or_else(|| Error::Parse {
        context: context.to_string(),
        message: "no table header after VTune's messages; the report is empty (did the \
                  collection record any data? `vtune -report summary` says)"
            .into(),
    })?;
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
        .from_reader(&text.as_bytes()[offset..]);
    let mut records = reader.records();
    match records.next() {
        Some(Ok(head)) => report.columns = head.iter().map(|c| c.trim().to_string()).collect(),
        _ => {
            return Err(Error::Parse {
                context: context.to_string(),
                message: "unreadable header line".into(),
            });
        }
    }
    for (n, row) in records.enumerate() {
        match row {
            Ok(row) => {
                let cells: Vec<String> = row.iter().map(|c| c.trim().to_string()).collect();
                if cells.iter().all(String::is_empty) {
                    continue;
                }
                report.rows.push(cells);
            }
            Err(e) => report.diagnostics.push(Diagnostic {
                severity: Severity::Warning,
                metric: None,
                kind: "vtune_bad_row".into(),
                message: format!("{context}: row {}: {e}", n + 1),
                hint: None,
            }),
        }
    }
    Ok(report)
}

/// A saved report (bytes as VTune wrote them) as records and diagnostics.
pub fn parse_output(bytes: &[u8], asked: Option<Delimiter>, context: &str) -> Result<ParsedOutput> {
    let text = String::from_utf8_lossy(bytes);
    let report = parse_report(&text, asked, context)?;
    let mut out = ParsedOutput {
        kernels: report_records(&report, "vtune"),
        diagnostics: report.diagnostics.clone(),
        ..Default::default()
    };
    out.session
        .insert("grouping".into(), report.grouping().to_string());
    if out.kernels.is_empty() {
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

/// Records from a report: one per computing task (duplicates merged) for a GPU report, one per
/// row with its CPU time otherwise.
pub fn report_records(report: &Report, profiler: &str) -> Vec<KernelRecord> {
    if bare(report.grouping()).eq_ignore_ascii_case("Computing Task") {
        gpu_records(report, profiler)
    } else {
        cpu_records(report, profiler)
    }
}

fn cell<'a>(report: &Report, row: &'a [String], column: &str) -> Option<&'a str> {
    let value = row.get(report.column(column)?)?.as_str();
    (!value.is_empty()).then_some(value)
}

fn number_in(report: &Report, row: &[String], column: &str) -> Option<f64> {
    cell(report, row, column)?
        .trim_end_matches('%')
        .trim()
        .parse()
        .ok()
}

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

/// Every cell under VTune's own column name (numbers as numbers).
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
            Ok(n) => Metric {
                value: MetricValue::Number(n),
                unit: unit_of(&report.columns[i]),
            },
            Err(_) => Metric {
                value: MetricValue::Text(value.clone()),
                unit: Cow::Borrowed(""),
            },
        };
        record.metrics.insert(names[i].clone(), metric);
    }
}

fn gpu_records(report: &Report, profiler: &str) -> Vec<KernelRecord> {
    let names: Vec<MetricName> = report.columns.iter().map(|c| MetricName::new(c)).collect();
    // Rows of one name: SIMD-width variants of a kernel, or its work sizes.
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Vec<&Vec<String>>> = HashMap::new();
    for row in &report.rows {
        let name = row.first().map(String::as_str).unwrap_or("");
        if is_pseudo_row(name) {
            continue;
        }
        if !groups.contains_key(name) {
            order.push(name.to_string());
        }
        groups.entry(name.to_string()).or_default().push(row);
    }
    let total = |row: &[String]| number_in(report, row, "Computing Task:Total Time");
    order
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let rows = &groups[name];
            // Per-instance fields come from the longest-running variant.
            let longest = rows
                .iter()
                .max_by(|a, b| total(a).unwrap_or(0.0).total_cmp(&total(b).unwrap_or(0.0)))
                .copied()
                .unwrap_or(rows[0]);
            let mut record = KernelRecord {
                profiler: profiler.to_string(),
                launch_id: index as u64,
                name: name.clone(),
                short_name: short_kernel_name(name),
                calls: 1,
                ..Default::default()
            };
            all_cells(report, &names, longest, 0, &mut record);
            let totals: Vec<f64> = rows.iter().filter_map(|r| total(r)).collect();
            if !totals.is_empty() {
                record.duration_ns = Some(seconds_to_ns(totals.iter().sum()));
            }
            let counts: Vec<f64> = rows
                .iter()
                .filter_map(|r| number_in(report, r, "Computing Task:Instance Count"))
                .collect();
            if !counts.is_empty() {
                record.calls = counts.iter().sum::<f64>() as u64;
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
            if rows.len() > 1 {
                // The mean over every merged variant, not the longest one's.
                if let (Some(total), true) = (record.duration_ns, record.calls > 0) {
                    record.metrics.insert(
                        "gpu_time_avg".into(),
                        metric(total / record.calls as f64, "ns"),
                    );
                }
                record
                    .metrics
                    .insert("merged_rows".into(), metric(rows.len() as f64, ""));
            }
            record.achieved_occupancy_pct = number_in(report, longest, "XVE Threads Occupancy");
            if let Some(local) = cell(report, longest, "Work Size:Local").and_then(dims) {
                record.block = Some(local);
            }
            record
                .metrics
                .insert("record_source".into(), text("summary"));
            record
        })
        .collect()
}

fn cpu_records(report: &Report, profiler: &str) -> Vec<KernelRecord> {
    let names: Vec<MetricName> = report.columns.iter().map(|c| MetricName::new(c)).collect();
    let full = report.column("Function (Full)");
    report
        .rows
        .iter()
        .filter(|row| !is_pseudo_row(row.first().map(String::as_str).unwrap_or("")))
        .enumerate()
        .map(|(index, row)| {
            let short = row[0].clone();
            let name = full
                .and_then(|i| row.get(i))
                .filter(|n| !n.is_empty())
                .cloned()
                .unwrap_or_else(|| short.clone());
            let mut record = KernelRecord {
                profiler: profiler.to_string(),
                launch_id: index as u64,
                name,
                short_name: short,
                calls: 1,
                ..Default::default()
            };
            all_cells(report, &names, row, 0, &mut record);
            if let Some(seconds) = number_in(report, row, "CPU Time") {
                record
                    .metrics
                    .insert("cpu_time".into(), metric(seconds_to_ns(seconds), "ns"));
            }
            record
                .metrics
                .insert("record_source".into(), text("summary"));
            record
        })
        .collect()
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
