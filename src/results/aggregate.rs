//! `key_averages`: events grouped by name or call path into PyTorch-style rows, with GFLOP/s and
//! GB/s from GPU time and, when device peaks are known, the roofline.
//!
//! Like PyTorch's "total" columns, a scope's GPU total is the GPU time of the kernels recorded
//! inside it, so scope rows and kernel rows overlap; the table footer sums kernel rows only.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::model::error::Error;
use crate::model::record::FlopCounts;
use crate::results::devices::DevicePeaks;
use crate::results::event::{Event, Frame, FrameKind};
use crate::results::roofline::{self, RooflineInputs, RooflinePoint};

/// How events are grouped into rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// By event name (and kind: a scope and a kernel of the same name stay apart).
    #[default]
    Name,
    /// By full call path.
    #[value(name = "call_path", alias = "call-path")]
    CallPath,
}

/// Row order of a table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum SortBy {
    /// GPU total, largest first.
    #[default]
    #[value(name = "gpu_time", alias = "gpu-time")]
    GpuTime,
    /// CPU total, largest first.
    #[value(name = "cpu_time", alias = "cpu-time")]
    CpuTime,
    /// Calls, most first.
    Calls,
    /// GFLOP/s, highest first.
    Gflops,
    /// GB/s, highest first.
    Gbps,
    /// Name, A to Z.
    Name,
}

macro_rules! from_str_via_value_enum {
    ($ty:ty, $what:literal) => {
        impl std::str::FromStr for $ty {
            type Err = Error;
            fn from_str(text: &str) -> Result<Self, Error> {
                <$ty as clap::ValueEnum>::from_str(text, true).map_err(|_| Error::UnknownValue {
                    what: $what,
                    value: text.to_string(),
                    valid: <$ty as clap::ValueEnum>::value_variants()
                        .iter()
                        .filter_map(clap::ValueEnum::to_possible_value)
                        .map(|v| v.get_name().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
            }
        }
    };
}
pub(crate) use from_str_via_value_enum;

from_str_via_value_enum!(GroupBy, "group-by key");
from_str_via_value_enum!(SortBy, "sort key");

/// One row of [`key_averages`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyAverage {
    pub name: String,
    pub kind: FrameKind,
    /// The full call path (grouping by call path), or empty (grouping by name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub call_path: Vec<String>,
    pub calls: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_total_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_mean_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_total_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_mean_ns: Option<f64>,
    pub flops: FlopCounts,
    /// DRAM bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
    /// GFLOP/s and GB/s from GPU time; shares of peak when peaks are known. For kernel rows
    /// the bound, limiter and precision are those of the row's launches, judged one by one
    /// (see [`KeyAverage::verdicts`]).
    pub roofline: RooflinePoint,
    /// Kernel rows: the launches' verdicts, most GPU time first; more than one entry means the
    /// launches disagree and the row shows the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<VerdictShare>,
    /// Each kernel launch's verdict inputs and its `calls`.
    #[serde(skip)]
    launches: Vec<(RooflineInputs, u64)>,
    /// The profiler's rule results in one short line (`ncu OPT SOLBottleneck, …`), shown under
    /// the verdict; see [`KeyAverages::with_rules`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_line: Option<String>,
}

/// Launches of a row that got one verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictShare {
    /// The table cell: `compute · tensor bf16 90 %`, `memory · DRAM 67 %`, `latency · SM 12 %, DRAM 9 %`.
    pub label: String,
    pub launches: u64,
    pub gpu_time_ns: f64,
}

impl KeyAverage {
    /// The row's launches added up as its verdict measured them (cache bytes and roofs
    /// included); `None` for rows without kernel launches.
    pub fn launch_inputs(&self) -> Option<RooflineInputs> {
        let inputs: Vec<RooflineInputs> = self.launches.iter().map(|(i, _)| *i).collect();
        (!inputs.is_empty()).then(|| RooflineInputs::combine(&inputs))
    }

    /// `name`, or the call path joined with ` / `.
    pub fn label(&self) -> String {
        if self.call_path.is_empty() {
            self.name.clone()
        } else {
            self.call_path.join(" / ")
        }
    }
}

/// Rows of [`key_averages`], optionally placed under a device's roofline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyAverages {
    pub group_by: GroupBy,
    pub rows: Vec<KeyAverage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peaks: Option<DevicePeaks>,
}

