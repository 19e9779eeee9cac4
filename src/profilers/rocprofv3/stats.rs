//! Summaries: the `--stats` CSVs (`kernel_stats.csv`, `hip_api_stats.csv`, `domain_stats.csv`,
//! …, all `"Name","Calls","TotalDurationNs",…`) and the `-S/--summary` text, one pipe table per
//! domain. Kernel totals become aggregated records when no per-dispatch trace exists.

use serde::{Deserialize, Serialize};

use super::ParsedPart;
use super::table::{Table, cell_f64, cell_str, cell_u64};
use crate::model::error::{Error, Result};
use crate::model::record::{KernelRecord, short_kernel_name};
use crate::profilers::{Diagnostic, Severity};

/// One line of a summary: a kernel, an API call or a copy direction, with its totals in ns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsRow {
    /// Which summary: `kernel_stats`, `hip_api_stats`, … for CSVs; the domain for the text
    /// summary's tables (`KERNEL_DISPATCH`, `HIP_API`, …; `ALL` for the combined table).
    pub table: String,
    pub name: String,
    /// The row's own domain, when the summary says (text summary only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    pub calls: u64,
    pub total_ns: f64,
    pub average_ns: Option<f64>,
    pub percent: Option<f64>,
    pub min_ns: Option<f64>,
    pub max_ns: Option<f64>,
    pub stddev_ns: Option<f64>,
}

impl StatsRow {
    /// Whether the row is a kernel's totals.
    pub fn is_kernel(&self) -> bool {
        self.table == "kernel_stats"
            || self.domain.as_deref() == Some("KERNEL_DISPATCH")
            || (self.domain.is_none() && self.table == "KERNEL_DISPATCH")
    }

    /// The kernel's totals as one aggregated record (`calls` launches).
    pub fn to_record(&self, profiler: &str) -> KernelRecord {
        KernelRecord {
            profiler: profiler.to_string(),
            name: self.name.clone(),
            short_name: short_kernel_name(&self.name),
            calls: self.calls,
            duration_ns: Some(self.total_ns),
            ..Default::default()
        }
    }
}

/// A `--stats` CSV. `table` names it (the file name without pid prefix and extension).
pub fn parse_csv(name: &str, table_name: &str, bytes: &[u8]) -> Result<ParsedPart> {
    let table = Table::read(name, bytes);
    let missing = table.missing(&["Name", "Calls", "TotalDurationNs"]);
    if !missing.is_empty() && !table.rows.is_empty() {
        return Err(Error::Parse {
            context: format!("rocprofv3 stats `{name}`"),
            message: format!(
                "the header lacks {}; is this a `--stats` CSV?",
                missing.join(", ")
            ),
        });
    }
    let one = |n: &str| table.index(&[n]);
    let (n, calls, total) = (one("Name"), one("Calls"), one("TotalDurationNs"));
    let (avg, pct, min, max, sd) = (
        one("AverageNs"),
        one("Percentage"),
        one("MinNs"),
        one("MaxNs"),
        one("StdDev"),
    );
    let mut part = ParsedPart {
        diagnostics: table.warnings.clone(),
        ..Default::default()
    };
    let bad = table.bad_numbers(
        name,
        &[
            "Calls",
            "TotalDurationNs",
            "AverageNs",
            "Percentage",
            "MinNs",
            "MaxNs",
            "StdDev",
        ],
    );
    part.diagnostics.extend(bad.into_diagnostics());
    for row in &table.rows {
        let (Some(row_name), Some(calls), Some(total_ns)) =
            (cell_str(row, n), cell_u64(row, calls), cell_f64(row, total))
        else {
            continue;
        };
        part.stats.push(StatsRow {
            table: table_name.to_string(),
            name: row_name.to_string(),
            domain: None,
            calls,
            total_ns,
            average_ns: cell_f64(row, avg),
            percent: cell_f64(row, pct),
            min_ns: cell_f64(row, min),
            max_ns: cell_f64(row, max),
            stddev_ns: cell_f64(row, sd),
        });
    }
    Ok(part)
}

