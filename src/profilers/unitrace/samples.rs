//! Time-based metric samples (`--metric-sampling`, what `ocl-unitrace` collects) folded into
//! one row per kernel instance, the shape `--metric-query` gives on the Level Zero path, so both
//! APIs produce one record per launch with the launch's figures.
//!
//! unitrace writes one row per sample (every `--sampling-interval`, 50 µs by default) whose
//! timestamp falls inside a kernel instance, all with that instance's `GlobalInstanceId`
//! (`ComputeMetricsSampled` in `tools/unitrace/src/levelzero/ze_metrics.h`, pti-gpu fcd0ca8),
//! and with idle sampling rows named `NoKernel` / `NoKernel(Before <kernel>)` for samples
//! between kernels. How a column folds follows its unit:
//!
//! - counts (`ns`, `cycles`, `events`, `messages`, `bytes`, `threads`) add up: the instance's
//!   total over its samples (`GpuTime` becomes the sampled GPU time);
//! - `QueryBeginTime` keeps the first sample's timestamp;
//! - percentages, frequencies and any other rate are the mean over the samples, weighted by each
//!   sample's `GpuTime` when every sample has one (a cut-off last sample counts less);
//! - unitless columns (report flags such as `ReportLost`) keep the largest value.

use std::collections::HashMap;

use super::metrics::{MetricBlock, MetricColumn, MetricMode, MetricRow, Metrics};

/// Units whose values are counts over the sample's window.
const COUNT_UNITS: &[&str] = &["ns", "cycles", "events", "messages", "bytes", "threads"];

/// Whether a row is an idle sample (no kernel ran), not a kernel instance.
pub fn is_idle_sample(kernel: &str) -> bool {
    let name = kernel.trim_matches('"');
    name == "NoKernel" || name.starts_with("NoKernel(")
}

#[derive(Clone, Copy)]
enum Fold {
    Sum,
    First,
    Mean,
    Max,
}

fn fold_of(column: &MetricColumn) -> Fold {
    if column.name == "QueryBeginTime" {
        Fold::First
    } else if COUNT_UNITS.contains(&column.unit.as_str()) {
        Fold::Sum
    } else if column.unit.is_empty() {
        Fold::Max
    } else {
        Fold::Mean
    }
}

/// Every sampling block of `metrics` with its samples folded to one row per kernel instance
/// (in order of first sample) and its idle samples dropped; query blocks are left as they are.
pub fn fold_samples(mut metrics: Metrics) -> Metrics {
    for block in &mut metrics.blocks {
        if block.mode == MetricMode::Sampling {
            block.rows = fold_block(block);
        }
    }
    metrics
}

fn fold_block(block: &MetricBlock) -> Vec<MetricRow> {
    let mut groups: Vec<Vec<&MetricRow>> = Vec::new();
    let mut index: HashMap<(&str, u64), usize> = HashMap::new();
    for row in block.rows.iter().filter(|r| !is_idle_sample(&r.kernel)) {
        // A row without an instance id stands alone: nothing says it belongs with another.
        let Some(id) = row.instance_id else {
            groups.push(vec![row]);
            continue;
        };
        match index.get(&(row.kernel.as_str(), id)) {
            Some(&at) => groups[at].push(row),
            None => {
                index.insert((row.kernel.as_str(), id), groups.len());
                groups.push(vec![row]);
            }
        }
    }
    let folds: Vec<Fold> = block.columns.iter().map(fold_of).collect();
    let weight_column = block.column("GpuTime");
    groups
        .iter()
        .map(|rows| fold_rows(rows, &folds, weight_column))
        .collect()
}

