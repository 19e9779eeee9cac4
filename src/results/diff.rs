//! A noise-aware comparison of two runs for CI gates.
//!
//! Kernels are grouped per run by name and launch configuration (grid, block); each group is
//! summarized over its launches ([`Stats`]: min, median, p90, IQR, count) and the medians are
//! compared. A change counts only when it is beyond the relative threshold AND beyond an
//! absolute floor (µs-scale kernels move by a few hundred ns from launch to launch; twice that
//! for a kernel with fewer than 3 launches on a side, whose "median" is one sample) AND, when
//! both sides have repeated launches, the medians' gap is wider than both sides' interquartile
//! ranges. Runs without kernel times compare their wall time and process steps instead.

use std::collections::BTreeMap;

use comfy_table::{CellAlignment, Table, presets};
use serde::{Deserialize, Serialize};

use crate::model::record::KernelRecord;
use crate::model::run::ProfileRun;
use crate::results::names::{MIN_NAME_WIDTH, fit_names};
use crate::results::stats::Stats;
use crate::results::units;

/// Default regression threshold, percent of A's median GPU time.
pub const DEFAULT_THRESHOLD_PCT: f64 = 5.0;
/// Default absolute floor: a median that moved by less than this never counts.
pub const DEFAULT_FLOOR_NS: f64 = 500.0;
/// A side with fewer launches than this has no median worth the name (one launch is one sample),
/// so its kernel's floor is [`FEW_LAUNCHES_FLOOR_FACTOR`] times the floor. On the H200, two runs
/// of one Triton pytest moved single launches of 5–8 µs kernels by up to 0.51 µs (a cuBLAS
/// `nvjet_sm90_hsh` 7.10 → 7.62 µs, +7.2 %), medians of 2–4 launches by at most 0.15 µs.
pub const FEW_LAUNCHES: usize = 3;
pub const FEW_LAUNCHES_FLOOR_FACTOR: f64 = 2.0;

/// How to compare.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DiffOptions {
    /// Relative threshold, percent of A's median.
    pub threshold_pct: f64,
    /// Absolute floor, ns: smaller moves of the median never count.
    pub floor_ns: f64,
    /// Kernels whose median is below this on both sides are left out (ns).
    pub min_duration_ns: f64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            threshold_pct: DEFAULT_THRESHOLD_PCT,
            floor_ns: DEFAULT_FLOOR_NS,
            min_duration_ns: 0.0,
        }
    }
}

/// One kernel (name + launch configuration) as seen in one run: its launches' spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// Launches with a GPU time.
    pub count: usize,
    /// Median GPU time over the launches, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_time_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p90_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iqr_ns: Option<f64>,
    /// Sum over the launches, ns.
    pub total_ns: f64,
    /// Over all launches: total FLOPs / total GPU time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gflops_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gb_per_s: Option<f64>,
}

impl Side {
    fn of(records: &[&KernelRecord]) -> Self {
        let times: Vec<f64> = records
            .iter()
            .filter_map(|r| r.duration_ns)
            .filter(|t| t.is_finite())
            .collect();
        let stats = Stats::from_samples(&times).ok();
        let total_ns: f64 = times.iter().sum();
        let sum = |value: fn(&KernelRecord) -> Option<f64>| {
            let parts: Vec<f64> = records.iter().filter_map(|r| value(r)).collect();
            (!parts.is_empty()).then(|| parts.iter().sum::<f64>())
        };
        let per_ns = |amount: Option<f64>| amount.filter(|_| total_ns > 0.0).map(|a| a / total_ns);
        Side {
            count: times.len(),
            gpu_time_ns: stats.map(|s| s.median),
            min_ns: stats.map(|s| s.min),
            p90_ns: stats.map(|s| s.p90),
            iqr_ns: stats.map(|s| s.iqr),
            total_ns,
            gflops_per_s: per_ns(sum(KernelRecord::total_flops)),
            gb_per_s: per_ns(sum(KernelRecord::total_dram_bytes)),
        }
    }
}

/// The verdict on one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The median grew beyond the threshold, the floor and (with repeats) both IQRs.
    Regressed,
    /// The median shrank likewise.
    Improved,
    /// Within the threshold.
    Unchanged,
    /// Beyond the threshold but under the absolute floor, or inside the launches' spread.
    Noise,
    /// One side has no GPU time; nothing to compare.
    NoTime,
}

