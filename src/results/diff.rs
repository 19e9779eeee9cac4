//! Kernel-by-kernel comparison of two runs. Kernels are matched by full name and launch order:
//! the n-th launch of kernel X in A against the n-th launch of X in B. A matched kernel whose GPU
//! time grew by more than the threshold is a regression.

use std::collections::BTreeMap;

use comfy_table::{CellAlignment, Table, presets};
use serde::{Deserialize, Serialize};

use crate::model::record::KernelRecord;
use crate::model::run::ProfileRun;
use crate::results::units;

/// Default regression threshold, percent of A's GPU time.
pub const DEFAULT_THRESHOLD_PCT: f64 = 5.0;

/// One kernel launch as seen in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub launch_id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_time_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gflops_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gb_per_s: Option<f64>,
}

impl Side {
    fn of(record: &KernelRecord) -> Self {
        Side {
            launch_id: record.launch_id,
            gpu_time_ns: record.duration_ns,
            gflops_per_s: record.gflops_per_s(),
            gb_per_s: record.dram_gb_per_s(),
        }
    }
}

/// The verdict on one matched pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// GPU time grew by more than the threshold.
    Regressed,
    /// GPU time shrank by more than the threshold.
    Improved,
    /// Within the threshold.
    Unchanged,
    /// One side has no GPU time; nothing to compare.
    NoTime,
}

/// A matched pair: the `occurrence`-th launch (from 0) of `name` in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelChange {
    pub name: String,
    pub short_name: String,
    pub occurrence: usize,
    pub a: Side,
    pub b: Side,
    /// (B − A) / A × 100 of GPU time; positive is slower.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_time_change_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gflops_change_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gbps_change_pct: Option<f64>,
    pub change: Change,
}

/// A launch present in only one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unmatched {
    pub name: String,
    pub short_name: String,
    pub occurrence: usize,
    pub side: Side,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDiff {
    pub a: String,
    pub b: String,
    pub threshold_pct: f64,
    pub kernels: Vec<KernelChange>,
    /// Launches of A with no counterpart in B.
    pub only_in_a: Vec<Unmatched>,
    /// Launches of B with no counterpart in A.
    pub only_in_b: Vec<Unmatched>,
    /// GPU time of the matched launches, per run.
    pub matched_gpu_time_a_ns: f64,
    pub matched_gpu_time_b_ns: f64,
    pub regressions: usize,
    pub improvements: usize,
}

impl RunDiff {
    pub fn regressed(&self) -> bool {
        self.regressions > 0
    }
}

fn change_pct(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 => Some(100.0 * (b - a) / a),
        _ => None,
    }
}

/// Launches grouped by full name, each group in launch order.
fn by_name(run: &ProfileRun) -> BTreeMap<&str, Vec<&KernelRecord>> {
    let mut groups: BTreeMap<&str, Vec<&KernelRecord>> = BTreeMap::new();
    for record in &run.kernels {
        groups.entry(record.name.as_str()).or_default().push(record);
    }
    for group in groups.values_mut() {
        // Stable: records with equal ids (several processes) keep their file order.
        group.sort_by_key(|r| r.launch_id);
    }
    groups
}

/// Compare `a` (baseline) with `b` (candidate).
pub fn diff_runs(a: &ProfileRun, b: &ProfileRun, threshold_pct: f64) -> RunDiff {
    let groups_a = by_name(a);
    let groups_b = by_name(b);
    let mut diff = RunDiff {
        a: a.label.clone(),
        b: b.label.clone(),
        threshold_pct,
        kernels: Vec::new(),
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        matched_gpu_time_a_ns: 0.0,
        matched_gpu_time_b_ns: 0.0,
        regressions: 0,
        improvements: 0,
    };
    let unmatched = |record: &KernelRecord, occurrence| Unmatched {
        name: record.name.clone(),
        short_name: record.short_name.clone(),
        occurrence,
        side: Side::of(record),
    };
    for (name, launches_a) in &groups_a {
        let launches_b = groups_b.get(name).map(Vec::as_slice).unwrap_or(&[]);
        for (occurrence, record_a) in launches_a.iter().enumerate() {
            let Some(record_b) = launches_b.get(occurrence) else {
                diff.only_in_a.push(unmatched(record_a, occurrence));
                continue;
            };
            let (side_a, side_b) = (Side::of(record_a), Side::of(record_b));
            let time = change_pct(side_a.gpu_time_ns, side_b.gpu_time_ns);
            let change = match time {
                None => Change::NoTime,
                Some(pct) if pct > threshold_pct => Change::Regressed,
                Some(pct) if pct < -threshold_pct => Change::Improved,
                Some(_) => Change::Unchanged,
            };
            if let (Some(ta), Some(tb)) = (side_a.gpu_time_ns, side_b.gpu_time_ns) {
                diff.matched_gpu_time_a_ns += ta;
                diff.matched_gpu_time_b_ns += tb;
            }
            match change {
                Change::Regressed => diff.regressions += 1,
                Change::Improved => diff.improvements += 1,
                _ => {}
            }
            diff.kernels.push(KernelChange {
                name: name.to_string(),
                short_name: record_a.short_name.clone(),
                occurrence,
                gpu_time_change_pct: time,
                gflops_change_pct: change_pct(side_a.gflops_per_s, side_b.gflops_per_s),
                gbps_change_pct: change_pct(side_a.gb_per_s, side_b.gb_per_s),
                a: side_a,
                b: side_b,
                change,
            });
        }
    }
    for (name, launches_b) in &groups_b {
        let matched = groups_a.get(name).map_or(0, Vec::len);
        for (occurrence, record) in launches_b.iter().enumerate().skip(matched) {
            diff.only_in_b.push(unmatched(record, occurrence));
        }
    }
    // Report in A's launch order.
    diff.kernels.sort_by_key(|k| k.a.launch_id);
    diff
}