fn fold_rows(rows: &[&MetricRow], folds: &[Fold], weight_column: Option<usize>) -> MetricRow {
    let first = rows[0];
    let weights: Option<Vec<f64>> = weight_column.and_then(|w| {
        rows.iter()
            .map(|r| r.values.get(w).copied().flatten().filter(|v| *v > 0.0))
            .collect()
    });
    let values = folds
        .iter()
        .enumerate()
        .map(|(column, fold)| {
            let cells: Vec<(f64, f64)> = rows
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    let value = r.values.get(column).copied().flatten()?;
                    let weight = weights.as_ref().map_or(1.0, |w| w[i]);
                    Some((value, weight))
                })
                .collect();
            if cells.is_empty() {
                return None;
            }
            Some(match fold {
                Fold::Sum => cells.iter().map(|(v, _)| v).sum(),
                Fold::First => cells[0].0,
                Fold::Max => cells.iter().map(|(v, _)| *v).fold(f64::MIN, f64::max),
                Fold::Mean => {
                    let total: f64 = cells.iter().map(|(_, w)| w).sum();
                    cells.iter().map(|(v, w)| v * w).sum::<f64>() / total
                }
            })
        })
        .collect();
    MetricRow {
        kernel: first.kernel.clone(),
        instance_id: first.instance_id,
        sub_device: first.sub_device,
        device: first.device,
        values,
        samples: rows.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::metrics::parse_metrics;
    use super::*;

    /// The layout `ComputeMetricsSampled` writes: `Kernel, GlobalInstanceId, <metrics>` with
    /// `", "`, a blank line after each instance's samples, idle samples between kernels.
    const SAMPLED: &str = "\nKernel, GlobalInstanceId, GpuTime[ns], GpuCoreClocks[cycles], \
        AvgGpuCoreFrequencyMHz[MHz], XVE_ACTIVE[%], XVE_STALL[%], GPU_MEMORY_BYTE_READ[bytes], \
        QueryBeginTime[ns], ReportLost\n\
        \"NoKernel(Before GEMM)\", 1000001, 50000, 80000, 1600, 0, 0, 0, 900, 0\n\n\
        GEMM, 3, 50000, 80000, 1600, 80, 10, 1000, 1000, 0\n\
        GEMM, 3, 50000, 80000, 1600, 60, 20, 3000, 1050, 1\n\
        GEMM, 3, 25000, 40000, 1500, 90, 0, 500, 1100, 0\n\n\
        GEMM, 4, 50000, 80000, 1600, 70, 5, 2000, 2000, 0\n\n\
        copy, 5, 10000, , 1600, 10, 1, 0, 3000, 0\n";

    #[test]
    fn samples_fold_to_one_row_per_instance() {
        let metrics = fold_samples(parse_metrics(SAMPLED));
        assert!(metrics.diagnostics.is_empty(), "{:?}", metrics.diagnostics);
        let b = &metrics.blocks[0];
        let kernels: Vec<(&str, Option<u64>, usize)> = b
            .rows
            .iter()
            .map(|r| (r.kernel.as_str(), r.instance_id, r.samples))
            .collect();
        assert_eq!(
            kernels,
            [
                ("GEMM", Some(3), 3),
                ("GEMM", Some(4), 1),
                ("copy", Some(5), 1)
            ]
        );
        let value = |row: usize, name: &str| b.rows[row].values[b.column(name).unwrap()];
        // Counts add up.
        assert_eq!(value(0, "GpuTime"), Some(125000.0));
        assert_eq!(value(0, "GpuCoreClocks"), Some(200000.0));
        assert_eq!(value(0, "GPU_MEMORY_BYTE_READ"), Some(4500.0));
        // Rates are means weighted by each sample's GPU time: (80·2 + 60·2 + 90·1) / 5.
        assert_eq!(value(0, "XVE_ACTIVE"), Some(74.0));
        assert_eq!(value(0, "XVE_STALL"), Some(12.0));
        assert_eq!(value(0, "AvgGpuCoreFrequencyMHz"), Some(1580.0));
        // The first sample's timestamp; a flag raised by any sample.
        assert_eq!(value(0, "QueryBeginTime"), Some(1000.0));
        assert_eq!(value(0, "ReportLost"), Some(1.0));
        // One sample: the values as printed; an empty cell stays empty.
        assert_eq!(value(1, "XVE_ACTIVE"), Some(70.0));
        assert_eq!(value(2, "GpuCoreClocks"), None);
    }

    #[test]
    fn query_rows_and_rows_without_instances_are_kept() {
        let query = "Kernel,GlobalInstanceId,SubDeviceId,GpuTime[ns]\n\"k\",7,0,10\n\"k\",7,1,11\n";
        let metrics = fold_samples(parse_metrics(query));
        assert_eq!(metrics.blocks[0].rows.len(), 2);
        let bare = "Kernel, GlobalInstanceId, GpuTime[ns]\nGEMM, x, 10\nGEMM, x, 12\n";
        let metrics = fold_samples(parse_metrics(bare));
        assert_eq!(metrics.blocks[0].rows.len(), 2);
        assert!(is_idle_sample("\"NoKernel\""));
        assert!(!is_idle_sample("NoKernelAtAll"));
    }
}