impl Change {
    pub fn as_str(&self) -> &'static str {
        match self {
            Change::Regressed => "regressed",
            Change::Improved => "improved",
            Change::Unchanged => "unchanged",
            Change::Noise => "noise",
            Change::NoTime => "no time",
        }
    }
}

/// One kernel matched in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelChange {
    pub name: String,
    pub short_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<[u64; 3]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<[u64; 3]>,
    pub a: Side,
    pub b: Side,
    /// (median B − median A) / median A × 100; positive is slower.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_time_change_pct: Option<f64>,
    /// median B − median A, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_time_change_ns: Option<f64>,
    /// Whether the significance check applied (both sides had repeated launches) and passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub significant: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gflops_change_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gbps_change_pct: Option<f64>,
    pub change: Change,
}

/// A kernel present in only one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unmatched {
    pub name: String,
    pub short_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<[u64; 3]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<[u64; 3]>,
    pub side: Side,
}

/// One process step in both runs (for runs without kernels).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepChange {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_accepted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_accepted: Option<bool>,
    /// Accepted in A, not accepted (or missing) in B.
    pub regressed: bool,
}

/// Wall time of the two runs' main steps, seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WallChange {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_pct: Option<f64>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDiff {
    pub a: String,
    pub b: String,
    pub threshold_pct: f64,
    pub floor_ns: f64,
    pub min_duration_ns: f64,
    /// GPU time of every kernel launch, per run, and its change: the headline.
    pub gpu_time_a_ns: f64,
    pub gpu_time_b_ns: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_time_change_pct: Option<f64>,
    pub kernels: Vec<KernelChange>,
    /// Kernels of A with no counterpart in B.
    pub only_in_a: Vec<Unmatched>,
    /// Kernels of B with no counterpart in A.
    pub only_in_b: Vec<Unmatched>,
    /// Kernels left out by `min_duration_ns`.
    pub filtered: usize,
    /// GPU time of the matched kernels, per run.
    pub matched_gpu_time_a_ns: f64,
    pub matched_gpu_time_b_ns: f64,
    pub wall: WallChange,
    /// The process steps of both runs; the comparison itself when neither has kernel times.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepChange>,
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

type Key<'a> = (&'a str, Option<[u64; 3]>, Option<[u64; 3]>);

/// Launches grouped by name and launch configuration.
fn groups(run: &ProfileRun) -> BTreeMap<Key<'_>, Vec<&KernelRecord>> {
    let mut groups: BTreeMap<Key<'_>, Vec<&KernelRecord>> = BTreeMap::new();
    for record in &run.kernels {
        groups
            .entry((record.name.as_str(), record.grid, record.block))
            .or_default()
            .push(record);
    }
    groups
}

/// The verdict on two sides, by the rules in the module documentation.
fn judge(a: &Side, b: &Side, options: &DiffOptions) -> (Change, Option<bool>) {
    let (Some(median_a), Some(median_b)) = (a.gpu_time_ns, b.gpu_time_ns) else {
        return (Change::NoTime, None);
    };
    let Some(pct) = change_pct(Some(median_a), Some(median_b)) else {
        return (Change::NoTime, None);
    };
    if pct.abs() <= options.threshold_pct {
        return (Change::Unchanged, None);
    }
    let gap = (median_b - median_a).abs();
    let significant = (a.count > 1 && b.count > 1)
        .then(|| gap > a.iqr_ns.unwrap_or(0.0) && gap > b.iqr_ns.unwrap_or(0.0));
    let floor = if a.count < FEW_LAUNCHES || b.count < FEW_LAUNCHES {
        options.floor_ns * FEW_LAUNCHES_FLOOR_FACTOR
    } else {
        options.floor_ns
    };
    if gap < floor || significant == Some(false) {
        return (Change::Noise, significant);
    }
    let change = if pct > 0.0 {
        Change::Regressed
    } else {
        Change::Improved
    };
    (change, significant)
}

/// Wall time of a run's main step, seconds: the attempt whose outcome is the run's.
fn wall_s(run: &ProfileRun) -> Option<f64> {
    let outcome = run.outcome.as_ref()?;
    run.steps
        .iter()
        .rev()
        .flat_map(|s| s.attempts.iter().rev())
        .find(|a| &a.outcome == outcome)
        .map(|a| a.timings.end_s)
}

