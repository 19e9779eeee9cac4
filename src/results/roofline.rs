//! Roofline: device peaks (from `configs/devices.toml`, a user file, or measured values) and,
//! for a kernel or a group of kernels, the achieved share of peak bandwidth and compute and the
//! resource that bounds it.
//!
//! Compute share follows Proton's `util`: the least time the FLOPs could take at the peaks
//! (Σ flops_p / peak_p over the precisions counted) divided by the GPU time. Tensor-core FLOPs
//! are not in [`FlopCounts`], so the vector peaks are the ones compared against.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::record::{FlopCounts, KernelRecord};

/// The device table shipped with polyprof.
pub const BUILTIN_DEVICES: &str = include_str!("../../configs/devices.toml");

/// Below this share of peak on BOTH bandwidth and compute, a kernel is called latency-bound:
/// neither resource is near saturation, so launch overhead, dependency stalls, too little
/// parallelism, or a resource the roofline does not model (caches, shared memory, issue) limits
/// it.
pub const LATENCY_BOUND_PCT: f64 = 20.0;

/// Published or measured peaks of one device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevicePeaks {
    /// Short name (`H200`, `Apple M2 Max`).
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vendor: String,
    /// Substrings that identify the device in a profiler's device name.
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// DRAM / HBM bandwidth, GB/s (10^9 bytes per second).
    pub memory_bandwidth_gbs: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp64_tflops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp32_tflops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp16_tflops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_fp64_tflops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_tf32_tflops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_fp16_tflops: Option<f64>,
    /// Where the figures come from (vendor page, or how they were measured).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
}

impl DevicePeaks {
    /// Peaks measured by the caller (e.g. a STREAM-like copy and an FMA loop).
    pub fn measured(name: &str, memory_bandwidth_gbs: f64, fp32_tflops: f64) -> Self {
        DevicePeaks {
            name: name.to_string(),
            memory_bandwidth_gbs,
            fp32_tflops: Some(fp32_tflops),
            source: "measured".to_string(),
            ..Default::default()
        }
    }

    /// Least time, in ns, that `flops` can take at these peaks; `None` when no FLOPs were counted
    /// or a counted precision has no published peak.
    fn min_compute_time_ns(&self, flops: &FlopCounts) -> Option<f64> {
        let parts = [
            (flops.fp16, self.fp16_tflops),
            (flops.fp32, self.fp32_tflops),
            (flops.fp64, self.fp64_tflops),
        ];
        let mut total = 0.0;
        let mut any = false;
        for (count, peak) in parts {
            let Some(count) = count else { continue };
            if count == 0.0 {
                continue;
            }
            let peak = peak.filter(|p| *p > 0.0)?;
            // TFLOP/s = 10^3 FLOP per ns.
            total += count / (peak * 1e3);
            any = true;
        }
        any.then_some(total)
    }

    fn validate(&self, origin: &str) -> Result<()> {
        let peaks = [
            Some(self.memory_bandwidth_gbs),
            self.fp64_tflops,
            self.fp32_tflops,
            self.fp16_tflops,
            self.tensor_fp64_tflops,
            self.tensor_tf32_tflops,
            self.tensor_fp16_tflops,
        ];
        if self.name.trim().is_empty() {
            return Err(config(origin, "a [[device]] entry has an empty `name`"));
        }
        if peaks.iter().flatten().any(|p| !p.is_finite() || *p <= 0.0) {
            return Err(config(
                origin,
                format!(
                    "device `{}`: every peak must be a positive number",
                    self.name
                ),
            ));
        }
        Ok(())
    }
}

fn config(origin: &str, message: impl Into<String>) -> Error {
    Error::Config {
        origin: origin.to_string(),
        message: message.into(),
    }
}

/// A list of devices with lookup by profiler device name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceTable {
    #[serde(default, rename = "device")]
    pub devices: Vec<DevicePeaks>,
}

impl DeviceTable {
    /// The table embedded in polyprof (`configs/devices.toml`).
    pub fn builtin() -> Result<Self> {
        Self::from_toml(BUILTIN_DEVICES, "built-in configs/devices.toml")
    }

