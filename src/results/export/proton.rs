//! Proton's tree JSON (`proton-viewer FILE`): `[root, device_info]`, the layout Triton's
//! profiler writes, so `proton-viewer -m time/ns,util` and `proton-viewer -diff` read it.
//!
//! Differences from the Hatchet literal ([`super::hatchet`]): only exclusive metrics are written
//! (the viewer derives the inclusive ones itself; writing both lists every metric twice in
//! `proton-viewer -l`), kernel nodes carry Proton's `device_id` (a string, the key into
//! `device_info`) and `device_type` (`CUDA`, `HIP`), and the second element describes each
//! device as Proton's `util` reads it: `arch`, `num_sms`, `clock_rate` and `memory_clock_rate`
//! (kHz), `bus_width` (bits). Frame names are the stable ones of [`StableTree`].

use std::io::Write;

use serde_json::{Map, Value, json};

use crate::model::error::Result;
use crate::model::verdict_metrics::{DRAM_CLOCK, SM_CLOCK};
use crate::results::devices::DevicePeaks;
use crate::results::event::{Frame, FrameKind};
use crate::results::export::hatchet::node_object;
use crate::results::export::stable_tree::{Metadata, StableTree};
use crate::results::export::{Exporter, Format, Report, write_json};
use crate::results::stats::Stats;
use crate::results::tree::TreeNode;

/// What `-m util` needs to read each kernel as polyprof reads it: the device's Proton formula
/// (`device_type`, `arch`), its base entry, its peaks and the run's clocks; each kernel node
/// gets an entry of its own (`entries`, keyed by the node's `device_id`).
struct Util<'a> {
    kind: &'static str,
    base: Map<String, Value>,
    peaks: &'a DevicePeaks,
    sm_clock_hz: Option<f64>,
    dram_clock_hz: Option<f64>,
    entries: Map<String, Value>,
}

/// Proton's `max_flops` per width is one figure `K` divided by the width in bytes (FP8's
/// K, halved for 16 bits, …): `util` adds `flops_w × (w / 8) / K` over the widths. So
/// that it equals polyprof's compute share (each precision over its own clock-scaled peak,
/// the busiest pipe's time), the kernel's entry carries the `num_sms` that makes `K` =
/// Σ flops_w (w / 8) / polyprof's least compute time; `bus_width` makes the bandwidth the
/// table's at the run's DRAM clock. `num_sms` is then a calibration, not the SM count
/// (`sm_count` keeps that).
impl Util<'_> {
    fn entry(&mut self, own: &crate::results::tree::NodeMetrics) -> Option<String> {
        let mut info = self.base.clone();
        let clock_khz = info.get("clock_rate")?.as_f64()?;
        let weighted: f64 = [8, 16, 32, 64]
            .iter()
            .map(|w| own.flops.by_width(*w).unwrap_or(0.0) * f64::from(*w) / 8.0)
            .sum();
        let least_s = self
            .peaks
            .min_compute_time_ns(&own.flops, self.sm_clock_hz)
            .map(|(ns, _)| ns / 1e9)
            .filter(|s| *s > 0.0);
        if let Some(least_s) = least_s.filter(|_| weighted > 0.0) {
            let k = weighted / least_s;
            let num_sms = match self.kind {
                "HIP" => {
                    let per_cu = amd_fp8_flops_per_clock(info.get("arch")?.as_str()?)?;
                    k / (per_cu * clock_khz * 1e3)
                }
                _ => k * 114.0 * 1755e3 / (clock_khz * 1513e12),
            };
            info.insert("num_sms".into(), json!(num_sms));
        } else if weighted > 0.0 {
            // FLOPs of a precision the device has no peak for: polyprof gives no compute share
            // (counted as 0), so the entry makes their time vanish.
            info.insert("num_sms".into(), json!(1e30));
        }
        if self.kind == "CUDA"
            && let Some(mem_khz) = info.get("memory_clock_rate").and_then(Value::as_f64)
        {
            let bandwidth = self.peaks.bandwidth_at(self.dram_clock_hz) * 1e9;
            info.insert(
                "bus_width".into(),
                json!(bandwidth * 8.0 / (2.0 * mem_khz * 1e3)),
            );
        }
        let id = self.entries.len().to_string();
        self.entries.insert(id.clone(), Value::Object(info));
        Some(id)
    }
}