fn step_changes(a: &ProfileRun, b: &ProfileRun) -> Vec<StepChange> {
    let mut names: Vec<&str> = a.steps.iter().map(|s| s.name.as_str()).collect();
    for step in &b.steps {
        if !names.contains(&step.name.as_str()) {
            names.push(&step.name);
        }
    }
    let accepted = |run: &ProfileRun, name: &str| {
        run.steps
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.accepted)
    };
    // A document without any steps (`polyprof parse -o`: records read from saved output, no
    // process run) has nothing to compare a step with; only runs that both ran steps gate.
    let both_ran = !a.steps.is_empty() && !b.steps.is_empty();
    names
        .into_iter()
        .map(|name| {
            let (a_accepted, b_accepted) = (accepted(a, name), accepted(b, name));
            StepChange {
                name: name.to_string(),
                a_accepted,
                b_accepted,
                regressed: both_ran && a_accepted == Some(true) && b_accepted != Some(true),
            }
        })
        .collect()
}

/// Compare `a` (baseline) with `b` (candidate).
pub fn diff_runs(a: &ProfileRun, b: &ProfileRun, options: &DiffOptions) -> RunDiff {
    let groups_a = groups(a);
    let groups_b = groups(b);
    let gpu_total = |run: &ProfileRun| run.kernels.iter().filter_map(|k| k.duration_ns).sum();
    let (gpu_time_a_ns, gpu_time_b_ns): (f64, f64) = (gpu_total(a), gpu_total(b));
    let (wall_a, wall_b) = (wall_s(a), wall_s(b));
    let mut diff = RunDiff {
        a: a.label.clone(),
        b: b.label.clone(),
        threshold_pct: options.threshold_pct,
        floor_ns: options.floor_ns,
        min_duration_ns: options.min_duration_ns,
        gpu_time_a_ns,
        gpu_time_b_ns,
        gpu_time_change_pct: change_pct(Some(gpu_time_a_ns), Some(gpu_time_b_ns)),
        kernels: Vec::new(),
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        filtered: 0,
        matched_gpu_time_a_ns: 0.0,
        matched_gpu_time_b_ns: 0.0,
        wall: WallChange {
            a_s: wall_a,
            b_s: wall_b,
            change_pct: change_pct(wall_a, wall_b),
        },
        steps: Vec::new(),
        regressions: 0,
        improvements: 0,
    };
    let short = |records: &[&KernelRecord]| {
        records
            .first()
            .map(|r| r.short_name.clone())
            .unwrap_or_default()
    };
    let below_min = |side: &Side| side.gpu_time_ns.unwrap_or(0.0) < options.min_duration_ns;
    // First launch id of each group in A, to report in A's launch order.
    let mut order: Vec<(u64, KernelChange)> = Vec::new();
    for (key, launches_a) in &groups_a {
        let side_a = Side::of(launches_a);
        let Some(launches_b) = groups_b.get(key) else {
            if below_min(&side_a) {
                diff.filtered += 1;
            } else {
                diff.only_in_a.push(unmatched(key, launches_a, side_a));
            }
            continue;
        };
        let side_b = Side::of(launches_b);
        if below_min(&side_a) && below_min(&side_b) {
            diff.filtered += 1;
            continue;
        }
        let (change, significant) = judge(&side_a, &side_b, options);
        diff.matched_gpu_time_a_ns += side_a.total_ns;
        diff.matched_gpu_time_b_ns += side_b.total_ns;
        match change {
            Change::Regressed => diff.regressions += 1,
            Change::Improved => diff.improvements += 1,
            _ => {}
        }
        let first_id = launches_a.iter().map(|r| r.launch_id).min().unwrap_or(0);
        order.push((
            first_id,
            KernelChange {
                name: key.0.to_string(),
                short_name: short(launches_a),
                grid: key.1,
                block: key.2,
                gpu_time_change_pct: change_pct(side_a.gpu_time_ns, side_b.gpu_time_ns),
                gpu_time_change_ns: side_a
                    .gpu_time_ns
                    .zip(side_b.gpu_time_ns)
                    .map(|(a, b)| b - a),
                significant,
                gflops_change_pct: change_pct(side_a.gflops_per_s, side_b.gflops_per_s),
                gbps_change_pct: change_pct(side_a.gb_per_s, side_b.gb_per_s),
                a: side_a,
                b: side_b,
                change,
            },
        ));
    }
    order.sort_by_key(|(id, _)| *id);
    diff.kernels = order.into_iter().map(|(_, k)| k).collect();
    for (key, launches_b) in &groups_b {
        if groups_a.contains_key(key) {
            continue;
        }
        let side = Side::of(launches_b);
        if below_min(&side) {
            diff.filtered += 1;
        } else {
            diff.only_in_b.push(unmatched(key, launches_b, side));
        }
    }
    // A step that stopped being accepted (the program or profiler now fails) always gates.
    diff.steps = step_changes(a, b);
    diff.regressions += diff.steps.iter().filter(|s| s.regressed).count();
    diff
}

