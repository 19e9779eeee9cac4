//! Roofline: device peaks (from `configs/devices.toml`, a user file, or measured values) and,
//! for a kernel or a group of kernels, the achieved share of peak bandwidth and compute and the
//! resource that bounds it.
//!
//! Compute share follows Proton's `util`: the least time the FLOPs could take at the peaks
//! (Σ flops_p / peak_p over the precisions and pipes counted, tensor cores included) divided by
//! the GPU time. Peaks are published at a clock; when the record says which SM (DRAM) clock the
//! launch ran at, compute (bandwidth) peaks are scaled to it and the point records that clock.
//!
//! The verdict ([`Bound`] plus [`Limiter`]) uses FLOPs and DRAM bytes when they explain the
//! kernel, and the profiler's speed-of-light throughputs when FLOPs are missing or partial (a
//! tensor-core kernel measured without tensor counters), and lists which inputs it used.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::error::{Error, Result};
use crate::model::record::{FlopCounts, KernelRecord, Precision};
use crate::model::run::ProfileRun;
use crate::model::verdict_metrics::{DRAM_CLOCK, DRAM_SOL, MEMORY_SOL, PIPE_LOADS, SM_CLOCK};

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
    fn peak_at(&self, precision: Precision, sm_clock_hz: Option<f64>) -> Option<f64> {
        let peak = self.peak(precision)?;
        Some(match (sm_clock_hz, self.peak_clock_mhz(precision)) {
            (Some(hz), Some(mhz)) if hz > 0.0 && mhz > 0.0 => peak * hz / (mhz * 1e6),
            _ => peak,
        })
    }

    /// Least time, in ns, that `flops` can take at these peaks (scaled to `sm_clock_hz` when
    /// given), and the precision that takes the largest part of it; `None` when no FLOPs were
    /// counted or a counted precision has no published peak.
    fn min_compute_time_ns(
        &self,
        flops: &FlopCounts,
        sm_clock_hz: Option<f64>,
    ) -> Option<(f64, Precision)> {
        let mut total = 0.0;
        let mut dominant: Option<(Precision, f64)> = None;
        for (precision, count) in flops.by_precision() {
            let Some(count) = count.filter(|c| *c > 0.0) else {
                continue;
            };
            let peak = self.peak_at(precision, sm_clock_hz)?;
            // TFLOP/s = 10^3 FLOP per ns.
            let time = count / (peak * 1e3);
            total += time;
            if dominant.is_none_or(|(_, t)| time > t) {
                dominant = Some((precision, time));
            }
        }
        dominant.map(|(precision, _)| (total, precision))
    }

    /// Bandwidth (GB/s) scaled to `dram_clock_hz` when both clocks are known.
    fn bandwidth_at(&self, dram_clock_hz: Option<f64>) -> f64 {
        match (dram_clock_hz, self.memory_clock_mhz) {
            (Some(hz), Some(mhz)) if hz > 0.0 && mhz > 0.0 => {
                self.memory_bandwidth_gbs * hz / (mhz * 1e6)
            }
            _ => self.memory_bandwidth_gbs,
        }
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

/// The resource that limits a kernel: a pipe, a memory level, or none near saturation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// Tensor cores (FLOPs on the tensor pipe dominate the compute time).
    TensorPipe,
    /// The FP32/FP16/FP64 vector (FMA) pipes.
    FmaPipe,
    /// The integer and logic (ALU) pipe.
    AluPipe,
    /// The load/store pipe (shared, local and global memory instructions).
    LsuPipe,
    /// Instruction issue: the SMs issue near their peak rate, no one pipe dominates.
    Issue,
    /// The SMs by their speed of light, with no FLOP count that names the pipe.
    Sm,
    Dram,
    /// L1/L2: the memory speed of light is well above DRAM's.
    L2,
    Latency,
    Unknown,
}

