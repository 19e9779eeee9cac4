//! What `polyprof parse` prints, for every profiler: the table of normalized fields, the line
//! about memory commands, the diagnostics on stderr, and the exit status.

use std::io::Write;

use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_BORDERS_ONLY};
use polyprof::model::parsed::NO_DATA;
use polyprof::model::record::KernelRecord;
use polyprof::model::{Diagnostic, NormalizedField, ParsedOutput, Severity, normalized_field};
use polyprof::results::escape::terminal;

/// The exit status of `parse`, the same for every profiler: 2 when a file could not be read or
/// parsed, or when nothing in the files is the profiler's output (the `no_data` diagnostic);
/// 1 when an error-level diagnostic was found (a bad number, a profiler error); 0 otherwise.
pub fn exit_code(parsed: &ParsedOutput, unreadable: bool) -> u8 {
    if unreadable || parsed.diagnostics.iter().any(|d| d.kind == NO_DATA) {
        return 2;
    }
    let failed = parsed
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    u8::from(failed)
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

pub fn table_row(k: &KernelRecord, metrics: &[String]) -> Vec<String> {
    let mut row = vec![
        k.process_id
            .map_or_else(|| "-".to_string(), |p| p.to_string()),
        k.launch_id.to_string(),
        // A name from the file: control characters shown, never sent.
        terminal::line(&truncate(&k.short_name, 48)).into_owned(),
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

/// Columns left out first when the table is wider than the terminal (`COLUMNS`): those read
/// as reported (in `--json` in full), then the ones derived from others, then the launch
/// shape. id, kernel and time us always stay.
const DROP_ORDER: [&str; 6] = ["FLOP/B", "GFLOP/s", "DRAM MB", "pid", "grid", "block"];

/// The narrowest a kernel name gets when the kept columns still do not fit.
const MIN_KERNEL_WIDTH: usize = 16;

/// How a table fits a width: the columns kept (indices, in order), those left out (in the
/// order they went) and the widest a kernel name may be, if narrower than its column.
struct Fit {
    kept: Vec<usize>,
    left_out: Vec<usize>,
    kernel_width: Option<usize>,
}

/// Columns left out in [`DROP_ORDER`] (the columns read as reported before it, last first;
/// the `--metrics` asked for stay) until the columns, `widths` wide (each its widest cell,
/// header included), fit `width`; then kernel names shortened.
fn fit(header: &[String], widths: &[usize], width: usize) -> Fit {
    // As StreamedTable draws it: a border each side, one space before and two after a cell.
    let total = |kept: &[usize]| kept.iter().map(|&i| widths[i] + 3).sum::<usize>() + 1;
    let mut kept: Vec<usize> = (0..header.len()).collect();
    let mut left_out = Vec::new();
    let fixed = HEADER.len();
    let reported = (fixed + as_reported().count()).min(header.len());
    let mut candidates: Vec<&str> = header[fixed.min(reported)..reported]
        .iter()
        .rev()
        .map(String::as_str)
        .collect();
    candidates.extend(DROP_ORDER);
    for name in candidates {
        if total(&kept) <= width {
            break;
        }
        if let Some(at) = kept.iter().position(|&i| header[i] == name) {
            left_out.push(kept.remove(at));
        }
    }
    let over = total(&kept).saturating_sub(width);
    let kernel_width = header
        .iter()
        .position(|h| h == "kernel")
        .filter(|_| over > 0)
        .map(|k| widths[k].saturating_sub(over).max(MIN_KERNEL_WIDTH));
    Fit {
        kept,
        left_out,
        kernel_width,
    }
}

impl Fit {
    /// `row`'s kept cells, a kernel name (column `kernel` of the full row) shortened.
    fn apply(&self, row: &[String], kernel: Option<usize>) -> Vec<String> {
        self.kept
            .iter()
            .map(|&i| match (self.kernel_width, kernel == Some(i)) {
                (Some(keep), true) => polyprof::results::names::truncate_middle(&row[i], keep),
                _ => row[i].clone(),
            })
            .collect()
    }
}

/// `rows` fitted to `width` ([`fit`]). Returns the kept header, rows and the headers left out.
fn fit_to(
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    width: usize,
) -> (Vec<String>, Vec<Vec<String>>, Vec<String>) {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            std::iter::once(&header[i])
                .chain(rows.iter().map(|r| &r[i]))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let plan = fit(&header, &widths, width);
    let kernel = header.iter().position(|h| h == "kernel");
    let rows = rows.iter().map(|r| plan.apply(r, kernel)).collect();
    let left_out = plan.left_out.iter().map(|&i| header[i].clone()).collect();
    let header = plan.kept.iter().map(|&i| header[i].clone()).collect();
    (header, rows, left_out)
}

/// The table of `rows`, fitted to the terminal's width (else `COLUMNS`, else 120).
pub fn print_table(
    out: &mut impl Write,
    rows: Vec<Vec<String>>,
    metrics: &[String],
) -> anyhow::Result<()> {
    print_table_within(out, rows, metrics, super::width::table_width_for(false))
}

/// The table of `rows` at most `width` wide (`None`: every column, as [`StreamedTable`]).
fn print_table_within(
    out: &mut impl Write,
    rows: Vec<Vec<String>>,
    metrics: &[String],
    width: Option<usize>,
) -> anyhow::Result<()> {
    let width = width.unwrap_or(usize::MAX);
    let (header, rows, left_out) = fit_to(header(metrics), rows, width);
    let kernel = header.iter().position(|h| h == "kernel");
    let mut table = Table::new();
    table.load_style(UTF8_BORDERS_ONLY);
    table.set_header(header);
    for row in rows {
        table.add_row(row.into_iter().enumerate().map(|(i, cell)| {
            let cell = Cell::new(cell);
            if Some(i) == kernel {
                cell
            } else {
                cell.set_alignment(CellAlignment::Right)
            }
        }));
    }
    writeln!(out, "{table}")?;
    print_left_out(out, width, &left_out)?;
    Ok(())
}

/// The line under a fitted table that names the columns it left out, if any.
pub fn print_left_out(
    out: &mut impl Write,
    width: usize,
    left_out: &[String],
) -> std::io::Result<()> {
    if !left_out.is_empty() {
        let note = format!(
            "left out to fit {width} columns: {} (--json has every field; COLUMNS=N widens)",
            left_out.join(", ")
        );
        writeln!(out, "{}", super::width::prose(&note))?;
    }
    Ok(())
}

fn header(metrics: &[String]) -> Vec<String> {
    let mut header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
    header.extend(as_reported().map(|field| field.label.to_string()));
    header.extend(metrics.iter().cloned());
    header
}

/// The table of [`print_table`] written row by row, for inputs too large to hold every row:
/// the column widths come first ([`StreamedTable::widen`] on every row, e.g. in a first pass
/// over the file), then the rows are written as they come. Widths count characters.
pub struct StreamedTable {
    header: Vec<String>,
    widths: Vec<usize>,
    /// Set by [`StreamedTable::fit`]: the rows' cells kept and how.
    fit: Option<Fit>,
    /// The kernel column of a full row.
    kernel: Option<usize>,
}

impl StreamedTable {
    pub fn new(metrics: &[String]) -> Self {
        let header = header(metrics);
        let widths = header.iter().map(|h| h.chars().count()).collect();
        let kernel = header.iter().position(|h| h == "kernel");
        StreamedTable {
            header,
            widths,
            fit: None,
            kernel,
        }
    }

    pub fn widen(&mut self, row: &[String]) {
        for (width, cell) in self.widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }

    /// After every row widened: the columns that fit `width` (`None`: all), as
    /// [`print_table`] leaves them out. Returns the headers left out.
    pub fn fit(&mut self, width: Option<usize>) -> Vec<String> {
        let Some(width) = width else {
            return Vec::new();
        };
        let plan = fit(&self.header, &self.widths, width);
        let left_out = plan
            .left_out
            .iter()
            .map(|&i| self.header[i].clone())
            .collect();
        let widths = plan
            .kept
            .iter()
            .map(|&i| match (plan.kernel_width, self.kernel == Some(i)) {
                (Some(keep), true) => self.widths[i].min(keep),
                _ => self.widths[i],
            })
            .collect();
        self.header = plan.kept.iter().map(|&i| self.header[i].clone()).collect();
        self.widths = widths;
        self.fit = Some(plan);
        left_out
    }

    fn rule(
        &self,
        out: &mut impl Write,
        left: char,
        line: char,
        right: char,
    ) -> std::io::Result<()> {
        let inner: usize = self.widths.iter().map(|w| w + 3).sum::<usize>() - 1;
        let line: String = std::iter::repeat_n(line, inner).collect();
        writeln!(out, "{left}{line}{right}")
    }

    fn line(&self, out: &mut impl Write, cells: &[String], header: bool) -> std::io::Result<()> {
        let mut text = String::from("│");
        for (i, (cell, width)) in cells.iter().zip(&self.widths).enumerate() {
            let pad = width.saturating_sub(cell.chars().count());
            // As in the held table: the header and the kernel column left, numbers right.
            let kernel = self.header.get(i).is_some_and(|h| h == "kernel");
            let (before, after) = if header || kernel { (0, pad) } else { (pad, 0) };
            text.push(' ');
            text.extend(std::iter::repeat_n(' ', before));
            text.push_str(cell);
            text.extend(std::iter::repeat_n(' ', after));
            text.push_str("  ");
        }
        text.pop();
        text.push('│');
        writeln!(out, "{text}")
    }

    pub fn start(&self, out: &mut impl Write) -> std::io::Result<()> {
        self.rule(out, '┌', '─', '┐')?;
        self.line(out, &self.header, true)?;
        self.rule(out, '╞', '═', '╡')
    }

    pub fn row(&self, out: &mut impl Write, row: &[String]) -> std::io::Result<()> {
        match &self.fit {
            Some(plan) => self.line(out, &plan.apply(row, self.kernel), false),
            None => self.line(out, row, false),
        }
    }

    pub fn end(&self, out: &mut impl Write) -> std::io::Result<()> {
        self.rule(out, '└', '─', '┘')
    }
}

/// Memory commands are not kernels: one line under the kernel table says how many there were
/// (their records are in `--json` and in the run document's report).
pub fn print_memory_note(out: &mut impl Write, commands: &[KernelRecord]) -> anyhow::Result<()> {
    if commands.is_empty() {
        return Ok(());
    }
    let calls: u64 = commands.iter().map(|c| c.calls).sum();
    let time_ns: f64 = commands.iter().filter_map(|c| c.duration_ns).sum();
    writeln!(
        out,
        "memory commands (copies, fills, barriers; not kernels): {} records, {calls} commands, \
         {:.2} us; `--json` lists them",
        commands.len(),
        time_ns / 1e3
    )?;
    Ok(())
}

/// Diagnostics go to stderr so stdout stays machine-readable (they are in the JSON too).
pub fn report_diagnostics(parsed: &ParsedOutput, json: bool) {
    for d in &parsed.diagnostics {
        if json && d.severity == Severity::Info {
            continue;
        }
        let level = match d.severity {
            Severity::Info => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        print_diagnostic(level, d);
    }
}

/// One diagnostic on stderr: a profiler's own text (kernel names, its messages), shown and
/// never sent to the terminal.
pub fn print_diagnostic(level: &str, d: &Diagnostic) {
    eprintln!("{level} [{}]: {}", d.kind, terminal::text(&d.message));
    if let Some(hint) = &d.hint {
        eprintln!("  hint: {}", terminal::text(hint));
    }
}

/// A parse error (a file's name, the text that did not parse) on stderr, shown.
pub fn print_error(error: &impl std::fmt::Display) {
    eprintln!("error: {}", terminal::text(&error.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_table_is_the_held_table() {
        let metrics = vec!["extra".to_string()];
        let record = |name: &str, ns: f64| KernelRecord {
            launch_id: 7,
            name: name.into(),
            short_name: name.into(),
            duration_ns: Some(ns),
            block: Some([16, 16, 1]),
            ..Default::default()
        };
        let rows: Vec<Vec<String>> = [record("gemm_kernel", 3e8), record("k", 12.0)]
            .iter()
            .map(|r| table_row(r, &metrics))
            .collect();
        let mut held = Vec::new();
        print_table_within(&mut held, rows.clone(), &metrics, None).unwrap();
        let mut table = StreamedTable::new(&metrics);
        for row in &rows {
            table.widen(row);
        }
        let mut streamed = Vec::new();
        table.start(&mut streamed).unwrap();
        for row in &rows {
            table.row(&mut streamed, row).unwrap();
        }
        table.end(&mut streamed).unwrap();
        assert_eq!(
            String::from_utf8(streamed).unwrap(),
            String::from_utf8(held).unwrap()
        );
    }

    #[test]
    fn a_streamed_table_fits_the_width_as_the_held_table_does() {
        let metrics = vec!["extra".to_string()];
        let record = KernelRecord {
            launch_id: 7,
            process_id: Some(4242),
            name: "a_kernel_with_a_rather_long_templated_name<float, 128, 64>".into(),
            short_name: "a_kernel_with_a_rather_long_templated_name<float, 128, 64>".into(),
            duration_ns: Some(3e8),
            block: Some([16, 16, 1]),
            grid: Some([1024, 1, 1]),
            ..Default::default()
        };
        let rows = vec![table_row(&record, &metrics)];
        for width in [60, 80, 100] {
            let mut held = Vec::new();
            print_table_within(&mut held, rows.clone(), &metrics, Some(width)).unwrap();
            let mut table = StreamedTable::new(&metrics);
            table.widen(&rows[0]);
            let left_out = table.fit(Some(width));
            let mut streamed = Vec::new();
            table.start(&mut streamed).unwrap();
            table.row(&mut streamed, &rows[0]).unwrap();
            table.end(&mut streamed).unwrap();
            print_left_out(&mut streamed, width, &left_out).unwrap();
            let (streamed, held) = (
                String::from_utf8(streamed).unwrap(),
                String::from_utf8(held).unwrap(),
            );
            assert_eq!(streamed, held, "at {width}");
            let table_lines = streamed.lines().take_while(|l| !l.starts_with("left out"));
            assert!(
                table_lines.into_iter().all(|l| l.chars().count() <= width),
                "{streamed}"
            );
        }
    }
}
