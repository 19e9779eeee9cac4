//! Unitrace's hardware-metric CSV: `trace.metrics.<pid>` (`-q` query mode:
//! `Kernel,GlobalInstanceId,SubDeviceId,<NAME[unit]>…`, one row per instance and sub-device;
//! `-k` sampling mode: the same with `", "` and no sub-device), each device block opened by
//! `=== Device #N Metrics ===`; and the older layout inside the text file after
//! `== Kernel Metrics ==` (`Kernel,Device,SubDeviceId,…` repeated before every row, lines ending
//! with a comma). Columns are found by name; values are kept per column in the file's order.

use super::lines::{Warnings, split_csv_right};
use crate::model::number;
use crate::model::parsed::Diagnostic;

/// A metric column, `GpuTime[ns]` → name `GpuTime`, unit `ns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricColumn {
    pub name: String,
    pub unit: String,
}

impl MetricColumn {
    fn parse(header: &str) -> Self {
        match header.strip_suffix(']').and_then(|h| h.rsplit_once('[')) {
            Some((name, unit)) => MetricColumn {
                name: name.trim().to_string(),
                unit: unit.to_string(),
            },
            None => MetricColumn {
                name: header.to_string(),
                unit: String::new(),
            },
        }
    }
}

/// How the metrics were collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricMode {
    /// `--metric-query`: one row per kernel instance (and sub-device).
    Query,
    /// `--metric-sampling`: time-based samples attributed to kernel instances.
    Sampling,
}

/// One row: a kernel instance (query mode) or a sample (sampling mode).
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRow {
    /// The kernel name as printed, unquoted, with its shape suffix.
    pub kernel: String,
    pub instance_id: Option<u64>,
    pub sub_device: Option<u32>,
    /// `Device` column of the older layout.
    pub device: Option<u32>,
    /// One value per [`MetricBlock::columns`] entry; `None` where the cell is empty or text.
    pub values: Vec<Option<f64>>,
    /// How many sampling rows were folded into this one ([`super::samples`]); 1 as printed.
    pub samples: usize,
}

/// Rows under one header.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricBlock {
    /// `N` of `=== Device #N Metrics ===`, when the file names it.
    pub device: Option<u32>,
    pub mode: MetricMode,
    pub columns: Vec<MetricColumn>,
    pub rows: Vec<MetricRow>,
}

impl MetricBlock {
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    pub blocks: Vec<MetricBlock>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Metrics {
    pub fn rows(&self) -> usize {
        self.blocks.iter().map(|b| b.rows.len()).sum()
    }
}

/// Identity columns before the metrics, by position in the header.
struct Layout {
    /// Cells after the name, per row.
    cells: usize,
    instance: Option<usize>,
    sub_device: Option<usize>,
    device: Option<usize>,
    /// Cell index of each metric column.
    metric_cells: Vec<usize>,
    /// The header ended with a comma (older layout): rows do too.
    trailing_comma: bool,
}

/// Parse metric CSV blocks anywhere in `text` (a `trace.metrics.<pid>` file or a text file
/// with a `== Kernel Metrics ==` part).
pub fn parse_metrics(text: &str) -> Metrics {
    let mut metrics = Metrics::default();
    let mut warnings = Warnings::default();
    let mut device: Option<u32> = None;
    let mut layout: Option<Layout> = None;
    let mut header_text = "";
    let mut bad = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(n) = line
            .strip_prefix("=== Device #")
            .and_then(|r| r.strip_suffix(" Metrics ==="))
        {
            device = n.trim().parse().ok();
            layout = None;
            continue;
        }
        if line.starts_with("==") {
            // Another section of a text file ends the metrics.
            if !line.contains("Metrics ==") {
                layout = None;
            }
            continue;
        }
        if let Some(columns) = metric_header(line) {
            // The older layout repeats the header before every row: same header, same block.
            if layout.is_some() && line == header_text {
                continue;
            }
            header_text = line;
            let (block, found) = block_for(&columns, device, line.ends_with(','));
            metrics.blocks.push(block);
            layout = Some(found);
            continue;
        }
        let (Some(found), Some(block)) = (&layout, metrics.blocks.last_mut()) else {
            continue;
        };
        let row_text = if found.trailing_comma {
            line.strip_suffix(',').unwrap_or(line)
        } else {
            line
        };
        let Some((kernel, cells)) = split_csv_right(row_text, found.cells) else {
            warnings.push(
                "unitrace_bad_metric_row",
                format!(
                    "line {}: expected {} cells after the kernel name: `{}`",
                    index + 1,
                    found.cells,
                    clip(line)
                ),
                None,
            );
            continue;
        };
        let id = |at: Option<usize>| at.and_then(|i| cells[i].parse().ok());
        block.rows.push(MetricRow {
            kernel: kernel.to_string(),
            instance_id: id(found.instance),
            sub_device: id(found.sub_device).map(|v: u64| v as u32),
            device: id(found.device).map(|v: u64| v as u32),
            values: found
                .metric_cells
                .iter()
                .zip(&block.columns)
                .map(|(&i, column)| {
                    // Text stays unmeasured as before; a number that cannot be is a diagnostic.
                    let value: f64 = cells[i].parse().ok()?;
                    match number::check(value) {
                        Ok(value) => Some(value),
                        Err(problem) => {
                            bad.push(number::bad_number(
                                "kernel metrics",
                                &format!("line {}", index + 1),
                                &column.name,
                                cells[i],
                                problem,
                            ));
                            None
                        }
                    }
                })
                .collect(),
            samples: 1,
        });
    }
    metrics.diagnostics = warnings.finish("unitrace metrics");
    bad.truncate(number::REPORTED_PER_FILE);
    metrics.diagnostics.extend(bad);
    metrics
}