fn add(slot: &mut Option<f64>, value: Option<f64>) {
    if let Some(value) = value {
        *slot = Some(slot.unwrap_or(0.0) + value);
    }
}

pub(crate) fn add_flops(total: &mut FlopCounts, more: &FlopCounts) {
    total.accumulate(more);
}

/// GPU time of the kernels recorded inside each scope event (by event id), through `parent`.
fn gpu_time_inside(events: &[Event]) -> HashMap<u64, f64> {
    let by_id: HashMap<u64, &Event> = events.iter().map(|e| (e.id, e)).collect();
    let mut inside: HashMap<u64, f64> = HashMap::new();
    for event in events {
        let Some(time) = event.gpu_time_ns else {
            continue;
        };
        let mut parent = event.parent;
        // Bounded walk: a malformed parent cycle cannot loop forever.
        for _ in 0..events.len() {
            let Some(id) = parent else { break };
            *inside.entry(id).or_insert(0.0) += time;
            parent = by_id.get(&id).and_then(|e| e.parent);
        }
    }
    inside
}

#[derive(PartialEq, Eq, Hash)]
enum Key {
    Name(bool, String),
    Path(Vec<Frame>),
}

/// Judge each launch as the per-launch reports do, group the launches by verdict (most GPU time
/// first, then most launches), and give `row` the verdict of the first group: a row of launches
/// that were each memory-bound is memory-bound, whatever the sums say.
fn launch_verdicts(
    peaks: Option<&DevicePeaks>,
    launches: &[(RooflineInputs, u64)],
    row: &mut RooflinePoint,
) -> Vec<VerdictShare> {
    // Launches group by bound and limiter; a group's deciding figures are its launches'
    // figures averaged over their GPU time.
    struct Group {
        key: String,
        share: VerdictShare,
        point: RooflinePoint,
        sums: [f64; 2],
        weight: f64,
    }
    let mut groups: Vec<Group> = Vec::new();
    for (inputs, calls) in launches {
        let point = roofline::evaluate_inputs(peaks, inputs);
        let key = point.bound_key();
        let time = inputs.gpu_time_ns.unwrap_or(0.0);
        let index = match groups.iter().position(|g| g.key == key) {
            Some(index) => index,
            None => {
                groups.push(Group {
                    key,
                    share: VerdictShare {
                        label: String::new(),
                        launches: 0,
                        gpu_time_ns: 0.0,
                    },
                    point,
                    sums: [0.0; 2],
                    weight: 0.0,
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[index];
        group.share.launches += calls;
        group.share.gpu_time_ns += time;
        if time > 0.0 {
            for (sum, figure) in group.sums.iter_mut().zip(point.decided_by.0) {
                *sum += figure.map_or(0.0, |f| f.pct) * time;
            }
            group.weight += time;
        }
    }
    for group in &mut groups {
        if group.weight > 0.0 {
            for (figure, sum) in group.point.decided_by.0.iter_mut().zip(group.sums) {
                if let Some(figure) = figure {
                    figure.pct = sum / group.weight;
                }
            }
        }
        group.share.label = group.point.bound_label();
    }
    groups.sort_by(|a, b| {
        b.share
            .gpu_time_ns
            .total_cmp(&a.share.gpu_time_ns)
            .then(b.share.launches.cmp(&a.share.launches))
    });
    if let Some(first) = groups.first() {
        row.bound = first.point.bound;
        row.limiter = first.point.limiter;
        row.precision = first.point.precision;
        row.decided_by = first.point.decided_by;
    }
    groups.into_iter().map(|g| g.share).collect()
}

/// Group `events` into rows (in order of first appearance). Calls add up `calls`; means are
/// totals over calls; GFLOP/s and GB/s use GPU time, or CPU time for a row without GPU time
/// (CPU work; no share of a GPU peak then).
pub fn key_averages(events: &[Event], group_by: GroupBy) -> KeyAverages {
    let inside = gpu_time_inside(events);
    let mut index: HashMap<Key, usize> = HashMap::new();
    let mut rows: Vec<KeyAverage> = Vec::new();
    for event in events {
        let key = match group_by {
            GroupBy::Name => Key::Name(event.kind() == FrameKind::Kernel, event.name().to_string()),
            GroupBy::CallPath => Key::Path(event.call_path.clone()),
        };
        let slot = *index.entry(key).or_insert_with(|| {
            rows.push(KeyAverage {
                name: event.name().to_string(),
                kind: event.kind(),
                call_path: match group_by {
                    GroupBy::Name => Vec::new(),
                    GroupBy::CallPath => event.call_path.iter().map(|f| f.name.clone()).collect(),
                },
                calls: 0,
                cpu_total_ns: None,
                cpu_mean_ns: None,
                gpu_total_ns: None,
                gpu_mean_ns: None,
                flops: FlopCounts::default(),
                bytes: None,
                metrics: BTreeMap::new(),
                roofline: roofline::evaluate(None, &FlopCounts::default(), None, None),
                verdicts: Vec::new(),
                launches: Vec::new(),
                rule_line: None,
            });
            rows.len() - 1
        });
        let row = &mut rows[slot];
        row.calls += event.calls;
        add(&mut row.cpu_total_ns, event.cpu_time_ns);
        add(
            &mut row.gpu_total_ns,
            event.gpu_time_ns.or_else(|| inside.get(&event.id).copied()),
        );
        add_flops(&mut row.flops, &event.flops);
        add(&mut row.bytes, event.bytes);
        for (name, value) in &event.metrics {
            *row.metrics.entry(name.clone()).or_insert(0.0) += value;
        }
        if event.kind() == FrameKind::Kernel {
            let inputs = event.verdict_inputs.unwrap_or_else(|| {
                RooflineInputs::work(&event.flops, event.bytes, event.gpu_time_ns)
            });
            row.launches.push((inputs, event.calls));
        }
    }
    let mut averages = KeyAverages {
        group_by,
        rows,
        peaks: None,
    };
    averages.evaluate();
    averages
}

impl KeyAverages {
    /// Place every row under `peaks` (% of peak bandwidth and compute, bound).
    pub fn with_peaks(mut self, peaks: Option<DevicePeaks>) -> Self {
        self.peaks = peaks;
        self.evaluate();
        self
    }

    /// Each kernel row's rule results (ncu's `SOLBottleneck`, …) from `run`'s records, as the
    /// short line the table and page show under the verdict.
    pub fn with_rules(mut self, run: Option<&crate::model::run::ProfileRun>) -> Self {
        let Some(run) = run else { return self };
        let rules = crate::results::rules::by_kernel(run);
        for row in &mut self.rows {
            if row.kind != FrameKind::Kernel {
                continue;
            }
            row.rule_line = rules
                .get(&row.name)
                .and_then(|r| crate::results::rules::short_line(&run.profiler.name, r));
        }
        self
    }

    fn evaluate(&mut self) {
        for row in &mut self.rows {
            let calls = (row.calls > 0).then_some(row.calls as f64);
            row.cpu_mean_ns = row.cpu_total_ns.zip(calls).map(|(t, n)| t / n);
            row.gpu_mean_ns = row.gpu_total_ns.zip(calls).map(|(t, n)| t / n);
            let peaks = self.peaks.as_ref();
            if !row.launches.is_empty() {
                let inputs: Vec<RooflineInputs> = row.launches.iter().map(|(i, _)| *i).collect();
                row.roofline = roofline::evaluate_inputs(peaks, &RooflineInputs::combine(&inputs));
                row.verdicts = launch_verdicts(peaks, &row.launches, &mut row.roofline);
                continue;
            }
            row.roofline = match (row.gpu_total_ns, row.cpu_total_ns) {
                // CPU work (a scope with FLOPs or bytes and no kernels inside): its rates over
                // its own wall time, with no GPU peaks to compare against.
                (None, Some(cpu)) => roofline::evaluate(None, &row.flops, row.bytes, Some(cpu)),
                (gpu, _) => roofline::evaluate(peaks, &row.flops, row.bytes, gpu),
            };
        }
    }

    /// Rows in `sort_by` order (missing values last, ties by name).
    pub fn sorted(&self, sort_by: SortBy) -> Vec<&KeyAverage> {
        let mut rows: Vec<&KeyAverage> = self.rows.iter().collect();
        let value = |row: &KeyAverage| match sort_by {
            SortBy::GpuTime => row.gpu_total_ns,
            SortBy::CpuTime => row.cpu_total_ns,
            SortBy::Calls => Some(row.calls as f64),
            SortBy::Gflops => row.roofline.gflops_per_s,
            SortBy::Gbps => row.roofline.gb_per_s,
            SortBy::Name => None,
        };
        rows.sort_by(|a, b| {
            let by_value = match (value(a), value(b)) {
                (Some(x), Some(y)) => y.total_cmp(&x),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            };
            by_value.then_with(|| a.label().cmp(&b.label()))
        });
        rows
    }

    /// GPU time of kernel rows (scope rows would count it twice).
    pub fn kernel_gpu_total_ns(&self) -> f64 {
        self.rows
            .iter()
            .filter(|r| r.kind == FrameKind::Kernel)
            .filter_map(|r| r.gpu_total_ns)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: u64, parent: Option<u64>, path: &[(&str, FrameKind)]) -> Event {
        Event {
            id,
            parent,
            call_path: path.iter().map(|(n, k)| Frame::new(*n, *k)).collect(),
            calls: 1,
            ..Default::default()
        }
    }

    fn sample() -> Vec<Event> {
        use FrameKind::{Kernel, Scope};
        let mut step = event(0, None, &[("step", Scope)]);
        step.cpu_time_ns = Some(1_000.0);
        step.flops.fp32 = Some(4_000.0);
        let mut k1 = event(1, Some(0), &[("step", Scope), ("gemm", Kernel)]);
        k1.gpu_time_ns = Some(300.0);
        k1.bytes = Some(600.0);
        let mut k2 = event(2, Some(0), &[("step", Scope), ("gemm", Kernel)]);
        k2.gpu_time_ns = Some(100.0);
        k2.bytes = Some(200.0);
        let mut other = event(3, None, &[("other", Scope), ("gemm", Kernel)]);
        other.gpu_time_ns = Some(50.0);
        vec![step, k1, k2, other]
    }

    #[test]
    fn grouping_by_name_sums_calls_times_and_bytes() {
        let averages = key_averages(&sample(), GroupBy::Name);
        assert_eq!(averages.rows.len(), 2);
        let gemm = averages.rows.iter().find(|r| r.name == "gemm").unwrap();
        assert_eq!(gemm.calls, 3);
        assert_eq!(gemm.gpu_total_ns, Some(450.0));
        assert_eq!(gemm.gpu_mean_ns, Some(150.0));
        assert_eq!(gemm.bytes, Some(800.0));
        // 800 bytes / 450 ns = 1.78 GB/s.
        assert!((gemm.roofline.gb_per_s.unwrap() - 800.0 / 450.0).abs() < 1e-9);
        let step = averages.rows.iter().find(|r| r.name == "step").unwrap();
        // A scope's GPU total is its kernels' time; its GFLOP/s uses that time.
        assert_eq!(step.gpu_total_ns, Some(400.0));
        assert_eq!(step.cpu_mean_ns, Some(1_000.0));
        assert_eq!(step.roofline.gflops_per_s, Some(10.0));
        assert_eq!(averages.kernel_gpu_total_ns(), 450.0);
    }

    #[test]
    fn grouping_by_call_path_keeps_paths_apart() {
        let averages = key_averages(&sample(), GroupBy::CallPath);
        let labels: Vec<String> = averages.rows.iter().map(KeyAverage::label).collect();
        assert_eq!(labels, ["step", "step / gemm", "other / gemm"]);
        assert_eq!(averages.rows[1].calls, 2);
    }

    #[test]
    fn sorting_puts_missing_values_last() {
        let averages = key_averages(&sample(), GroupBy::CallPath);
        let order: Vec<String> = averages
            .sorted(SortBy::Gbps)
            .iter()
            .map(|r| r.label())
            .collect();
        assert_eq!(order, ["step / gemm", "other / gemm", "step"]);
        let by_name: Vec<String> = averages
            .sorted(SortBy::Name)
            .iter()
            .map(|r| r.label())
            .collect();
        assert_eq!(by_name, ["other / gemm", "step", "step / gemm"]);
    }

    #[test]
    fn table_shows_only_columns_with_data() {
        let table = key_averages(&sample(), GroupBy::Name).table(SortBy::GpuTime);
        assert!(table.contains("GPU total"), "{table}");
        assert!(table.contains("450.0 ns"), "{table}");
        assert!(!table.contains("Bound"), "{table}");
        let peaks = DevicePeaks::measured("test", 1.0, 1.0);
        let table = key_averages(&sample(), GroupBy::Name)
            .with_peaks(Some(peaks))
            .table(SortBy::GpuTime);
        assert!(table.contains("Bound"), "{table}");
    }

    /// A PyTorch workload's kernels (tests/fixtures/ncu-h200-names): a table 200 columns wide
    /// printed different instances of one template alike when it cut their middles.
    #[test]
    fn a_fitted_table_keeps_every_kernel_apart() {
        use FrameKind::Kernel;
        let names = crate::results::names::tests::pytorch_short_names();
        let events: Vec<Event> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut e = event(i as u64, None, &[(name, Kernel)]);
                e.gpu_time_ns = Some(100.0 + i as f64);
                e.bytes = Some(1_000.0);
                e.flops.fp32 = Some(1_000.0);
                e
            })
            .collect();
        // With the roofline columns of a real ncu run.
        let table = key_averages(&events, GroupBy::Name)
            .with_peaks(Some(DevicePeaks::measured("test", 1.0, 1.0)))
            .table_fitted(SortBy::GpuTime, Some(200))
            .table;
        let rows: std::collections::BTreeSet<&str> = table
            .lines()
            .filter(|l| l.contains(" ns "))
            .map(|l| {
                l.split('┆')
                    .next()
                    .unwrap_or("")
                    .trim_start_matches('│')
                    .trim()
            })
            .collect();
        assert_eq!(rows.len(), names.len(), "{table}");
        assert!(table.lines().all(|l| l.chars().count() <= 200), "{table}");
    }

    #[test]
    fn keys_parse_from_text() {
        assert_eq!("call_path".parse::<GroupBy>().unwrap(), GroupBy::CallPath);
        assert_eq!("call-path".parse::<GroupBy>().unwrap(), GroupBy::CallPath);
        assert_eq!("gpu_time".parse::<SortBy>().unwrap(), SortBy::GpuTime);
        let err = "speed".parse::<SortBy>().unwrap_err().to_string();
        assert!(err.contains("gbps"), "{err}");
    }
}