impl Limiter {
    pub fn as_str(&self) -> &'static str {
        match self {
            Limiter::TensorPipe => "tensor pipe",
            Limiter::FmaPipe => "FMA pipe",
            Limiter::AluPipe => "ALU pipe",
            Limiter::LsuPipe => "load/store pipe",
            Limiter::Issue => "instruction issue",
            Limiter::Sm => "SM (pipe not measured)",
            Limiter::Dram => "DRAM",
            Limiter::L2 => "L1/L2 cache",
            Limiter::Latency => "latency",
            Limiter::Unknown => "unknown",
        }
    }
}

/// How the SM clock the launch ran at relates to the device's clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockState {
    /// The profiler locked the clocks at base (ncu's default `--clock-control base`); known from
    /// the run's command, not guessed from the clock (an unlocked matmul can run at base too).
    LockedBase,
    /// Within 2 % of the boost clock.
    Boost,
    /// Between: the GPU ran below boost (power or thermal limits), clocks not locked.
    BelowBoost,
    /// Above the boost figure of the table.
    AboveBoost,
}

/// Which inputs a verdict used, serialized as a list of names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inputs(u16);

impl Inputs {
    pub const FLOPS: Inputs = Inputs(1);
    pub const DRAM_BYTES: Inputs = Inputs(1 << 1);
    pub const SM_THROUGHPUT: Inputs = Inputs(1 << 2);
    pub const MEMORY_THROUGHPUT: Inputs = Inputs(1 << 3);
    pub const DRAM_THROUGHPUT: Inputs = Inputs(1 << 4);
    pub const SM_CLOCK: Inputs = Inputs(1 << 5);
    pub const DRAM_CLOCK: Inputs = Inputs(1 << 6);
    pub const PIPE_LOADS: Inputs = Inputs(1 << 7);
    const NAMES: [(Inputs, &'static str); 8] = [
        (Inputs::FLOPS, "flops"),
        (Inputs::DRAM_BYTES, "dram_bytes"),
        (Inputs::SM_THROUGHPUT, "sm_throughput_pct"),
        (Inputs::MEMORY_THROUGHPUT, "memory_throughput_pct"),
        (Inputs::DRAM_THROUGHPUT, "dram_throughput_pct"),
        (Inputs::SM_CLOCK, "sm_clock"),
        (Inputs::DRAM_CLOCK, "dram_clock"),
        (Inputs::PIPE_LOADS, "pipe_loads"),
    ];

    pub fn contains(&self, other: Inputs) -> bool {
        self.0 & other.0 == other.0
    }

    fn insert(&mut self, other: Inputs) {
        self.0 |= other.0;
    }

    pub fn names(&self) -> Vec<&'static str> {
        Self::NAMES
            .iter()
            .filter(|(flag, _)| self.contains(*flag))
            .map(|(_, name)| *name)
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }
}

impl Serialize for Inputs {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_seq(self.names())
    }
}

impl<'de> Deserialize<'de> for Inputs {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        let mut inputs = Inputs::default();
        for name in names {
            let flag = Self::NAMES
                .iter()
                .find(|(_, n)| *n == name)
                .ok_or_else(|| {
                    serde::de::Error::custom(format!("unknown verdict input `{name}`"))
                })?;
            inputs.insert(flag.0);
        }
        Ok(inputs)
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
    /// What limits the kernel, more precisely than `bound`.
    #[serde(default = "unknown_limiter")]
    pub limiter: Limiter,
    /// The precision (and pipe) whose peak takes the largest part of the compute time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<Precision>,
    /// The SM clock (GHz) the compute peaks were scaled to; `None`: the published peaks as
    /// they are (no clock measured, or the table has no clock for them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_ghz: Option<f64>,
    /// The DRAM clock (GHz) the bandwidth peak was scaled to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_clock_ghz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_state: Option<ClockState>,
    /// The inputs the verdict used.
    #[serde(default, skip_serializing_if = "Inputs::is_empty")]
    pub inputs: Inputs,
}

fn unknown_limiter() -> Limiter {
    Limiter::Unknown
}

