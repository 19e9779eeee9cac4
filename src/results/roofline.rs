//! The verdict: for a kernel launch (or launches added up), the achieved share of peak
//! bandwidth and compute under a device's peaks ([`crate::results::devices`]) and the resource
//! that bounds it. [`evaluate_inputs`] is the one verdict function: the JSON, the CSV and the
//! table's rows (through [`RooflineInputs::combine`] and each launch's verdict) all use it.
//!
//! Compute share follows Proton's `util`: the least time the FLOPs could take at the peaks
//! (Σ flops_p / peak_p per pipe, tensor cores included; the busiest pipe's time, since pipes
//! overlap) divided by the GPU time. Peaks are published at a clock; when the record says which SM (DRAM) clock the
//! launch ran at, compute (bandwidth) peaks are scaled to it and the point records that clock.
//!
//! The verdict ([`Bound`] plus [`Limiter`]) uses FLOPs and DRAM bytes when they explain the
//! kernel, and the profiler's speed-of-light throughputs when FLOPs are missing or partial (a
//! tensor-core kernel measured without tensor counters), and lists which inputs it used.

use serde::{Deserialize, Serialize};

use crate::model::record::{FlopCounts, KernelRecord, Precision};
use crate::model::run::ProfileRun;
use crate::model::verdict_metrics::{DRAM_CLOCK, DRAM_SOL, MEMORY_SOL, PIPE_LOADS, SM_CLOCK};
use crate::results::devices::DevicePeaks;
use crate::results::levels::Level;

/// Below this share of peak on BOTH bandwidth and compute, a kernel is called latency-bound:
/// neither resource is near saturation, so launch overhead, dependency stalls, too little
/// parallelism, or a resource the roofline does not model (caches, shared memory, issue) limits
/// it.
pub const LATENCY_BOUND_PCT: f64 = 20.0;

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

/// What a deciding figure measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// The FLOPs' share of the compute peak of `precision`.
    Flops,
    /// The SM speed of light with no pipe named.
    Sm,
    /// One pipe's load (`pipe`).
    Pipe,
    /// DRAM: bytes over the bandwidth peak, or DRAM's speed of light.
    Dram,
    /// The memory speed of light over L1, L2 and DRAM (ncu's `Memory Throughput`).
    MemorySol,
    /// L2 traffic over the L2 roof the capture measured (ncu's hierarchical roofline).
    L2,
    /// L1 (global/local) traffic over the L1 roof the capture measured.
    L1,
}

/// A figure a verdict was decided by: what it measures and its % of peak.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub kind: FigureKind,
    pub pct: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<Precision>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipe: Option<Limiter>,
}

impl Figure {
    fn new(kind: FigureKind, pct: f64) -> Self {
        Figure {
            kind,
            pct,
            precision: None,
            pipe: None,
        }
    }

    /// What it measures, short: `DRAM`, `tensor fp16`, `SM`, `LSU pipe`.
    pub fn label(&self) -> String {
        match self.kind {
            FigureKind::Flops => match self.precision {
                Some(p) if p.is_tensor() => format!("tensor {}", p.data_type()),
                Some(p) => format!("FLOP {}", p.data_type()),
                None => "FLOP".to_string(),
            },
            FigureKind::Sm => "SM".to_string(),
            FigureKind::Pipe => match self.pipe {
                Some(Limiter::TensorPipe) => "tensor pipe",
                Some(Limiter::FmaPipe) => "FMA pipe",
                Some(Limiter::AluPipe) => "ALU pipe",
                Some(Limiter::LsuPipe) => "LSU pipe",
                Some(Limiter::Issue) => "issue",
                _ => "SM",
            }
            .to_string(),
            FigureKind::Dram => "DRAM".to_string(),
            FigureKind::MemorySol => "L1/L2".to_string(),
            FigureKind::L2 => "L2".to_string(),
            FigureKind::L1 => "L1".to_string(),
        }
    }