/// The columns of a metric header: `Kernel` then `GlobalInstanceId` or `Device`.
fn metric_header(line: &str) -> Option<Vec<&str>> {
    if !line.starts_with("Kernel,") {
        return None;
    }
    let mut columns: Vec<&str> = line.split(',').map(str::trim).collect();
    if columns.last() == Some(&"") {
        columns.pop();
    }
    matches!(columns.get(1), Some(&"GlobalInstanceId") | Some(&"Device")).then_some(columns)
}

fn block_for(columns: &[&str], device: Option<u32>, trailing_comma: bool) -> (MetricBlock, Layout) {
    // Positions are of cells after the name (column 0).
    let at = |name: &str| columns.iter().position(|c| *c == name).map(|i| i - 1);
    let identity = ["Kernel", "GlobalInstanceId", "SubDeviceId", "Device"];
    let metric_cells: Vec<usize> = (1..columns.len())
        .filter(|&i| !identity.contains(&columns[i]))
        .map(|i| i - 1)
        .collect();
    let block = MetricBlock {
        device,
        mode: if columns.get(2) == Some(&"SubDeviceId") {
            MetricMode::Query
        } else {
            MetricMode::Sampling
        },
        columns: metric_cells
            .iter()
            .map(|&i| MetricColumn::parse(columns[i + 1]))
            .collect(),
        rows: Vec::new(),
    };
    let layout = Layout {
        cells: columns.len() - 1,
        instance: at("GlobalInstanceId"),
        sub_device: at("SubDeviceId"),
        device: at("Device"),
        metric_cells,
        trailing_comma,
    };
    (block, layout)
}

fn clip(line: &str) -> &str {
    match line.char_indices().nth(160) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP16: &str = include_str!("../../../tests/fixtures/unitrace/gemm_fp16_bytes.1799860");

    #[test]
    fn older_layout_reads_repeated_headers_as_one_block() {
        let m = parse_metrics(FP16);
        assert!(m.diagnostics.is_empty(), "{:?}", m.diagnostics);
        assert_eq!(m.blocks.len(), 1);
        let b = &m.blocks[0];
        assert_eq!(b.mode, MetricMode::Query);
        assert_eq!(b.rows.len(), 3);
        assert_eq!(
            b.columns[0],
            MetricColumn {
                name: "GpuTime".into(),
                unit: "ns".into()
            }
        );
        let names: Vec<&str> = b.rows.iter().map(|r| r.kernel.as_str()).collect();
        assert_eq!(
            names,
            [
                "binary_test[SIMD16 {1; 1; 1} {4; 2; 1}]",
                "hgemm_nocopy_nn_64x40_4x8[SIMD16 {56; 1; 1} {64; 8; 1}]",
                "hgemm_nocopy_nn_64x40_4x8[SIMD16 {56; 1; 1} {64; 8; 1}]",
            ]
        );
        let value = |row: usize, name: &str| b.rows[row].values[b.column(name).unwrap()];
        assert_eq!(value(1, "GpuTime"), Some(4733040.0));
        assert_eq!(value(1, "GPU_MEMORY_BYTE_READ"), Some(848934528.0));
        assert_eq!(value(1, "XVE_ACTIVE"), Some(90.354));
        assert_eq!(value(0, "XVE_ACTIVE"), Some(6.89741e-06));
        assert_eq!(value(2, "ReportContextMismatch"), Some(0.0));
        assert_eq!(b.rows[1].device, Some(0));
        assert_eq!(b.rows[1].sub_device, Some(0));
        assert_eq!(b.rows[1].instance_id, None);
    }

    #[test]
    fn query_files_read_quoted_names_instances_and_devices() {
        // The shape `ze_collector.h` writes (pti-gpu fcd0ca8): a device banner, a header, one
        // row per instance and sub-device, a blank line after each instance.
        let text = "\n=== Device #0 Metrics ===\n\nKernel,GlobalInstanceId,SubDeviceId,GpuTime[ns],XVE_ACTIVE[%]\n\
            \"f(int, float)[SIMD32 {4; 1; 1} {256; 1; 1}]\",7,0,1500,80.5\n\n\
            \"f(int, float)[SIMD32 {4; 1; 1} {256; 1; 1}]\",7,1,1400,\n\n\
            \"g\",8,0\n";
        let m = parse_metrics(text);
        let b = &m.blocks[0];
        assert_eq!((b.device, b.mode), (Some(0), MetricMode::Query));
        assert_eq!(b.rows.len(), 2);
        assert_eq!(
            b.rows[0].kernel,
            "f(int, float)[SIMD32 {4; 1; 1} {256; 1; 1}]"
        );
        assert_eq!(
            (b.rows[0].instance_id, b.rows[1].sub_device),
            (Some(7), Some(1))
        );
        assert_eq!(b.rows[1].values, [Some(1400.0), None]);
        assert_eq!(m.diagnostics.len(), 1, "the short `g` row is reported");
    }

    #[test]
    fn sampling_headers_use_comma_space() {
        let text = "Kernel, GlobalInstanceId, GpuTime[ns], XVE_STALL[%]\nGEMM, 3, 10, 2.5\n";
        let b = &parse_metrics(text).blocks[0];
        assert_eq!(b.mode, MetricMode::Sampling);
        assert_eq!(b.rows[0].instance_id, Some(3));
        assert_eq!(b.rows[0].values, [Some(10.0), Some(2.5)]);
    }

    #[test]
    fn timing_tables_are_not_metrics() {
        let text = "Kernel, Calls, Time (ns)\nGEMM, 4, 10\n";
        assert!(parse_metrics(text).blocks.is_empty());
    }
}