impl RooflinePoint {
    /// The bound with its limiter for a table cell: `compute (tensor bf16)`, `memory (DRAM)`.
    pub fn bound_label(&self) -> String {
        let pipe = match (self.limiter, self.precision) {
            (Limiter::TensorPipe, Some(p)) => format!("tensor {}", p.data_type()),
            (Limiter::FmaPipe, Some(p)) => format!("FMA {}", p.data_type()),
            (Limiter::TensorPipe, None) => "tensor".to_string(),
            (Limiter::FmaPipe, None) => "FMA".to_string(),
            (Limiter::AluPipe, _) => "ALU".to_string(),
            (Limiter::LsuPipe, _) => "LSU".to_string(),
            (Limiter::Issue, _) => "issue".to_string(),
            (Limiter::Sm, _) => "SM".to_string(),
            (Limiter::Dram, _) => "DRAM".to_string(),
            (Limiter::L2, _) => "L1/L2".to_string(),
            (Limiter::Latency | Limiter::Unknown, _) => return self.bound.to_string(),
        };
        format!("{} ({pipe})", self.bound)
    }

    /// `compute-bound, tensor pipe (bf16), 79 % of peak at 1.59 GHz`.
    pub fn verdict(&self) -> String {
        let mut text = match self.bound {
            Bound::Unknown => return "unknown".to_string(),
            Bound::Latency => "latency-bound".to_string(),
            bound => format!("{bound}-bound, {}", self.limiter.as_str()),
        };
        if let (Some(precision), Bound::Compute) = (self.precision, self.bound) {
            text.push_str(&format!(" ({})", precision.data_type()));
        }
        let pct = match self.bound {
            Bound::Compute => self.pct_peak_compute,
            Bound::Memory => self.pct_peak_bandwidth,
            _ => None,
        };
        if let Some(pct) = pct {
            text.push_str(&format!(", {pct:.0} % of peak"));
            let clock = match self.bound {
                Bound::Compute => self.sm_clock_ghz,
                _ => self.dram_clock_ghz,
            };
            if let Some(ghz) = clock {
                text.push_str(&format!(" at {ghz:.2} GHz"));
            }
        }
        if self.clock_state == Some(ClockState::LockedBase) {
            text.push_str(" (clocks locked at base)");
        }
        text
    }
}

/// What a verdict can be based on; [`RooflineInputs::from_record`] fills it from a record.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RooflineInputs {
    pub flops: FlopCounts,
    /// DRAM bytes.
    pub bytes: Option<f64>,
    pub gpu_time_ns: Option<f64>,
    /// SM speed of light, % of peak (or, without it, the busiest pipe load).
    pub sm_throughput_pct: Option<f64>,
    /// The busiest of the pipe loads (`model::verdict_metrics::PIPE_LOADS`) and its %.
    pub busiest_pipe: Option<(Limiter, f64)>,
    /// Memory speed of light over L1, L2 and DRAM, % of peak.
    pub memory_throughput_pct: Option<f64>,
    /// DRAM speed of light, % of peak.
    pub dram_throughput_pct: Option<f64>,
    pub sm_clock_hz: Option<f64>,
    pub dram_clock_hz: Option<f64>,
    /// Whether the profiler locked the clocks (from the run's command; `None`: not known).
    pub clocks_locked: Option<bool>,
}

impl RooflineInputs {
    /// FLOPs, bytes and time only (aggregated rows, CPU scopes).
    pub fn work(flops: &FlopCounts, bytes: Option<f64>, gpu_time_ns: Option<f64>) -> Self {
        RooflineInputs {
            flops: *flops,
            bytes,
            gpu_time_ns,
            ..Default::default()
        }
    }

    /// Everything a record offers. The record's `memory_throughput_pct` is the full memory
    /// speed of light when ncu's `gpu__compute_memory_throughput` was collected, else DRAM's.
    pub fn from_record(record: &KernelRecord) -> Self {
        let first = |names: [&str; 2]| names.iter().find_map(|name| record.metric(name));
        let full_memory_sol = first([MEMORY_SOL, DETAILS_MEMORY_SOL]).is_some();
        RooflineInputs {
            flops: record.flops,
            bytes: record.total_dram_bytes(),
            gpu_time_ns: record.duration_ns,
            sm_throughput_pct: record.sm_throughput_pct,
            busiest_pipe: busiest_pipe(record),
            memory_throughput_pct: record.memory_throughput_pct.filter(|_| full_memory_sol),
            dram_throughput_pct: first([DRAM_SOL, DETAILS_DRAM_SOL])
                .or(record.memory_throughput_pct.filter(|_| !full_memory_sol)),
            sm_clock_hz: first([SM_CLOCK, DETAILS_SM_CLOCK]).filter(|hz| *hz > 0.0),
            dram_clock_hz: first([DRAM_CLOCK, DETAILS_DRAM_CLOCK]).filter(|hz| *hz > 0.0),
            clocks_locked: None,
        }
    }
}