    /// `DRAM 71 %`.
    pub fn text(&self) -> String {
        format!("{} {:.0} %", self.label(), self.pct)
    }

    /// Whether it measures a memory level.
    pub fn is_memory(&self) -> bool {
        matches!(
            self.kind,
            FigureKind::Dram | FigureKind::MemorySol | FigureKind::L2 | FigureKind::L1
        )
    }
}

/// The figures that decided a verdict: one for memory and compute, the largest of each side
/// for latency (both below the threshold). Serialized as a list.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DecidedBy(pub [Option<Figure>; 2]);

impl DecidedBy {
    pub fn figures(&self) -> impl Iterator<Item = &Figure> {
        self.0.iter().flatten()
    }

    pub fn is_empty(&self) -> bool {
        self.0[0].is_none()
    }

    /// `DRAM 71 %` or `SM 12 %, DRAM 9 %`.
    pub fn text(&self) -> String {
        self.figures()
            .map(Figure::text)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Serialize for DecidedBy {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_seq(self.figures())
    }
}

impl<'de> Deserialize<'de> for DecidedBy {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let figures = Vec::<Figure>::deserialize(deserializer)?;
        let mut out = DecidedBy::default();
        for (slot, figure) in out.0.iter_mut().zip(figures) {
            *slot = Some(figure);
        }
        Ok(out)
    }
}

/// The verdict's rule in words, written once: the table's footer, the HTML page and the docs
/// print this text.
pub fn rule_text() -> String {
    format!(
        "bound = the larger of the memory figure (DRAM, L2 or L1: bytes or speed of light) and \
         the compute figure (FLOPs, else the SM or pipe load when the FLOPs explain under half of \
         it; left of the ridge an SM or load/store load does not count), latency when both are \
         below {LATENCY_BOUND_PCT:.0} % (both shown); the figure beside the bound decided it"
    )
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
    pub const CACHE_BYTES: Inputs = Inputs(1 << 8);
    const NAMES: [(Inputs, &'static str); 9] = [
        (Inputs::FLOPS, "flops"),
        (Inputs::DRAM_BYTES, "dram_bytes"),
        (Inputs::SM_THROUGHPUT, "sm_throughput_pct"),
        (Inputs::MEMORY_THROUGHPUT, "memory_throughput_pct"),
        (Inputs::DRAM_THROUGHPUT, "dram_throughput_pct"),
        (Inputs::SM_CLOCK, "sm_clock"),
        (Inputs::DRAM_CLOCK, "dram_clock"),
        (Inputs::PIPE_LOADS, "pipe_loads"),
        (Inputs::CACHE_BYTES, "cache_bytes"),
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
    /// A share above 100 % of its clock-scaled peak, which no kernel can reach: the device
    /// table's peak or clock, or the counters, are wrong. Reports show it as a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above_peak: Option<AbovePeak>,
    /// The figures that decided `bound` (`DRAM 71 %`; latency: the largest of each side).
    #[serde(default, skip_serializing_if = "DecidedBy::is_empty")]
    pub decided_by: DecidedBy,
}

/// Which share of a [`RooflinePoint`] is above 100 % of its peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AbovePeak {
    Compute,
    Bandwidth,
    Both,
}

impl AbovePeak {
    fn of(pct_compute: Option<f64>, pct_bandwidth: Option<f64>) -> Option<Self> {
        let over = |pct: Option<f64>| pct.is_some_and(|p| p > 100.0);
        match (over(pct_compute), over(pct_bandwidth)) {
            (true, true) => Some(AbovePeak::Both),
            (true, false) => Some(AbovePeak::Compute),
            (false, true) => Some(AbovePeak::Bandwidth),
            (false, false) => None,
        }
    }
}

fn unknown_limiter() -> Limiter {
    Limiter::Unknown
}

impl RooflinePoint {
    /// The bound with the figure that decided it, for a table cell: `memory · DRAM 71 %`,
    /// `compute · tensor fp16 88 %`, `latency · SM 12 %, DRAM 9 %`.
    pub fn bound_label(&self) -> String {
        if self.bound == Bound::Unknown || self.decided_by.is_empty() {
            return self.bound.to_string();
        }
        format!("{} · {}", self.bound, self.decided_by.text())
    }

    /// The bound with its limiter, without figures: launches with the same key got the same
    /// verdict (`compute (tensor bf16)`, `memory (DRAM)`).
    pub fn bound_key(&self) -> String {
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
        if let Some(warning) = self.above_peak_warning() {
            text.push_str(&format!("; {warning}"));
        }
        text
    }

    /// Why a share above 100 % of its peak cannot be, in words; `None` when none is.
    pub fn above_peak_warning(&self) -> Option<String> {
        let above = self.above_peak?;
        let mut parts = Vec::new();
        if matches!(above, AbovePeak::Compute | AbovePeak::Both) {
            let precision = self
                .precision
                .map(|p| format!(" ({})", p.data_type()))
                .unwrap_or_default();
            let clock = self
                .sm_clock_ghz
                .map(|g| format!(" at {g:.2} GHz"))
                .unwrap_or_default();
            parts.push(format!(
                "{:.1} % of the compute peak{precision}{clock}",
                self.pct_peak_compute.unwrap_or(f64::NAN)
            ));
        }
        if matches!(above, AbovePeak::Bandwidth | AbovePeak::Both) {
            let clock = self
                .dram_clock_ghz
                .map(|g| format!(" at {g:.2} GHz"))
                .unwrap_or_default();
            parts.push(format!(
                "{:.1} % of the DRAM bandwidth peak{clock}",
                self.pct_peak_bandwidth.unwrap_or(f64::NAN)
            ));
        }
        Some(format!(
            "ABOVE PEAK: {}, which cannot be; the device's peak or clock in the device table \
             (configs/devices.toml, --devices FILE) or the profiler's counters are wrong",
            parts.join(" and ")
        ))
    }
}

/// One cache level's traffic in a launch (or launches added up): bytes, and the level's roof
/// in GB/s when the capture carried it (ncu's hierarchical roofline peak at the unit's clock).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheTraffic {
    pub bytes: f64,
    pub peak_gbs: Option<f64>,
}