/// Proton's bandwidth of an AMD architecture, GB/s (`specs.py`).
fn amd_bandwidth_gbs(arch: &str) -> Option<f64> {
    match arch {
        "gfx90a" => Some(3200.0),
        "gfx942" => Some(5300.0),
        "gfx950" => Some(8000.0),
        _ => None,
    }
}

/// Proton's FP8 matrix FLOPs per clock per CU of an AMD architecture (`specs.py`).
fn amd_fp8_flops_per_clock(arch: &str) -> Option<f64> {
    match arch {
        "gfx90a" => Some(1024.0),
        "gfx942" => Some(4096.0),
        "gfx950" => Some(8192.0),
        _ => None,
    }
}

fn node_json(
    node: &TreeNode,
    util: &mut Option<Util>,
    at: &mut Vec<Frame>,
    meta: &Metadata,
) -> Value {
    let own = &node.exclusive;
    let mut metrics = Map::new();
    metrics.insert("count".into(), json!(own.count));
    metrics.insert("time (ns)".into(), json!(own.gpu_time_ns));
    metrics.insert("cpu_time (ns)".into(), json!(own.cpu_time_ns));
    let mut total_flops = 0.0;
    for width in [8, 16, 32, 64] {
        let flops = own.flops.by_width(width).unwrap_or(0.0);
        total_flops += flops;
        metrics.insert(format!("flops{width}"), json!(flops));
    }
    // `proton-viewer -m flop/s` (`gflop/s`, `tflop/s`) divides a metric named `flops`.
    metrics.insert("flops".into(), json!(total_flops));
    metrics.insert("bytes".into(), json!(own.bytes));
    if node.frame.kind == FrameKind::Kernel {
        // `-m util` reads `device_id` on every frame: null (no utilization) where Proton has no
        // peaks for the device (Apple, or a device the table does not describe).
        let described = util.as_mut().and_then(|u| Some((u.kind, u.entry(own)?)));
        match described {
            Some((kind, id)) => {
                metrics.insert("device_id".into(), json!(id));
                metrics.insert("device_type".into(), json!(kind));
            }
            None => {
                metrics.insert("device_id".into(), Value::Null);
            }
        }
    }
    node_object(node, metrics, at, meta, &mut |child, at| {
        node_json(child, util, at, meta)
    })
}

/// The Proton formulas a vendor's device is read with: its own (`CUDA`, `HIP`), and for an
/// Intel GPU, which Proton has none for, the `CUDA` one with a calibrated entry (`vendor`
/// says so); `None` for devices without the peaks `util` needs.
fn device_type(peaks: &DevicePeaks) -> Option<&'static str> {
    match peaks.vendor.to_ascii_lowercase().as_str() {
        "nvidia" | "intel" => Some("CUDA"),
        "amd" => Some("HIP"),
        _ => None,
    }
}