/// The busiest pipe load a record carries; on a tie the earlier of [`PIPE_LOADS`] wins.
fn busiest_pipe(record: &KernelRecord) -> Option<(Limiter, f64)> {
    let limiters = [
        Limiter::TensorPipe,
        Limiter::FmaPipe,
        Limiter::AluPipe,
        Limiter::LsuPipe,
        Limiter::Issue,
    ];
    PIPE_LOADS
        .iter()
        .zip(limiters)
        .filter_map(|(name, limiter)| record.metric(name).map(|pct| (limiter, pct)))
        .fold(None, |best, (limiter, pct)| match best {
            Some((_, top)) if top >= pct => best,
            _ => Some((limiter, pct)),
        })
}

// The same figures as ncu's details page names them (section: label).
const DETAILS_MEMORY_SOL: &str = "GPU Speed Of Light Throughput: Memory Throughput";
const DETAILS_DRAM_SOL: &str = "GPU Speed Of Light Throughput: DRAM Throughput";
const DETAILS_SM_CLOCK: &str = "GPU Speed Of Light Throughput: SM Frequency";
const DETAILS_DRAM_CLOCK: &str = "GPU Speed Of Light Throughput: DRAM Frequency";

/// Whether a run's profiler locked the GPU clocks: ncu does unless `--clock-control none` is on
/// its command line. `None` for other profilers and runs without a plan.
pub fn clocks_locked(run: &ProfileRun) -> Option<bool> {
    let plan = run.plan.as_ref()?;
    if plan.profiler != "ncu" {
        return None;
    }
    let argv = &plan.steps.first()?.command.argv;
    let value = argv.iter().enumerate().find_map(|(index, arg)| {
        if arg == "--clock-control" {
            argv.get(index + 1).and_then(|a| a.to_str())
        } else {
            arg.to_str()?.strip_prefix("--clock-control=")
        }
    });
    Some(value.is_none_or(|v| v != "none"))
}

/// Place work (FLOPs by precision, DRAM bytes, GPU time in ns) under `peaks`.
pub fn evaluate(
    peaks: Option<&DevicePeaks>,
    flops: &FlopCounts,
    bytes: Option<f64>,
    gpu_time_ns: Option<f64>,
) -> RooflinePoint {
    evaluate_inputs(peaks, &RooflineInputs::work(flops, bytes, gpu_time_ns))
}

/// The roofline point of one kernel record: clocks and speed-of-light figures included.
pub fn evaluate_record(peaks: Option<&DevicePeaks>, record: &KernelRecord) -> RooflinePoint {
    evaluate_inputs(peaks, &RooflineInputs::from_record(record))
}

/// [`evaluate_record`] for a record of `run`, which says whether clocks were locked.
pub fn evaluate_run_record(
    peaks: Option<&DevicePeaks>,
    run: Option<&ProfileRun>,
    record: &KernelRecord,
) -> RooflinePoint {
    let inputs = RooflineInputs {
        clocks_locked: run.and_then(clocks_locked),
        ..RooflineInputs::from_record(record)
    };
    evaluate_inputs(peaks, &inputs)
}

/// FLOP-based compute shares below this fraction of the SM speed of light are "partial": the
/// FLOP counters missed the work that keeps the SMs busy (tensor pipes without tensor counters).
const PARTIAL_FLOPS_RATIO: f64 = 0.5;
/// A pipe whose load is at least this fraction of the SM load names the compute limiter.
const PIPE_NAMES_LOAD: f64 = 0.8;
/// A memory speed of light this many points above DRAM's names L1/L2 as the limiter.
const CACHE_MARGIN_PCT: f64 = 10.0;