/// The text summary (`-S`): `ROCPROFV3 <DOMAIN> SUMMARY:` then a pipe table. Column widths
/// change from table to table, so rows are split on `|`; a name holding `|` itself keeps the
/// surplus cells. Durations are converted to ns from the unit in the header (`-u`).
pub fn parse_summary(name: &str, bytes: &[u8]) -> ParsedPart {
    let text = String::from_utf8_lossy(bytes);
    let mut part = ParsedPart::default();
    let mut domain: Option<String> = None;
    let mut header: Option<Header> = None;
    let mut bad = crate::model::number::BadNumbers::new(name);
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(title) = line
            .strip_prefix("ROCPROFV3 ")
            .and_then(|l| l.strip_suffix(" SUMMARY:"))
        {
            domain = Some(title.to_string());
            header = None;
        } else if line == "ROCPROFV3 SUMMARY:" {
            domain = Some("ALL".to_string());
            header = None;
        } else if !line.starts_with('|') || line.starts_with("|-") {
            continue;
        } else if header.is_none() {
            header = Some(Header::from_line(line));
        } else if let (Some(h), Some(d)) = (&header, &domain)
            && let Some(row) = h.row(line, d, index as u64 + 1, &mut bad)
        {
            part.stats.push(row);
        }
    }
    part.diagnostics.extend(bad.into_diagnostics());
    if part.stats.is_empty() {
        part.diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            kind: "no_summary_rows".into(),
            message: format!("`{name}` holds no `ROCPROFV3 … SUMMARY:` table rows"),
            hint: Some(
                "pass the text rocprofv3 prints with `-S/--summary` (or its \
                 --summary-output-file)"
                    .into(),
            ),
            metric: None,
        });
    }
    part
}

struct Header {
    columns: Vec<String>,
    /// ns per unit of the duration columns.
    scale: f64,
}

impl Header {
    fn from_line(line: &str) -> Header {
        let columns: Vec<String> = cells(line).map(|c| c.to_ascii_uppercase()).collect();
        let unit = columns
            .iter()
            .find(|c| c.starts_with("DURATION"))
            .and_then(|c| c.split('(').nth(1))
            .map(|u| u.trim_end_matches(')').trim().to_ascii_lowercase());
        let scale = match unit.as_deref() {
            Some("sec") => 1e9,
            Some("msec") => 1e6,
            Some("usec") => 1e3,
            _ => 1.0,
        };
        Header { columns, scale }
    }

    /// The row of `line` (1-based `line_number`); a cell that is no measurement (`-5`, `inf`,
    /// `1e308`, `abc`) is noted in `bad` and left unmeasured, and a row without its calls or
    /// total is left out.
    fn row(
        &self,
        line: &str,
        table: &str,
        line_number: u64,
        bad: &mut crate::model::number::BadNumbers,
    ) -> Option<StatsRow> {
        let mut values: Vec<&str> = cells(line).collect();
        let width = self.columns.len();
        if values.len() < width || width == 0 {
            return None;
        }
        // Extra cells can only come from `|` inside the name (the first column).
        let surplus = values.len() - width;
        let name = values[..=surplus].join("|");
        values.drain(..=surplus);
        values.insert(0, &name);
        let column = |prefix: &str| self.columns.iter().position(|c| c.starts_with(prefix));
        let get = |prefix: &str| values.get(column(prefix)?).copied();
        // Only numbers a record may hold: `-5`, `inf`, `1e308` are not measurements.
        let mut number = |prefix: &str| {
            let index = column(prefix)?;
            bad.measure(line_number, &self.columns[index], values.get(index)?)
        };
        let calls = number("CALLS");
        let total = number("DURATION");
        let average = number("AVERAGE");
        let percent = number("PERCENT");
        let min = number("MIN");
        let max = number("MAX");
        let stddev = number("STDDEV");
        let time = |v: Option<f64>| v.map(|v| v * self.scale);
        Some(StatsRow {
            table: table.to_string(),
            name: name.trim().to_string(),
            domain: get("DOMAIN").map(str::to_string),
            calls: calls? as u64,
            total_ns: time(total)?,
            average_ns: time(average),
            percent,
            min_ns: time(min),
            max_ns: time(max),
            stddev_ns: time(stddev),
        })
    }
}