/// Proton's `device_info` entry. `num_sms` is derived from the FP32 peak (128 FP32 lanes × 2
/// FLOP per SM per clock on every listed NVIDIA GPU since Ampere), `bus_width` so that Proton's
/// `2 × bus_width × memory_clock_rate / 8` is the table's bandwidth; `clock_rate` is the SM
/// clock the run's kernels ran at (median of `sm__cycles_elapsed.avg.per_second`), else boost.
fn device_info(report: &Report, peaks: &DevicePeaks) -> Map<String, Value> {
    let mut info = Map::new();
    let arch = report
        .run
        .as_ref()
        .and_then(|run| run.device.as_ref())
        .and_then(|device| {
            device
                .compute_capability
                .as_deref()
                .map(|cc| cc.replace('.', ""))
                .or_else(|| {
                    device
                        .arch
                        .as_deref()
                        .map(|a| a.trim_start_matches("sm_").to_string())
                })
        });
    // Proton's formula is chosen by `arch`: an NVIDIA or Intel entry is read with the
    // arch-90 formula its `num_sms` is calibrated for; the device's own arch stays beside it.
    let vendor = peaks.vendor.to_ascii_lowercase();
    match (vendor.as_str(), arch) {
        ("amd", Some(arch)) => {
            info.insert("arch".into(), json!(arch));
        }
        ("amd", None) => {}
        (_, arch) => {
            info.insert("arch".into(), json!("90"));
            if let Some(arch) = arch {
                info.insert("device_arch".into(), json!(arch));
            }
        }
    }
    info.insert("vendor".into(), json!(vendor));
    let clocks: Vec<f64> = report
        .run
        .iter()
        .flat_map(|run| run.kernels.iter())
        .filter_map(|record| record.metrics.get(SM_CLOCK).and_then(|m| m.value.as_f64()))
        .filter(|hz| *hz > 0.0)
        .collect();
    let run_clock_khz = Stats::from_samples(&clocks).ok().map(|s| s.median / 1e3);
    let boost_khz = peaks.boost_clock_mhz.map(|mhz| mhz * 1e3);
    // Without a clock in the table (Intel entries), a nominal 1 GHz: `num_sms` is calibrated
    // against whatever clock the entry names, so `util` does not depend on it.
    let (khz, source) = match (run_clock_khz, boost_khz) {
        (Some(khz), _) => (khz, "run"),
        (None, Some(khz)) => (khz, "boost"),
        (None, None) => (NOMINAL_KHZ, "nominal"),
    };
    info.insert("clock_rate".into(), json!(khz.round()));
    info.insert("clock_source".into(), json!(source));
    let sms = match (peaks.fp32_tflops, peaks.boost_clock_mhz) {
        (Some(fp32), Some(boost)) => {
            let sms = (fp32 * 1e12 / (256.0 * boost * 1e6)).round();
            info.insert("sm_count".into(), json!(sms as u64));
            sms
        }
        _ => 1.0,
    };
    info.insert("num_sms".into(), json!(sms));
    // Likewise the memory clock: `bus_width` makes the bandwidth the table's.
    let (mem_khz, mem_source) = match peaks.memory_clock_mhz {
        Some(mhz) => (mhz * 1e3, "table"),
        None => (NOMINAL_KHZ, "nominal"),
    };
    let bus_bits = peaks.memory_bandwidth_gbs * 1e9 * 8.0 / (2.0 * mem_khz * 1e3);
    info.insert("memory_clock_rate".into(), json!(mem_khz.round()));
    info.insert("memory_clock_source".into(), json!(mem_source));
    info.insert("bus_width".into(), json!(bus_bits));
    info.insert("name".into(), json!(peaks.name));
    info
}

/// The clock an entry names when the table has none (kHz).
const NOMINAL_KHZ: f64 = 1e6;

/// What Proton's `util` reads of a device entry.
const UTIL_FIELDS: [&str; 5] = [
    "arch",
    "num_sms",
    "clock_rate",
    "memory_clock_rate",
    "bus_width",
];