/// Place everything known about a launch under `peaks` and name its limiter.
pub fn evaluate_inputs(peaks: Option<&DevicePeaks>, inputs: &RooflineInputs) -> RooflinePoint {
    let time = inputs.gpu_time_ns.filter(|t| *t > 0.0);
    let total_flops = inputs.flops.total();
    // FLOP per ns = GFLOP/s; byte per ns = GB/s.
    let gflops_per_s = time.and_then(|t| total_flops.map(|f| f / t));
    let gb_per_s = time.and_then(|t| inputs.bytes.map(|b| b / t));
    let arithmetic_intensity = match (total_flops, inputs.bytes) {
        (Some(f), Some(b)) if b > 0.0 => Some(f / b),
        _ => None,
    };
    let mut used = Inputs::default();
    let sm_clock = inputs.sm_clock_hz.filter(|_| peaks.is_some());
    let dram_clock = inputs
        .dram_clock_hz
        .filter(|_| peaks.is_some_and(|p| p.memory_clock_mhz.is_some()));
    let pct_peak_bandwidth = peaks
        .filter(|p| p.memory_bandwidth_gbs > 0.0)
        .and_then(|p| gb_per_s.map(|g| 100.0 * g / p.bandwidth_at(dram_clock)));
    let compute = match (peaks, time) {
        (Some(p), Some(t)) => p
            .min_compute_time_ns(&inputs.flops, sm_clock)
            .map(|(min, precision)| (100.0 * min / t, precision)),
        _ => None,
    };
    let pct_peak_compute = compute.map(|(pct, _)| pct);
    let precision = compute.map(|(_, precision)| precision);
    // Clocks count as used only where they scaled a peak that entered a share.
    let scaled = precision
        .and_then(|p| peaks.and_then(|d| d.peak_clock_mhz(p)))
        .is_some();
    let sm_clock_ghz = sm_clock.filter(|_| scaled).map(|hz| hz / 1e9);
    if sm_clock_ghz.is_some() {
        used.insert(Inputs::SM_CLOCK);
    }
    let dram_clock_ghz = dram_clock
        .filter(|_| pct_peak_bandwidth.is_some())
        .map(|hz| hz / 1e9);
    if dram_clock_ghz.is_some() {
        used.insert(Inputs::DRAM_CLOCK);
    }
    let clock_state = if inputs.clocks_locked == Some(true) {
        Some(ClockState::LockedBase)
    } else {
        inputs
            .sm_clock_hz
            .and_then(|hz| peaks.and_then(|p| clock_state(p, hz)))
    };

    // Compute side: FLOPs when they explain the SMs' load, else the SM speed of light.
    let sm_sol = inputs.sm_throughput_pct;
    let flops_partial = match (pct_peak_compute, sm_sol) {
        (None, _) => true,
        (Some(share), Some(sol)) => sol >= LATENCY_BOUND_PCT && share < sol * PARTIAL_FLOPS_RATIO,
        (Some(_), None) => false,
    };
    let (compute_share, compute_limiter) = if !flops_partial {
        used.insert(Inputs::FLOPS);
        let limiter = match precision {
            Some(p) if p.is_tensor() => Limiter::TensorPipe,
            _ => Limiter::FmaPipe,
        };
        (pct_peak_compute, limiter)
    } else if let Some(sol) = sm_sol {
        used.insert(Inputs::SM_THROUGHPUT);
        // Tensor FLOPs that were counted still name the pipe, even if their share is partial.
        let busiest = inputs
            .busiest_pipe
            .filter(|(_, pct)| *pct >= sol * PIPE_NAMES_LOAD);
        let limiter = if inputs.flops.tensor_total().is_some_and(|t| t > 0.0) {
            used.insert(Inputs::FLOPS);
            Limiter::TensorPipe
        } else if let Some((pipe, _)) = busiest {
            used.insert(Inputs::PIPE_LOADS);
            pipe
        } else {
            Limiter::Sm
        };
        (Some(sol), limiter)
    } else {
        (None, Limiter::Unknown)
    };

    // Memory side: DRAM from bytes or DRAM speed of light; L1/L2 when the memory speed of light
    // is well above DRAM's.
    let mut dram_share: Option<f64> = None;
    if let Some(pct) = pct_peak_bandwidth {
        used.insert(Inputs::DRAM_BYTES);
        dram_share = Some(pct);
    }
    if let Some(pct) = inputs.dram_throughput_pct {
        used.insert(Inputs::DRAM_THROUGHPUT);
        dram_share = Some(dram_share.map_or(pct, |d| d.max(pct)));
    }
    let (memory_share, memory_limiter) = match (inputs.memory_throughput_pct, dram_share) {
        (Some(full), dram) if full >= dram.unwrap_or(0.0) + CACHE_MARGIN_PCT => {
            used.insert(Inputs::MEMORY_THROUGHPUT);
            (Some(full), Limiter::L2)
        }
        (Some(full), Some(dram)) => {
            used.insert(Inputs::MEMORY_THROUGHPUT);
            (Some(full.max(dram)), Limiter::Dram)
        }
        (full, dram) => {
            if full.is_some() {
                used.insert(Inputs::MEMORY_THROUGHPUT);
            }
            (full.or(dram), Limiter::Dram)
        }
    };

    let (bound, limiter) = match (compute_share, memory_share) {
        (None, None) => (Bound::Unknown, Limiter::Unknown),
        (c, m) => {
            let (c, m) = (c.unwrap_or(0.0), m.unwrap_or(0.0));
            if c < LATENCY_BOUND_PCT && m < LATENCY_BOUND_PCT {
                (Bound::Latency, Limiter::Latency)
            } else if m >= c {
                (Bound::Memory, memory_limiter)
            } else {
                (Bound::Compute, compute_limiter)
            }
        }
    };
    RooflinePoint {
        gflops_per_s,
        gb_per_s,
        arithmetic_intensity,
        pct_peak_bandwidth,
        pct_peak_compute,
        bound,
        limiter,
        precision,
        sm_clock_ghz,
        dram_clock_ghz,
        clock_state,
        inputs: used,
    }
}

