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
use crate::model::verdict_metrics::SM_CLOCK;
use crate::results::devices::DevicePeaks;
use crate::results::event::{Frame, FrameKind};
use crate::results::export::hatchet::node_object;
use crate::results::export::stable_tree::{Metadata, StableTree};
use crate::results::export::{Exporter, Format, Report, write_json};
use crate::results::stats::Stats;
use crate::results::tree::TreeNode;

/// The device every kernel node points at: polyprof runs profile one device per run.
const DEVICE_ID: &str = "0";

fn node_json(
    node: &TreeNode,
    device_type: Option<&str>,
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
        // peaks for the device (Intel, Apple, or a device the table does not describe).
        match device_type {
            Some(kind) => {
                metrics.insert("device_id".into(), json!(DEVICE_ID));
                metrics.insert("device_type".into(), json!(kind));
            }
            None => {
                metrics.insert("device_id".into(), Value::Null);
            }
        }
    }
    node_object(node, metrics, at, meta, &mut |child, at| {
        node_json(child, device_type, at, meta)
    })
}

/// Proton's device type for a vendor; `None` for devices Proton's `util` has no peaks for.
fn device_type(peaks: &DevicePeaks) -> Option<&'static str> {
    match peaks.vendor.to_ascii_lowercase().as_str() {
        "nvidia" => Some("CUDA"),
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
    if let Some(arch) = arch {
        info.insert("arch".into(), json!(arch));
    }
    let clocks: Vec<f64> = report
        .run
        .iter()
        .flat_map(|run| run.kernels.iter())
        .filter_map(|record| record.metrics.get(SM_CLOCK).and_then(|m| m.value.as_f64()))
        .filter(|hz| *hz > 0.0)
        .collect();
    let run_clock_khz = Stats::from_samples(&clocks).ok().map(|s| s.median / 1e3);
    let boost_khz = peaks.boost_clock_mhz.map(|mhz| mhz * 1e3);
    if let Some(khz) = run_clock_khz.or(boost_khz) {
        info.insert("clock_rate".into(), json!(khz.round()));
        info.insert(
            "clock_source".into(),
            json!(if run_clock_khz.is_some() {
                "run"
            } else {
                "boost"
            }),
        );
    }
    if let (Some(fp32), Some(boost)) = (peaks.fp32_tflops, peaks.boost_clock_mhz) {
        let sms = fp32 * 1e12 / (256.0 * boost * 1e6);
        info.insert("num_sms".into(), json!(sms.round() as u64));
    }
    if let Some(mem_mhz) = peaks.memory_clock_mhz {
        let bus_bits = peaks.memory_bandwidth_gbs * 1e9 * 8.0 / (2.0 * mem_mhz * 1e6);
        info.insert("memory_clock_rate".into(), json!((mem_mhz * 1e3).round()));
        info.insert("bus_width".into(), json!(bus_bits.round() as u64));
    }
    info.insert("name".into(), json!(peaks.name));
    info
}

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
    let described = report.peaks.as_ref().and_then(|peaks| {
        let kind = device_type(peaks)?;
        let info = device_info(report, peaks);
        UTIL_FIELDS
            .iter()
            .all(|field| info.contains_key(*field))
            .then_some((kind, info))
    });
    let kind = described.as_ref().map(|(kind, _)| *kind);
    let root = node_json(&stable.tree.root, kind, &mut Vec::new(), &stable.metadata);
    let mut devices = Map::new();
    if let Some((kind, info)) = described {
        let mut by_id = Map::new();
        by_id.insert(DEVICE_ID.into(), Value::Object(info));
        devices.insert(kind.into(), Value::Object(by_id));
    }
    Value::Array(vec![root, Value::Object(devices)])
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
        for kernel in &found {
            assert_eq!(kernel["metrics"]["device_id"], "0");
            assert_eq!(kernel["metrics"]["device_type"], "CUDA");
            assert!(
                kernel["metrics"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .all(|k| !k.contains("(inc)"))
            );
        }
        let h200 = &doc[1]["CUDA"]["0"];
        assert_eq!(h200["arch"], "90");
        assert_eq!(h200["num_sms"], 132);
        // Proton's bandwidth 2 × bus × clock / 8 comes back to the table's 4.8 TB/s.
        let bus = h200["bus_width"].as_f64().unwrap();
        let clock_hz = h200["memory_clock_rate"].as_f64().unwrap() * 1e3;
        let bandwidth = 2.0 * bus * clock_hz / 8.0;
        assert!((bandwidth / 4.8e12 - 1.0).abs() < 1e-3, "{bandwidth}");
        assert_eq!(doc[0]["frame"]["name"], "ROOT");
    }
}