fn unmatched(key: &Key<'_>, records: &[&KernelRecord], side: Side) -> Unmatched {
    Unmatched {
        name: key.0.to_string(),
        short_name: records
            .first()
            .map(|r| r.short_name.clone())
            .unwrap_or_default(),
        grid: key.1,
        block: key.2,
        side,
    }
}

fn signed_pct(value: Option<f64>) -> String {
    units::or_dash(value.map(|v| format!("{v:+.1} %")))
}

/// Columns the kernel name may not take: the other eight columns and the table's borders.
const OTHER_COLUMNS_WIDTH: usize = 100;

impl RunDiff {
    /// A terminal table `width` columns wide (kernel names shortened in the middle to fit;
    /// `None`: full names), after the GPU-time headline; then unmatched kernels and the verdict.
    pub fn render(&self, width: Option<usize>) -> String {
        let name_width = width.map(|w| w.saturating_sub(OTHER_COLUMNS_WIDTH).max(MIN_NAME_WIDTH));
        // Names are fitted together so that the shortened ones stay apart.
        let shown: std::collections::HashMap<String, String> = match name_width {
            Some(w) => {
                let mut names: Vec<String> = self
                    .kernels
                    .iter()
                    .map(|k| k.short_name.clone())
                    .chain(self.only_in_a.iter().map(|k| k.short_name.clone()))
                    .chain(self.only_in_b.iter().map(|k| k.short_name.clone()))
                    .collect();
                names.sort();
                names.dedup();
                let fitted = fit_names(&names, w);
                names.into_iter().zip(fitted).collect()
            }
            None => std::collections::HashMap::new(),
        };
        let show = |name: &str| shown.get(name).cloned().unwrap_or_else(|| name.to_string());
        let time = |v: Option<f64>| units::or_dash(v.map(units::time_ns));
        let spread = |side: &Side| match (side.min_ns, side.p90_ns) {
            (Some(min), Some(p90)) if side.count > 1 => {
                format!("{}–{}", units::time_ns(min), units::time_ns(p90))
            }
            _ => "-".to_string(),
        };
        let mut text = format!("A = {}, B = {}\n", self.a, self.b);
        text.push_str(&format!(
            "total GPU time {} → {} ({})",
            units::time_ns(self.gpu_time_a_ns),
            units::time_ns(self.gpu_time_b_ns),
            signed_pct(self.gpu_time_change_pct)
        ));
        if self.wall.a_s.is_some() || self.wall.b_s.is_some() {
            let secs = |v: Option<f64>| units::or_dash(v.map(|s| format!("{s:.2} s")));
            text.push_str(&format!(
                "; wall {} → {} ({})",
                secs(self.wall.a_s),
                secs(self.wall.b_s),
                signed_pct(self.wall.change_pct)
            ));
        }
        text.push('\n');
        if !self.kernels.is_empty() {
            let mut table = Table::new();
            table.load_style(presets::UTF8_FULL_CONDENSED);
            table.set_header([
                "Kernel",
                "n A",
                "n B",
                "median A",
                "median B",
                "Δ median",
                "min–p90 A",
                "min–p90 B",
                "Change",
            ]);
            for kernel in &self.kernels {
                let name = show(&kernel.short_name);
                table.add_row(vec![
                    name,
                    kernel.a.count.to_string(),
                    kernel.b.count.to_string(),
                    time(kernel.a.gpu_time_ns),
                    time(kernel.b.gpu_time_ns),
                    signed_pct(kernel.gpu_time_change_pct),
                    spread(&kernel.a),
                    spread(&kernel.b),
                    kernel.change.as_str().to_string(),
                ]);
            }
            for index in 1..8 {
                if let Some(column) = table.column_mut(index) {
                    column.set_cell_alignment(CellAlignment::Right);
                }
            }
            text.push_str(&format!("{table}\n"));
        }
        for (label, list) in [
            ("only in A", &self.only_in_a),
            ("only in B", &self.only_in_b),
        ] {
            for kernel in list {
                let name = show(&kernel.short_name);
                text.push_str(&format!(
                    "{label}: {name} ({} launches, median {})\n",
                    kernel.side.count,
                    time(kernel.side.gpu_time_ns)
                ));
            }
        }
        let show_steps =
            self.kernels.is_empty() && self.only_in_a.is_empty() && self.only_in_b.is_empty();
        for step in self.steps.iter().filter(|s| show_steps || s.regressed) {
            let state = |v: Option<bool>| match v {
                Some(true) => "accepted",
                Some(false) => "not accepted",
                None => "absent",
            };
            text.push_str(&format!(
                "step {}: {} → {}{}\n",
                step.name,
                state(step.a_accepted),
                state(step.b_accepted),
                if step.regressed { " (regressed)" } else { "" }
            ));
        }
        if self.filtered > 0 {
            text.push_str(&format!(
                "{} kernel(s) below --min-duration {} left out\n",
                self.filtered,
                units::time_ns(self.min_duration_ns)
            ));
        }
        text.push_str(&format!(
            "matched GPU time {} → {} ({}); {} regressed, {} improved beyond ±{} % and {} ({} \
             for kernels with fewer than {FEW_LAUNCHES} launches a side)\n",
            units::time_ns(self.matched_gpu_time_a_ns),
            units::time_ns(self.matched_gpu_time_b_ns),
            signed_pct(change_pct(
                Some(self.matched_gpu_time_a_ns),
                Some(self.matched_gpu_time_b_ns)
            )),
            self.regressions,
            self.improvements,
            self.threshold_pct,
            units::time_ns(self.floor_ns),
            units::time_ns(self.floor_ns * FEW_LAUNCHES_FLOOR_FACTOR)
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

    fn options(threshold_pct: f64) -> DiffOptions {
        DiffOptions {
            threshold_pct,
            ..Default::default()
        }
    }

    #[test]
    fn kernels_compare_by_median_over_their_launches() {
        let a = run(
            "a",
            &[("k", 0, 10_000.0), ("m", 1, 50_000.0), ("k", 2, 10_200.0)],
        );
        let b = run(
            "b",
            &[
                ("m", 0, 50_000.0),
                ("k", 1, 12_000.0),
                ("k", 2, 12_100.0),
                ("n", 3, 9_000.0),
            ],
        );
        let diff = diff_runs(&a, &b, &options(5.0));
        assert_eq!(diff.kernels.len(), 2);
        let k = diff.kernels.iter().find(|k| k.name == "k").unwrap();
        assert_eq!((k.a.count, k.b.count), (2, 2));
        assert_eq!(k.a.gpu_time_ns, Some(10_100.0));
        assert_eq!(k.b.gpu_time_ns, Some(12_050.0));
        // Gap 1,950 ns beyond both IQRs (100 and 50 ns): significant.
        assert_eq!(k.significant, Some(true));
        assert_eq!(k.change, Change::Regressed);
        assert_eq!(diff.only_in_b.len(), 1);
        assert!(diff.regressed());
        let text = diff.render(None);
        assert!(text.starts_with("A = a, B = b\ntotal GPU time"), "{text}");
        assert!(text.contains("only in B: n (1 launches"), "{text}");
    }

    #[test]
    fn kernels_with_few_launches_get_twice_the_floor() {
        // The H200 case: one launch of a 7.1 µs cuBLAS kernel moved 0.51 µs (+7.2 %) between two
        // runs of the same pytest.
        let a = run("a", &[("nvjet", 0, 7_104.0)]);
        let b = run("b", &[("nvjet", 0, 7_616.0)]);
        let single = diff_runs(&a, &b, &options(5.0));
        assert_eq!(single.kernels[0].change, Change::Noise);
        assert!(!single.regressed());
        // A full microsecond counts even for one launch.
        let b = run("b", &[("nvjet", 0, 8_200.0)]);
        assert_eq!(
            diff_runs(&a, &b, &options(5.0)).kernels[0].change,
            Change::Regressed
        );
        // Three tight launches a side: the plain floor, and the same 0.51 µs counts.
        let a = run(
            "a",
            &[("k", 0, 7_100.0), ("k", 1, 7_104.0), ("k", 2, 7_108.0)],
        );
        let b = run(
            "b",
            &[("k", 0, 7_612.0), ("k", 1, 7_616.0), ("k", 2, 7_620.0)],
        );
        let repeated = diff_runs(&a, &b, &options(5.0));
        assert_eq!(repeated.kernels[0].significant, Some(true));
        assert_eq!(repeated.kernels[0].change, Change::Regressed);
        assert!(
            repeated
                .render(None)
                .contains("(1.000 us for kernels with fewer than 3")
        );
    }

    #[test]
    fn sub_floor_moves_and_moves_inside_the_spread_are_noise() {
        // A 2.2 µs kernel 16 % slower: 350 ns, under the 500 ns floor.
        let a = run("a", &[("tiny", 0, 2_200.0)]);
        let b = run("b", &[("tiny", 0, 2_552.0)]);
        let diff = diff_runs(&a, &b, &options(5.0));
        assert_eq!(diff.kernels[0].change, Change::Noise);
        assert!(!diff.regressed());
        // Medians 10 % apart but the launches spread wider than the gap.
        let a = run(
            "a",
            &[
                ("k", 0, 8_000.0),
                ("k", 1, 10_000.0),
                ("k", 2, 12_000.0),
                ("k", 3, 14_000.0),
            ],
        );
        let b = run(
            "b",
            &[
                ("k", 0, 9_000.0),
                ("k", 1, 11_000.0),
                ("k", 2, 13_200.0),
                ("k", 3, 15_000.0),
            ],
        );
        let diff = diff_runs(&a, &b, &options(5.0));
        assert_eq!(diff.kernels[0].significant, Some(false));
        assert_eq!(diff.kernels[0].change, Change::Noise);
        // With the floor at zero the first case counts.
        let strict = DiffOptions {
            floor_ns: 0.0,
            ..options(5.0)
        };
        let a = run("a", &[("tiny", 0, 2_200.0)]);
        let b = run("b", &[("tiny", 0, 2_552.0)]);
        assert!(diff_runs(&a, &b, &strict).regressed());
    }

    #[test]
    fn threshold_launch_configuration_and_min_duration_decide() {
        let a = run("a", &[("k", 0, 100_000.0)]);
        let b = run("b", &[("k", 0, 104_000.0)]);
        assert!(!diff_runs(&a, &b, &options(5.0)).regressed());
        assert!(diff_runs(&a, &b, &options(3.0)).regressed());
        assert_eq!(diff_runs(&b, &a, &options(3.0)).improvements, 1);
        // Another grid is another kernel.
        let mut other = b.clone();
        other.kernels[0].grid = Some([2, 1, 1]);
        let diff = diff_runs(&a, &other, &options(3.0));
        assert!(diff.kernels.is_empty());
        assert_eq!((diff.only_in_a.len(), diff.only_in_b.len()), (1, 1));
        let skip = DiffOptions {
            min_duration_ns: 200_000.0,
            ..options(3.0)
        };
        let diff = diff_runs(&a, &b, &skip);
        assert_eq!((diff.kernels.len(), diff.filtered), (0, 1));
        assert!(!diff.regressed());
    }

    #[test]
    fn runs_without_kernels_compare_steps() {
        let mut a = run("a", &[]);
        let mut b = run("b", &[]);
        let step = |accepted| crate::model::run::StepRun {
            name: "run".to_string(),
            attempts: Vec::new(),
            accepted,
            rejection: None,
        };
        a.steps.push(step(true));
        b.steps.push(step(true));
        let diff = diff_runs(&a, &b, &DiffOptions::default());
        assert_eq!(diff.steps.len(), 1);
        assert!(!diff.regressed());
        b.steps[0].accepted = false;
        let diff = diff_runs(&a, &b, &DiffOptions::default());
        assert!(diff.regressed());
        assert!(
            diff.render(None)
                .contains("step run: accepted → not accepted (regressed)")
        );
    }

    #[test]
    fn a_document_without_steps_does_not_gate_on_steps() {
        // `polyprof parse -o` writes the records of saved output with no steps: diffing the run
        // the output came from against it must not read "step profile: accepted → absent".
        let mut a = run("a", &[]);
        let b = run("b", &[]);
        a.steps.push(crate::model::run::StepRun {
            name: "profile".to_string(),
            attempts: Vec::new(),
            accepted: true,
            rejection: None,
        });
        for (x, y) in [(&a, &b), (&b, &a)] {
            let diff = diff_runs(x, y, &DiffOptions::default());
            assert!(!diff.regressed(), "{}", diff.render(None));
        }
    }
}