    /// Parse a table; `origin` names the source in error messages.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let table: DeviceTable = toml::from_str(text).map_err(|e| config(origin, e.to_string()))?;
        for device in &table.devices {
            device.validate(origin)?;
        }
        Ok(table)
    }

    /// Read a user table from a file.
    pub fn load(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).map_err(|e| Error::io("read device table", path, e))?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// The built-in table with `user`'s entries added; a user entry replaces a built-in one of the
    /// same name.
    pub fn with_overrides(mut self, user: DeviceTable) -> Self {
        for device in user.devices {
            self.devices
                .retain(|d| !d.name.eq_ignore_ascii_case(&device.name));
            self.devices.push(device);
        }
        self
    }

    /// The device whose name equals `name` (case-insensitive), else the one with the longest
    /// pattern found in `name` at word boundaries (`"NVIDIA H100 PCIe"` → `H100 PCIe`).
    pub fn lookup(&self, name: &str) -> Option<&DevicePeaks> {
        if let Some(exact) = self
            .devices
            .iter()
            .find(|d| d.name.eq_ignore_ascii_case(name.trim()))
        {
            return Some(exact);
        }
        let haystack = name.to_ascii_lowercase();
        let mut best: Option<(&DevicePeaks, usize)> = None;
        for device in &self.devices {
            let names = device.patterns.iter().chain(std::iter::once(&device.name));
            for pattern in names {
                let needle = pattern.to_ascii_lowercase();
                if !needle.is_empty()
                    && contains_word(&haystack, &needle)
                    && best.is_none_or(|(_, len)| needle.len() > len)
                {
                    best = Some((device, needle.len()));
                }
            }
        }
        best.map(|(device, _)| device)
    }

    /// Like [`lookup`](Self::lookup) but an error that lists the known names.
    pub fn require(&self, name: &str) -> Result<&DevicePeaks> {
        self.lookup(name).ok_or_else(|| Error::UnknownValue {
            what: "device",
            value: name.to_string(),
            valid: self
                .devices
                .iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

/// `needle` occurs in `haystack` with no letter or digit right before or after it.
fn contains_word(haystack: &str, needle: &str) -> bool {
    let bytes = haystack.as_bytes();
    haystack.match_indices(needle).any(|(start, _)| {
        let end = start + needle.len();
        let before = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        let after = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
        before && after
    })
}

/// What limits a kernel, by the thresholds documented on [`LATENCY_BOUND_PCT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Share of peak bandwidth ≥ share of peak compute, and ≥ the latency threshold.
    Memory,
    /// Share of peak compute > share of peak bandwidth, and ≥ the latency threshold.
    Compute,
    /// Both shares below [`LATENCY_BOUND_PCT`].
    Latency,
    /// No GPU time, no device peaks, or nothing measured to compare.
    Unknown,
}

impl Bound {
    pub fn as_str(&self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Latency => "latency",
            Bound::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Achieved throughput and its place under the roofline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RooflinePoint {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gflops_per_s: Option<f64>,
    /// DRAM GB/s (10^9 bytes per second).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gb_per_s: Option<f64>,
    /// FLOPs per DRAM byte.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arithmetic_intensity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pct_peak_bandwidth: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pct_peak_compute: Option<f64>,
    pub bound: Bound,
}

/// Place work (FLOPs by precision, DRAM bytes, GPU time in ns) under `peaks`.
pub fn evaluate(
    peaks: Option<&DevicePeaks>,
    flops: &FlopCounts,
    bytes: Option<f64>,
    gpu_time_ns: Option<f64>,
) -> RooflinePoint {
    let time = gpu_time_ns.filter(|t| *t > 0.0);
    let total_flops = flops.total();
    // FLOP per ns = GFLOP/s; byte per ns = GB/s.
    let gflops_per_s = time.and_then(|t| total_flops.map(|f| f / t));
    let gb_per_s = time.and_then(|t| bytes.map(|b| b / t));
    let arithmetic_intensity = match (total_flops, bytes) {
        (Some(f), Some(b)) if b > 0.0 => Some(f / b),
        _ => None,
    };
    let pct_peak_bandwidth = peaks
        .filter(|p| p.memory_bandwidth_gbs > 0.0)
        .and_then(|p| gb_per_s.map(|g| 100.0 * g / p.memory_bandwidth_gbs));
    let pct_peak_compute = match (peaks, time) {
        (Some(p), Some(t)) => p.min_compute_time_ns(flops).map(|min| 100.0 * min / t),
        _ => None,
    };
    RooflinePoint {
        gflops_per_s,
        gb_per_s,
        arithmetic_intensity,
        pct_peak_bandwidth,
        pct_peak_compute,
        bound: classify(pct_peak_bandwidth, pct_peak_compute),
    }
}

/// The roofline point of one kernel record.
pub fn evaluate_record(peaks: Option<&DevicePeaks>, record: &KernelRecord) -> RooflinePoint {
    evaluate(
        peaks,
        &record.flops,
        record.total_dram_bytes(),
        record.duration_ns,
    )
}

fn classify(bandwidth: Option<f64>, compute: Option<f64>) -> Bound {
    let (bw, fl) = match (bandwidth, compute) {
        (None, None) => return Bound::Unknown,
        (bw, fl) => (bw.unwrap_or(0.0), fl.unwrap_or(0.0)),
    };
    if bw < LATENCY_BOUND_PCT && fl < LATENCY_BOUND_PCT {
        Bound::Latency
    } else if bw >= fl {
        Bound::Memory
    } else {
        Bound::Compute
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> DeviceTable {
        DeviceTable::builtin().unwrap()
    }

    #[test]
    fn builtin_table_parses_and_covers_the_promised_devices() {
        let table = table();
        for name in [
            "NVIDIA H200",
            "NVIDIA H100 80GB HBM3",
            "NVIDIA A100-SXM4-80GB",
            "NVIDIA L40S",
            "AMD Instinct MI300X",
            "Intel(R) Data Center GPU Max 1550",
            "Intel(R) Arc(TM) B580 Graphics",
            "Apple M2 Max",
        ] {
            assert!(table.lookup(name).is_some(), "{name}");
        }
    }

    #[test]
    fn longest_pattern_wins_and_word_boundaries_hold() {
        let table = table();
        assert_eq!(table.lookup("NVIDIA H100 PCIe").unwrap().name, "H100 PCIe");
        assert_eq!(table.lookup("NVIDIA H100 80GB HBM3").unwrap().name, "H100");
        assert_eq!(table.lookup("NVIDIA A100-PCIE-40GB").unwrap().name, "A100");
        assert_eq!(table.lookup("Apple M1 Max").unwrap().name, "Apple M1 Max");
        assert_eq!(table.lookup("Apple M1").unwrap().name, "Apple M1");
        // `Apple M1` must not match inside `Apple M10`.
        assert!(table.lookup("Apple M10").is_none());
        assert_eq!(table.lookup("h200").unwrap().name, "H200");
        assert!(table.lookup("GeForce GTX 480").is_none());
        let err = table.require("GTX 480").unwrap_err().to_string();
        assert!(err.contains("H200"), "{err}");
    }

    #[test]
    fn user_entries_replace_builtin_ones() {
        let user = DeviceTable::from_toml(
            "[[device]]\nname = \"H200\"\nmatch = [\"H200\"]\nmemory_bandwidth_gbs = 4000.0\nfp32_tflops = 60.0\nsource = \"measured\"\n",
            "user.toml",
        )
        .unwrap();
        let table = table().with_overrides(user);
        let h200 = table.lookup("NVIDIA H200").unwrap();
        assert_eq!(h200.memory_bandwidth_gbs, 4000.0);
        assert_eq!(h200.fp64_tflops, None);
    }

    #[test]
    fn bad_tables_are_clear_errors() {
        let err = DeviceTable::from_toml("[[device]]\nname = \"x\"\n", "u.toml").unwrap_err();
        assert!(err.to_string().contains("u.toml"), "{err}");
        let err = DeviceTable::from_toml(
            "[[device]]\nname = \"x\"\nmemory_bandwidth_gbs = -1.0\n",
            "u.toml",
        )
        .unwrap_err();
        assert!(err.to_string().contains("positive"), "{err}");
        let err = DeviceTable::from_toml(
            "[[device]]\nname = \"x\"\nmemory_bandwidth_gbs = 1.0\nfp23_tflops = 2.0\n",
            "u.toml",
        )
        .unwrap_err();
        assert!(err.to_string().contains("fp23_tflops"), "{err}");
    }

    // Real H200 figures (tests/fixtures/runs/README.md): vector_add moved 189,068,288 bytes in
    // 58,784 ns; matmul_naive did 2·1,073,741,824 FP32 FLOPs in 415,840 ns.
    #[test]
    fn h200_kernels_land_where_expected() {
        let table = table();
        let h200 = table.lookup("NVIDIA H200");
        let vector_add = evaluate(
            h200,
            &FlopCounts {
                fp32: Some(16_777_216.0),
                ..Default::default()
            },
            Some(189_068_288.0),
            Some(58_784.0),
        );
        let gbps = vector_add.gb_per_s.unwrap();
        assert!((gbps - 3216.3).abs() < 0.1, "{gbps}");
        assert!((vector_add.pct_peak_bandwidth.unwrap() - 67.0).abs() < 0.1);
        assert_eq!(vector_add.bound, Bound::Memory);

        let naive = evaluate(
            h200,
            &FlopCounts {
                fp32: Some(2_147_483_648.0),
                ..Default::default()
            },
            Some(8_394_496.0),
            Some(415_840.0),
        );
        let pct = naive.pct_peak_compute.unwrap();
        assert!((pct - 7.707).abs() < 0.01, "{pct}");
        assert_eq!(naive.bound, Bound::Latency);

        // Same work at a quarter of the time would be compute-bound.
        let fast = evaluate(
            h200,
            &FlopCounts {
                fp32: Some(2_147_483_648.0),
                ..Default::default()
            },
            Some(8_394_496.0),
            Some(40_000.0),
        );
        assert_eq!(fast.bound, Bound::Compute);
    }

    #[test]
    fn missing_data_is_unknown_not_zero() {
        let point = evaluate(None, &FlopCounts::default(), None, Some(10.0));
        assert_eq!(point.bound, Bound::Unknown);
        assert_eq!(point.gb_per_s, None);
        // FP64 work on a device without an FP64 peak: no compute share.
        let l40s = table();
        let l40s = l40s.lookup("L40S");
        let point = evaluate(
            l40s,
            &FlopCounts {
                fp64: Some(1e9),
                ..Default::default()
            },
            None,
            Some(1e6),
        );
        assert_eq!(point.pct_peak_compute, None);
        assert_eq!(point.bound, Bound::Unknown);
    }
}