fn clock_state(peaks: &DevicePeaks, hz: f64) -> Option<ClockState> {
    let mhz = hz / 1e6;
    let boost = peaks.boost_clock_mhz?;
    Some(if (mhz - boost).abs() <= 0.02 * boost {
        ClockState::Boost
    } else if mhz > boost {
        ClockState::AboveBoost
    } else {
        ClockState::BelowBoost
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
    fn clocks_are_locked_unless_the_ncu_command_says_none() {
        use crate::model::plan::{CommandSpec, EndMarker, Graces, Plan, Step};
        let run_with = |profiler: &str, args: &[&str]| {
            let mut run = ProfileRun::new("x", profiler, &[], Path::new("x"));
            let argv = crate::model::arg::args(args.iter().copied());
            run.plan = Some(Plan {
                profiler: profiler.to_string(),
                target: Vec::new(),
                steps: vec![Step::new(
                    "profile",
                    CommandSpec::new(argv),
                    EndMarker::default(),
                    Graces::default(),
                )],
                outputs: Default::default(),
                capabilities: Vec::new(),
            });
            run
        };
        let ncu = |args: &[&str]| clocks_locked(&run_with("ncu", args));
        assert_eq!(ncu(&["ncu", "--clock-control", "none", "app"]), Some(false));
        assert_eq!(ncu(&["ncu", "--clock-control", "base", "app"]), Some(true));
        assert_eq!(ncu(&["ncu", "--clock-control=none", "app"]), Some(false));
        // ncu's default is base.
        assert_eq!(ncu(&["ncu", "--csv", "app"]), Some(true));
        assert_eq!(clocks_locked(&run_with("vtune", &["vtune"])), None);
        let mut no_plan = run_with("ncu", &[]);
        no_plan.plan = None;
        assert_eq!(clocks_locked(&no_plan), None);
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
