//! [`KeyAverages`] as a terminal table, fitted to a width by [`crate::results::fit`].

use crate::results::aggregate::{GroupBy, KeyAverage, KeyAverages, SortBy};
use crate::results::fit::{Column, Fitted, Shrink, fit};
use crate::results::names::{fit_names, truncate_left};
use crate::results::units;

/// What goes when the table is too wide, in this order; each can be read off what stays.
const SHRINKS: &[Shrink] = &[
    // total / calls
    Shrink::Drop(&["CPU mean", "GPU mean"]),
    // GB/s × GPU total
    Shrink::Drop(&["DRAM bytes"]),
    // % of the peaks the header names
    Shrink::Drop(&["GFLOP/s", "GB/s"]),
    Shrink::Merge {
        left: "% peak BW",
        right: "% peak FLOP",
        header: "% peak BW/FLOP",
    },
    // a run's launches, one a row
    Shrink::DropConstant("Calls"),
];

impl KeyAverage {
    /// The Bound cell: the launches' verdict, and how many of them share it when they
    /// disagree (`compute (LSU); 3 of 4`).
    pub fn bound_cell(&self) -> String {
        let mut cell = self.bound_cell_text();
        // The profiler's own advice, a short line under the verdict.
        if let Some(line) = &self.rule_line {
            cell.push('\n');
            cell.push_str(line);
        }
        cell
    }

    /// The verdict part of [`bound_cell`](Self::bound_cell), without the rule line.
    pub fn bound_cell_text(&self) -> String {
        let mut cell = self.roofline.bound_label();
        if self.verdicts.len() > 1 {
            let all: u64 = self.verdicts.iter().map(|v| v.launches).sum();
            let first = self.verdicts[0].launches;
            cell = format!("{cell}; {first} of {all}");
        }
        cell
    }
}

impl KeyAverages {
    /// A terminal table in `sort_by` order. Columns appear only when some row has data for
    /// them: CPU and GPU total/mean, DRAM bytes, GFLOP/s, GB/s, and with peaks % of peak
    /// bandwidth, % of peak compute and the bound.
    pub fn table(&self, sort_by: SortBy) -> String {
        self.table_fitted(sort_by, None).table
    }

    /// Whether the launches of some row got different verdicts.
    pub fn has_mixed_verdicts(&self) -> bool {
        self.rows.iter().any(|r| r.verdicts.len() > 1)
    }

    /// [`table`](Self::table) at most `width` characters wide when it can be (see
    /// [`fit`]): derivable columns go first, then the Bound column wraps and names are
    /// shortened (never below 24 characters). `None`: every column, full names.
    pub fn table_fitted(&self, sort_by: SortBy, width: Option<usize>) -> Fitted {
        let rows = self.sorted(sort_by);
        let any = |f: &dyn Fn(&KeyAverage) -> bool| rows.iter().any(|r| f(r));
        let has_cpu = any(&|r| r.cpu_total_ns.is_some());
        let has_gpu = any(&|r| r.gpu_total_ns.is_some());
        let has_bytes = any(&|r| r.bytes.is_some());
        let has_flops = any(&|r| r.roofline.gflops_per_s.is_some());
        let has_gbps = any(&|r| r.roofline.gb_per_s.is_some());
        let has_peaks = self.peaks.is_some() && has_gpu;

        let time = |v: Option<f64>| units::or_dash(v.map(units::time_ns));
        let num = |v: Option<f64>, f: fn(f64) -> String| units::or_dash(v.map(f));
        type Cell<'a> = Box<dyn Fn(&KeyAverage) -> String + 'a>;
        let mut wanted: Vec<(&str, bool, Cell)> = vec![
            ("Name", false, Box::new(|r: &KeyAverage| r.label())),
            (
                "Calls",
                true,
                Box::new(|r: &KeyAverage| r.calls.to_string()),
            ),
        ];
        if has_cpu {
            wanted.push(("CPU total", true, Box::new(move |r| time(r.cpu_total_ns))));
            wanted.push(("CPU mean", true, Box::new(move |r| time(r.cpu_mean_ns))));
        }
        if has_gpu {
            wanted.push(("GPU total", true, Box::new(move |r| time(r.gpu_total_ns))));
            wanted.push(("GPU mean", true, Box::new(move |r| time(r.gpu_mean_ns))));
        }
        if has_bytes {
            wanted.push((
                "DRAM bytes",
                true,
                Box::new(move |r| num(r.bytes, units::bytes)),
            ));
        }
        if has_flops {
            wanted.push((
                "GFLOP/s",
                true,
                Box::new(move |r| num(r.roofline.gflops_per_s, units::rate)),
            ));
        }
        if has_gbps {
            wanted.push((
                "GB/s",
                true,
                Box::new(move |r| num(r.roofline.gb_per_s, units::rate)),
            ));
        }
        if has_peaks {
            wanted.push((
                "% peak BW",
                true,
                Box::new(move |r| pct_cell(r.roofline.pct_peak_bandwidth)),
            ));
            wanted.push((
                "% peak FLOP",
                true,
                Box::new(move |r| pct_cell(r.roofline.pct_peak_compute)),
            ));
            // The bound is words, left-aligned.
            wanted.push(("Bound", false, Box::new(KeyAverage::bound_cell)));
        }
        let columns = wanted
            .into_iter()
            .map(|(header, numeric, cell)| Column {
                cells: rows.iter().map(|r| cell(r)).collect(),
                ..Column::new(header, numeric)
            })
            .collect();
        let shorten = match self.group_by {
            GroupBy::CallPath => |paths: &[String], width: usize| -> Vec<String> {
                paths.iter().map(|p| truncate_left(p, width)).collect()
            },
            // Fitted together, so that kernels whose names differ only inside stay apart.
            GroupBy::Name => fit_names,
        };
        fit(columns, SHRINKS, width, shorten)
    }
}

/// A share of peak; above 100 % (which no kernel reaches) marked `!` for the warning below the
/// table.
fn pct_cell(pct: Option<f64>) -> String {
    match pct {
        Some(p) if p > 100.0 => format!("{}!", units::pct(p)),
        p => units::or_dash(p.map(units::pct)),
    }
}