fn cells(line: &str) -> impl Iterator<Item = &str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hip_api_stats_mixed_notation_no_final_newline() {
        let bytes = include_bytes!("../../../tests/fixtures/rocprofv3/hip_api_stats.csv");
        let part = parse_csv("hip_api_stats.csv", "hip_api_stats", bytes).unwrap();
        assert!(part.diagnostics.is_empty());
        assert_eq!(part.stats.len(), 17);
        let first = &part.stats[0];
        assert_eq!(first.name, "hipStreamCreateWithFlags");
        assert_eq!(first.calls, 4);
        assert_eq!(first.total_ns, 262497406.0);
        assert_eq!(first.percent, Some(85.15));
        let last = part.stats.last().unwrap();
        assert_eq!(last.name, "hipSetDevice");
        assert_eq!(last.stddev_ns, Some(0.0));
        let fat = part
            .stats
            .iter()
            .find(|r| r.name == "__hipRegisterFatBinary")
            .unwrap();
        assert_eq!(fat.percent, Some(2.920e-03));
        assert!(!first.is_kernel());
    }

    #[test]
    fn domain_stats() {
        let bytes = include_bytes!("../../../tests/fixtures/rocprofv3/hip_domain_stats.csv");
        let part = parse_csv("hip_domain_stats.csv", "domain_stats", bytes).unwrap();
        assert_eq!(part.stats.len(), 1);
        assert_eq!(part.stats[0].name, "HIP_API");
        assert_eq!(part.stats[0].calls, 13);
    }

    #[test]
    fn text_summary_every_domain_table() {
        let bytes = include_bytes!("../../../tests/fixtures/rocprofv3/summary.txt");
        let part = parse_summary("summary.txt", bytes);
        assert!(part.diagnostics.is_empty());
        let tables: std::collections::BTreeSet<&str> =
            part.stats.iter().map(|r| r.table.as_str()).collect();
        assert_eq!(
            tables.into_iter().collect::<Vec<_>>(),
            [
                "ALL",
                "HIP_API",
                "HSA_API",
                "KERNEL_DISPATCH",
                "MEMORY_ALLOCATION",
                "MEMORY_COPY"
            ]
        );
        let kernels: Vec<&StatsRow> = part
            .stats
            .iter()
            .filter(|r| r.table == "KERNEL_DISPATCH")
            .collect();
        assert_eq!(kernels.len(), 4);
        let add = kernels[0];
        assert_eq!(
            add.name,
            "void addition_kernel<float>(float*, float const*, float const*, int, int)"
        );
        assert_eq!(add.calls, 8);
        assert_eq!(add.total_ns, 184324.0);
        assert_eq!(add.average_ns, Some(2.304e4));
        assert_eq!(add.min_ns, Some(11200.0));
        assert_eq!(add.domain.as_deref(), Some("KERNEL_DISPATCH"));
        assert!(add.is_kernel());
        let record = add.to_record("rocprofv3");
        assert_eq!(record.calls, 8);
        assert_eq!(record.short_name, "addition_kernel<float>");
        // The combined table's kernel rows are kernels too; its copy rows are not.
        let all_kernels = part
            .stats
            .iter()
            .filter(|r| r.table == "ALL" && r.is_kernel())
            .count();
        assert_eq!(all_kernels, 4);
        let alloc = part
            .stats
            .iter()
            .find(|r| r.table == "MEMORY_ALLOCATION")
            .unwrap();
        assert_eq!(alloc.domain.as_deref(), Some("MEMORY_ALLOCATION"));
    }

    #[test]
    fn absurd_numbers_in_the_text_summary_are_diagnostics_naming_line_and_column() {
        let bytes = include_bytes!("../../../tests/fixtures/rocprofv3/summary.txt");
        let clean = parse_summary("summary.txt", bytes);
        assert!(clean.diagnostics.is_empty(), "{:?}", clean.diagnostics);
        let text = String::from_utf8_lossy(bytes);
        // The first data row of the first table: its second cell (the calls) becomes `-5`.
        let (line_index, line) = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with('|') && !l.trim_start().starts_with("|-"))
            .nth(1)
            .unwrap();
        let cells: Vec<&str> = line.split('|').collect();
        let mut damaged_cells: Vec<String> = cells.iter().map(|c| c.to_string()).collect();
        damaged_cells[3] = " -5 ".to_string();
        let damaged_line = damaged_cells.join("|");
        let damaged: String = text
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if i == line_index {
                    damaged_line.clone()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let part = parse_summary("summary.txt", damaged.as_bytes());
        assert_eq!(
            part.stats.len(),
            clean.stats.len() - 1,
            "the row without its calls goes"
        );
        let diagnostic = &part.diagnostics[0];
        assert_eq!(diagnostic.kind, "bad_number");
        assert!(
            diagnostic
                .message
                .contains(&format!("`summary.txt` row {}", line_index + 1)),
            "{}",
            diagnostic.message
        );
        assert!(
            diagnostic.message.contains("`-5` is negative"),
            "{}",
            diagnostic.message
        );
    }

    #[test]
    fn summary_units_and_pipes_in_names() {
        let text = "ROCPROFV3 KERNEL_DISPATCH SUMMARY:\n\n| NAME | DOMAIN | CALLS | DURATION (usec) | AVERAGE (usec) | PERCENT (INC) | MIN (usec) | MAX (usec) | STDDEV |\n|---|---|---|---|---|---|---|---|---|\n| operator|(a, b) | KERNEL_DISPATCH | 2 | 3.5 | 1.75 | 100.0 | 1 | 2.5 | 1.0e+00 |\n";
        let part = parse_summary("s.txt", text.as_bytes());
        assert_eq!(part.stats.len(), 1);
        let row = &part.stats[0];
        assert_eq!(row.name, "operator|(a, b)");
        assert_eq!(row.total_ns, 3500.0);
        assert_eq!(row.max_ns, Some(2500.0));
    }

    #[test]
    fn a_summary_without_tables_warns() {
        let part = parse_summary("s.txt", b"hello\n");
        assert!(part.stats.is_empty());
        assert_eq!(part.diagnostics[0].kind, "no_summary_rows");
    }
}
