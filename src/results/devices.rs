//! Device peaks: the table of published or measured peaks per precision and the clocks they
//! assume (`configs/devices.toml`, a user file, or measured values), looked up by the
//! profiler's device name.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::error::{Error, Result};
use crate::model::record::{FlopCounts, Precision};

/// The device table shipped with polyprof.
pub const BUILTIN_DEVICES: &str = include_str!("../../configs/devices.toml");
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_bf16_tflops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_fp8_tflops: Option<f64>,
    /// Dense INT8 tensor throughput, TOPS (10^12 ops per second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_int8_tops: Option<f64>,
    /// The SM clock (MHz) the vector peaks assume: the boost clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost_clock_mhz: Option<f64>,
    /// The SM clock (MHz) the tensor peaks assume, when it differs from `boost_clock_mhz`
    /// (H100/H200: tensor figures at 1830 MHz, vector figures at 1980 MHz).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_clock_mhz: Option<f64>,
    /// Base clock (MHz): where `ncu --clock-control base` (ncu's default) locks the SMs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_clock_mhz: Option<f64>,
    /// The DRAM clock (MHz) the bandwidth figure assumes, as ncu's
    /// `dram__cycles_elapsed.avg.per_second` reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_clock_mhz: Option<f64>,
    /// The last-level (L2) cache, MiB: how much written data can stay on chip after a kernel
    /// ends (the eval audit's write floors and physics check leave that much out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_cache_mib: Option<f64>,
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

    /// The published peak (TFLOP/s, TOPS for INT8) of one precision on one pipe.
    pub fn peak(&self, precision: Precision) -> Option<f64> {
        match precision {
            Precision::Fp16 => self.fp16_tflops,
            Precision::Fp32 => self.fp32_tflops,
            Precision::Fp64 => self.fp64_tflops,
            Precision::TensorFp16 => self.tensor_fp16_tflops,
            Precision::TensorBf16 => self.tensor_bf16_tflops,
            Precision::TensorTf32 => self.tensor_tf32_tflops,
            Precision::TensorFp8 => self.tensor_fp8_tflops,
            Precision::TensorInt8 => self.tensor_int8_tops,
            Precision::TensorFp64 => self.tensor_fp64_tflops,
        }
        .filter(|p| *p > 0.0)
    }

    /// The SM clock (MHz) a precision's peak assumes. FP64 tensor runs at the vector clock on
    /// Hopper (67 TFLOP/s = 132 SMs × 256 FLOP × 1.98 GHz), so only the narrower tensor types
    /// use `tensor_clock_mhz`.
    pub fn peak_clock_mhz(&self, precision: Precision) -> Option<f64> {
        let tensor = precision.is_tensor() && precision != Precision::TensorFp64;
        if tensor {
            self.tensor_clock_mhz.or(self.boost_clock_mhz)
        } else {
            self.boost_clock_mhz
        }
    }

    /// A precision's peak scaled to `sm_clock_hz` when both clocks are known.
    pub(crate) fn peak_at(&self, precision: Precision, sm_clock_hz: Option<f64>) -> Option<f64> {
        let peak = self.peak(precision)?;
        Some(match (sm_clock_hz, self.peak_clock_mhz(precision)) {
            (Some(hz), Some(mhz)) if hz > 0.0 && mhz > 0.0 => peak * hz / (mhz * 1e6),
            _ => peak,
        })
    }

    /// Least time, in ns, that `flops` can take at these peaks (scaled to `sm_clock_hz` when
    /// given), and the precision that takes the largest part of it; `None` when no FLOPs were
    /// counted or a counted precision has no published peak.
    ///
    /// Precisions that share a pipe take turns on it, so their times add up; separate pipes
    /// (tensor cores, the FMA pipe, the FP64 units) run at the same time, so the least time is
    /// the busiest pipe's. Adding a cuBLAS matmul's FP32 epilogue to its tensor time counted
    /// FP32 work as if the tensor cores had waited for it, and put FP8 matmuls above 100 %.
    pub(crate) fn min_compute_time_ns(
        &self,
        flops: &FlopCounts,
        sm_clock_hz: Option<f64>,
    ) -> Option<(f64, Precision)> {
        // Per pipe: its total time and its largest precision.
        let mut pipes: [Option<(f64, Precision, f64)>; 3] = [None; 3];
        for (precision, count) in flops.by_precision() {
            let Some(count) = count.filter(|c| *c > 0.0) else {
                continue;
            };
            let peak = self.peak_at(precision, sm_clock_hz)?;
            // TFLOP/s = 10^3 FLOP per ns.
            let time = count / (peak * 1e3);
            let slot = &mut pipes[compute_pipe(precision) as usize];
            *slot = Some(match *slot {
                None => (time, precision, time),
                Some((total, _, top_time)) if time > top_time => (total + time, precision, time),
                Some((total, top, top_time)) => (total + time, top, top_time),
            });
        }
        pipes
            .into_iter()
            .flatten()
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(total, precision, _)| (total, precision))
    }

    /// Bandwidth (GB/s) scaled to `dram_clock_hz` when both clocks are known.
    pub(crate) fn bandwidth_at(&self, dram_clock_hz: Option<f64>) -> f64 {
        match (dram_clock_hz, self.memory_clock_mhz) {
            (Some(hz), Some(mhz)) if hz > 0.0 && mhz > 0.0 => {
                self.memory_bandwidth_gbs * hz / (mhz * 1e6)
            }
            _ => self.memory_bandwidth_gbs,
        }
    }

    /// The L2 size in bytes, when the table gives it.
    pub fn l2_cache_bytes(&self) -> Option<f64> {
        self.l2_cache_mib.map(|mib| mib * 1024.0 * 1024.0)
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
            self.tensor_bf16_tflops,
            self.tensor_fp8_tflops,
            self.tensor_int8_tops,
            self.boost_clock_mhz,
            self.tensor_clock_mhz,
            self.base_clock_mhz,
            self.memory_clock_mhz,
            self.l2_cache_mib,
        ];
        if self.name.trim().is_empty() {
            return Err(config(origin, "a [[device]] entry has an empty `name`"));
        }
        if peaks.iter().flatten().any(|p| !p.is_finite() || *p <= 0.0) {
            return Err(config(
                origin,
                format!(
                    "device `{}`: every peak and clock must be a positive number",
                    self.name
                ),
            ));
        }
        Ok(())
    }
}

/// The SM units whose work overlaps: each precision's FLOPs occupy one of them.
#[derive(Clone, Copy)]
enum ComputePipe {
    Tensor = 0,
    /// FP32 and FP16 vector math.
    Fma = 1,
    /// FP64 vector math (separate units on every GPU in the table).
    Fp64 = 2,
}

fn compute_pipe(precision: Precision) -> ComputePipe {
    match precision {
        Precision::Fp16 | Precision::Fp32 => ComputePipe::Fma,
        Precision::Fp64 => ComputePipe::Fp64,
        _ => ComputePipe::Tensor,
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
        // Regular files only: a FIFO or `/dev/zero` named as the table would hang `report`.
        let bytes = crate::model::input::read_regular(path)
            .map_err(|e| Error::io("read device table", path, e))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::io(
                "read device table",
                path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"),
            )
        })?;
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
}