fn signed_pct(value: Option<f64>) -> String {
    units::or_dash(value.map(|v| format!("{v:+.1} %")))
}

impl RunDiff {
    /// A terminal table of the comparison, then the unmatched launches and a verdict line.
    pub fn render(&self) -> String {
        let mut table = Table::new();
        table.load_style(presets::UTF8_FULL_CONDENSED);
        table.set_header([
            "Kernel",
            "#",
            "GPU time A",
            "GPU time B",
            "Δ time",
            "GFLOP/s A",
            "GFLOP/s B",
            "GB/s A",
            "GB/s B",
            "Change",
        ]);
        for kernel in &self.kernels {
            let time = |v: Option<f64>| units::or_dash(v.map(units::time_ns));
            let rate = |v: Option<f64>| units::or_dash(v.map(units::rate));
            table.add_row(vec![
                kernel.short_name.clone(),
                kernel.occurrence.to_string(),
                time(kernel.a.gpu_time_ns),
                time(kernel.b.gpu_time_ns),
                signed_pct(kernel.gpu_time_change_pct),
                rate(kernel.a.gflops_per_s),
                rate(kernel.b.gflops_per_s),
                rate(kernel.a.gb_per_s),
                rate(kernel.b.gb_per_s),
                format!("{:?}", kernel.change)
                    .to_lowercase()
                    .replace("notime", "no time"),
            ]);
        }
        for index in 1..9 {
            if let Some(column) = table.column_mut(index) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut text = format!("A = {}, B = {}\n{table}\n", self.a, self.b);
        for (label, list) in [
            ("only in A", &self.only_in_a),
            ("only in B", &self.only_in_b),
        ] {
            for launch in list {
                text.push_str(&format!(
                    "{label}: {} #{} ({})\n",
                    launch.short_name,
                    launch.occurrence,
                    units::or_dash(launch.side.gpu_time_ns.map(units::time_ns))
                ));
            }
        }
        let total = change_pct(
            Some(self.matched_gpu_time_a_ns),
            Some(self.matched_gpu_time_b_ns),
        );
        text.push_str(&format!(
            "matched GPU time {} → {} ({}); {} regressed, {} improved beyond ±{} %\n",
            units::time_ns(self.matched_gpu_time_a_ns),
            units::time_ns(self.matched_gpu_time_b_ns),
            signed_pct(total),
            self.regressions,
            self.improvements,
            self.threshold_pct
        ));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, kernels: &[(&str, u64, f64)]) -> ProfileRun {
        let mut run = ProfileRun::new(label, "ncu", &[], std::path::Path::new("x"));
        for (name, id, time) in kernels {
            run.kernels.push(KernelRecord {
                name: name.to_string(),
                short_name: name.to_string(),
                launch_id: *id,
                duration_ns: Some(*time),
                calls: 1,
                ..Default::default()
            });
        }
        run
    }

    #[test]
    fn launches_match_by_name_and_order() {
        let a = run("a", &[("k", 0, 100.0), ("m", 1, 50.0), ("k", 2, 100.0)]);
        let b = run(
            "b",
            &[
                ("m", 0, 50.0),
                ("k", 1, 100.0),
                ("k", 2, 120.0),
                ("k", 3, 9.0),
            ],
        );
        let diff = diff_runs(&a, &b, 5.0);
        assert_eq!(diff.kernels.len(), 3);
        let second_k = diff
            .kernels
            .iter()
            .find(|k| k.name == "k" && k.occurrence == 1)
            .unwrap();
        assert_eq!(second_k.change, Change::Regressed);
        assert!((second_k.gpu_time_change_pct.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(diff.only_in_b.len(), 1);
        assert_eq!(diff.only_in_b[0].occurrence, 2);
        assert!(diff.only_in_a.is_empty());
        assert!(diff.regressed());
        assert!(diff.render().contains("only in B: k #2"));
    }

    #[test]
    fn threshold_decides() {
        let a = run("a", &[("k", 0, 100.0)]);
        let b = run("b", &[("k", 0, 104.0)]);
        assert!(!diff_runs(&a, &b, 5.0).regressed());
        assert!(diff_runs(&a, &b, 3.0).regressed());
        assert_eq!(diff_runs(&b, &a, 3.0).improvements, 1);
    }
}