/// The `[root, device_info]` document.
pub fn document(report: &Report) -> Value {
    let stable = StableTree::of(&report.profile);
    // A device is described only with every field `util` reads; otherwise kernels point at none.
    let mut util = report.peaks.as_ref().and_then(|peaks| {
        let mut kind = device_type(peaks)?;
        let mut base = device_info(report, peaks);
        // Proton reads an AMD device by its arch, with a fixed bandwidth per arch: where it has
        // no figures for the arch, or another bandwidth than the table's, the entry is read with
        // the calibrated CUDA formula instead (its `vendor` says amd).
        if kind == "HIP" {
            let arch = base.get("arch").and_then(Value::as_str).unwrap_or_default();
            let proton_gbs = amd_bandwidth_gbs(arch);
            let agrees = proton_gbs.is_some_and(|gbs| {
                (gbs - peaks.memory_bandwidth_gbs).abs() <= 0.005 * peaks.memory_bandwidth_gbs
            });
            if !agrees || amd_fp8_flops_per_clock(arch).is_none() {
                kind = "CUDA";
                let arch = arch.to_string();
                base.insert("arch".into(), json!("90"));
                base.insert("device_arch".into(), json!(arch));
            }
        }
        let complete = UTIL_FIELDS
            .iter()
            .all(|field| kind == "HIP" && *field == "bus_width" || base.contains_key(*field));
        complete.then(|| Util {
            kind,
            base,
            peaks,
            sm_clock_hz: run_median(report, SM_CLOCK),
            dram_clock_hz: run_median(report, DRAM_CLOCK),
            entries: Map::new(),
        })
    });
    let root = node_json(
        &stable.tree.root,
        &mut util,
        &mut Vec::new(),
        &stable.metadata,
    );
    let mut devices = Map::new();
    if let Some(util) = util {
        devices.insert(util.kind.into(), Value::Object(util.entries));
    }
    Value::Array(vec![root, Value::Object(devices)])
}

/// The median of a clock metric over the run's kernels.
fn run_median(report: &Report, metric: &str) -> Option<f64> {
    let values: Vec<f64> = report
        .run
        .iter()
        .flat_map(|run| run.kernels.iter())
        .filter_map(|record| record.metrics.get(metric).and_then(|m| m.value.as_f64()))
        .filter(|hz| *hz > 0.0)
        .collect();
    Stats::from_samples(&values).ok().map(|s| s.median)
}

pub struct ProtonExporter;

impl Exporter for ProtonExporter {
    fn format(&self) -> Format {
        Format::Proton
    }

    fn export(&self, report: &Report, out: &mut dyn Write) -> Result<()> {
        write_json(&document(report), out, "Proton export", true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::run::ProfileRun;
    use crate::results::devices::DeviceTable;

    fn report() -> Report {
        let text = include_str!("../../../tests/fixtures/runs/h200-baseline/run.json");
        let run: ProfileRun = serde_json::from_str(text).unwrap();
        let peaks = DeviceTable::builtin().unwrap().lookup("H200").cloned();
        Report::from_run(run, peaks)
    }

    fn kernels(node: &Value, out: &mut Vec<Value>) {
        if node["frame"]["type"] == "kernel" {
            out.push(node.clone());
        }
        for child in node["children"].as_array().into_iter().flatten() {
            kernels(child, out);
        }
    }

    #[test]
    fn kernels_point_at_a_described_device_and_metrics_are_listed_once() {
        let doc = document(&report());
        let mut found = Vec::new();
        kernels(&doc[0], &mut found);
        assert_eq!(found.len(), 4);
        let mut ids = std::collections::BTreeSet::new();
        for kernel in &found {
            // One calibrated entry per kernel, each of the device.
            let id = kernel["metrics"]["device_id"].as_str().unwrap().to_string();
            assert_eq!(doc[1]["CUDA"][&id]["name"], "H200");
            ids.insert(id);
            assert_eq!(kernel["metrics"]["device_type"], "CUDA");
            assert!(
                kernel["metrics"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .all(|k| !k.contains("(inc)"))
            );
        }
        assert_eq!(ids.len(), 4);
        let h200 = &doc[1]["CUDA"]["0"];
        assert_eq!(h200["arch"], "90");
        assert_eq!(h200["sm_count"], 132);
        // Proton's bandwidth 2 × bus × clock / 8 comes back to the table's 4.8 TB/s.
        let bus = h200["bus_width"].as_f64().unwrap();
        let clock_hz = h200["memory_clock_rate"].as_f64().unwrap() * 1e3;
        let bandwidth = 2.0 * bus * clock_hz / 8.0;
        assert!((bandwidth / 4.8e12 - 1.0).abs() < 1e-3, "{bandwidth}");
        assert_eq!(doc[0]["frame"]["name"], "ROOT");
    }
}