impl CacheTraffic {
    /// Launches added up: bytes summed, the roof averaged over the GPU time of the launches
    /// that carry one (its clock moves from launch to launch as the SM clock does).
    fn combine(
        launches: impl Iterator<Item = (Option<CacheTraffic>, Option<f64>)>,
    ) -> Option<Self> {
        let mut total: Option<CacheTraffic> = None;
        let (mut sum, mut weight) = (0.0, 0.0);
        for (traffic, time) in launches {
            let Some(traffic) = traffic else { continue };
            let entry = total.get_or_insert(CacheTraffic {
                bytes: 0.0,
                peak_gbs: None,
            });
            entry.bytes += traffic.bytes;
            if let (Some(peak), Some(time)) = (traffic.peak_gbs, time.filter(|t| *t > 0.0)) {
                sum += peak * time;
                weight += time;
            }
        }
        total.map(|t| CacheTraffic {
            peak_gbs: (weight > 0.0).then(|| sum / weight),
            ..t
        })
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
    /// L2 and L1 traffic over their roofs, % (the hierarchical roofline's cache levels).
    pub l2_pct: Option<f64>,
    pub l1_pct: Option<f64>,
    /// The bytes of those cache levels and their roofs (GB/s), for the hierarchical roofline's
    /// points: what `l2_pct` and `l1_pct` are made of.
    pub l2: Option<CacheTraffic>,
    pub l1: Option<CacheTraffic>,
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

    /// Launches added up, as an aggregated row measures them: work and time summed; speeds of
    /// light and clocks averaged over the launches' GPU time (each over the launches that have
    /// it); the busiest pipe load any launch had; clocks locked only when every launch says so.
    pub fn combine(launches: &[RooflineInputs]) -> Self {
        let mut total = RooflineInputs::default();
        for launch in launches {
            total.flops.accumulate(&launch.flops);
            total.bytes = add(total.bytes, launch.bytes);
            total.gpu_time_ns = add(total.gpu_time_ns, launch.gpu_time_ns);
        }
        let weighted = |value: fn(&RooflineInputs) -> Option<f64>| {
            let (sum, weight) = launches
                .iter()
                .filter_map(|l| Some((value(l)?, l.gpu_time_ns.filter(|t| *t > 0.0)?)))
                .fold((0.0, 0.0), |(s, w), (v, t)| (s + v * t, w + t));
            (weight > 0.0).then(|| sum / weight)
        };
        total.sm_throughput_pct = weighted(|l| l.sm_throughput_pct);
        total.memory_throughput_pct = weighted(|l| l.memory_throughput_pct);
        total.dram_throughput_pct = weighted(|l| l.dram_throughput_pct);
        total.l2_pct = weighted(|l| l.l2_pct);
        total.l1_pct = weighted(|l| l.l1_pct);
        total.l2 = CacheTraffic::combine(launches.iter().map(|l| (l.l2, l.gpu_time_ns)));
        total.l1 = CacheTraffic::combine(launches.iter().map(|l| (l.l1, l.gpu_time_ns)));
        total.sm_clock_hz = weighted(|l| l.sm_clock_hz);
        total.dram_clock_hz = weighted(|l| l.dram_clock_hz);
        total.busiest_pipe = launches
            .iter()
            .filter_map(|l| l.busiest_pipe)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        total.clocks_locked = launches
            .first()
            .and_then(|first| first.clocks_locked)
            .filter(|locked| launches.iter().all(|l| l.clocks_locked == Some(*locked)));
        total
    }

    /// Everything a record offers. The record's `memory_throughput_pct` is the full memory
    /// speed of light when ncu's `gpu__compute_memory_throughput` was collected, else DRAM's.
    pub fn from_record(record: &KernelRecord) -> Self {
        let first = |names: [&str; 2]| names.iter().find_map(|name| record.metric(name));
        let full_memory_sol = first([MEMORY_SOL, DETAILS_MEMORY_SOL]).is_some();
        let levels = crate::results::levels::cache_levels(record);
        let level_pct = |level: Level| {
            levels
                .iter()
                .find(|t| t.level == level)
                .and_then(|t| crate::results::levels::share_pct(t, record.duration_ns))
        };
        let traffic = |level: Level| {
            levels
                .iter()
                .find(|t| t.level == level)
                .map(|t| CacheTraffic {
                    bytes: t.bytes,
                    peak_gbs: t.peak_gbs,
                })
        };
        RooflineInputs {
            l2_pct: level_pct(Level::L2),
            l1_pct: level_pct(Level::L1),
            l2: traffic(Level::L2),
            l1: traffic(Level::L1),
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

fn add(total: Option<f64>, more: Option<f64>) -> Option<f64> {
    match (total, more) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
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
    let flop_side = |used: &mut Inputs| {
        used.insert(Inputs::FLOPS);
        let limiter = match precision {
            Some(p) if p.is_tensor() => Limiter::TensorPipe,
            _ => Limiter::FmaPipe,
        };
        let figure = pct_peak_compute.map(|pct| Figure {
            precision,
            ..Figure::new(FigureKind::Flops, pct)
        });
        (figure, limiter)
    };
    let (mut compute_figure, mut compute_limiter) = if !flops_partial {
        flop_side(&mut used)
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
        let figure = match limiter {
            Limiter::Sm => Figure::new(FigureKind::Sm, sol),
            pipe => Figure {
                pipe: Some(pipe),
                ..Figure::new(FigureKind::Pipe, sol)
            },
        };
        (Some(figure), limiter)
    } else {
        (None, Limiter::Unknown)
    };
    // Left of the ridge (the FLOPs' share below the DRAM bytes' share) an SM load that no
    // compute pipe accounts for, or the load/store pipe's, is the SM moving data: it does not
    // make the kernel compute-bound, whose point sits on the memory side of the roofline.
    if matches!(compute_limiter, Limiter::Sm | Limiter::LsuPipe)
        && let (Some(flop), Some(dram)) = (pct_peak_compute, pct_peak_bandwidth)
        && flop < dram
    {
        used = Inputs(used.0 & !(Inputs::SM_THROUGHPUT.0 | Inputs::PIPE_LOADS.0));
        (compute_figure, compute_limiter) = flop_side(&mut used);
    }

    // Memory side: DRAM from bytes or DRAM speed of light; L1/L2 when the memory speed of light
    // is well above DRAM's; a cache level of the hierarchical roofline when its share is larger.
    let mut dram_share: Option<f64> = None;
    if let Some(pct) = pct_peak_bandwidth {
        used.insert(Inputs::DRAM_BYTES);
        dram_share = Some(pct);
    }
    if let Some(pct) = inputs.dram_throughput_pct {
        used.insert(Inputs::DRAM_THROUGHPUT);
        dram_share = Some(dram_share.map_or(pct, |d| d.max(pct)));
    }
    let (mut memory_figure, mut memory_limiter) = match (inputs.memory_throughput_pct, dram_share) {
        (Some(full), dram) if full >= dram.unwrap_or(0.0) + CACHE_MARGIN_PCT => {
            used.insert(Inputs::MEMORY_THROUGHPUT);
            (Some(Figure::new(FigureKind::MemorySol, full)), Limiter::L2)
        }
        (Some(full), Some(dram)) => {
            used.insert(Inputs::MEMORY_THROUGHPUT);
            (
                Some(Figure::new(FigureKind::Dram, full.max(dram))),
                Limiter::Dram,
            )
        }
        (Some(full), None) => {
            used.insert(Inputs::MEMORY_THROUGHPUT);
            (
                Some(Figure::new(FigureKind::MemorySol, full)),
                Limiter::Dram,
            )
        }
        (None, dram) => (
            dram.map(|d| Figure::new(FigureKind::Dram, d)),
            Limiter::Dram,
        ),
    };
    for (kind, pct) in [
        (FigureKind::L2, inputs.l2_pct),
        (FigureKind::L1, inputs.l1_pct),
    ] {
        let Some(pct) = pct else { continue };
        used.insert(Inputs::CACHE_BYTES);
        if memory_figure.is_none_or(|m| pct > m.pct) {
            memory_figure = Some(Figure::new(kind, pct));
            memory_limiter = Limiter::L2;
        }
    }

    let (bound, limiter, decided_by) = match (compute_figure, memory_figure) {
        (None, None) => (Bound::Unknown, Limiter::Unknown, DecidedBy::default()),
        (c, m) => {
            let (cp, mp) = (c.map_or(0.0, |f| f.pct), m.map_or(0.0, |f| f.pct));
            if cp < LATENCY_BOUND_PCT && mp < LATENCY_BOUND_PCT {
                let (first, second) = if cp >= mp { (c, m) } else { (m, c) };
                let figures = match first {
                    Some(_) => DecidedBy([first, second]),
                    None => DecidedBy([second, None]),
                };
                (Bound::Latency, Limiter::Latency, figures)
            } else if mp >= cp {
                (Bound::Memory, memory_limiter, DecidedBy([m, None]))
            } else {
                (Bound::Compute, compute_limiter, DecidedBy([c, None]))
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
        above_peak: AbovePeak::of(pct_peak_compute, pct_peak_bandwidth),
        decided_by,
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
    use std::path::Path;

    fn table() -> crate::results::devices::DeviceTable {
        crate::results::devices::DeviceTable::builtin().unwrap()
    }

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
