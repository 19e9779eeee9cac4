//! The normalized kernel record every backend produces. Fields are in base units
//! (ns, bytes, %, FLOPs); anything a backend measured beyond these stays in `metrics`.

use std::borrow::{Borrow, Cow};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A metric's name, the key of [`KernelRecord::metrics`]. Shared (`Arc<str>`), so a parser
/// names each metric column once and every launch's record holds a clone of that name instead
/// of its own copy. Serialized as a plain string; `metrics.get("name")` works through
/// `Borrow<str>`, and `"name".into()` or `String::into()` builds one.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MetricName(Arc<str>);

impl MetricName {
    pub fn new(name: &str) -> Self {
        Self(Arc::from(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for MetricName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for MetricName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for MetricName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for MetricName {
    fn from(name: &str) -> Self {
        Self::new(name)
    }
}

impl From<String> for MetricName {
    fn from(name: String) -> Self {
        Self(Arc::from(name))
    }
}

impl From<&String> for MetricName {
    fn from(name: &String) -> Self {
        Self::new(name)
    }
}

impl PartialEq<str> for MetricName {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for MetricName {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl fmt::Debug for MetricName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for MetricName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for MetricName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

// A metric name is a plain string in run.json.
impl schemars::JsonSchema for MetricName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MetricName".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

impl<'de> Deserialize<'de> for MetricName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `Cow` borrows when the input allows, so only the `Arc` allocates.
        let name = <Cow<'de, str>>::deserialize(deserializer)?;
        Ok(Self::new(&name))
    }
}

/// A metric value as the profiler reported it, normalized to a base unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum MetricValue {
    Number(f64),
    Text(String),
}

impl MetricValue {
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            MetricValue::Number(value) => Some(*value),
            MetricValue::Text(_) => None,
        }
    }
}

/// One metric with its (normalized) unit; `unit` is empty for unitless values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Metric {
    pub value: MetricValue,
    /// Base units (`ns`, `byte`, …) are borrowed from static strings, so the thousands of
    /// metrics of a large profile do not each own a copy; `"ms".into()` or `name.into()` (a
    /// `String`) both build one. Serialized as a plain string either way.
    #[serde(default, skip_serializing_if = "str::is_empty")]
    pub unit: Cow<'static, str>,
}

/// A profiler's own advice about a kernel (ncu rule results, VTune recommendations, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RuleResult {
    /// The section the rule belongs to (`GPU Speed Of Light Throughput`).
    pub section: String,
    pub name: String,
    /// `OPT`, `WRN`, `INF`, … as the profiler printed it.
    pub kind: String,
    pub description: String,
    /// Estimated speedup in percent, when the profiler gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_speedup_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub estimated_speedup_type: String,
}

/// FLOPs split by precision and pipe. Vector (CUDA-core) counts are add + mul + 2·fma
/// instructions; tensor-core counts are the profiler's own op counts (2 per multiply-add).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FlopCounts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp16: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp32: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp64: Option<f64>,
    /// Tensor-core FLOPs with FP16 sources (any accumulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_fp16: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_bf16: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_tf32: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_fp8: Option<f64>,
    /// Tensor-core integer ops (INT8 sources): ops, not FLOPs, so not in [`total`](Self::total);
    /// they count against the INT8 peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_int8: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_fp64: Option<f64>,
    /// Part of `fp16` issued as `HFMA2.MMA`: mostly not FP16 math (the compiler materializes
    /// constants with `HFMA2.MMA Rd, -RZ, RZ, imm, imm`, a move through the tensor pipe, which
    /// the SASS FP16 FMA counter counts), but ptxas also issues real packed FMAs there (seen
    /// on the H200: half of a half2 FMA loop). No counter tells the two apart, so FP16 FLOPs
    /// are an interval: [`vector_fp16`](Self::vector_fp16) (without these) to `fp16` (with).
    /// 32 threads × 4 FLOPs per such warp instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp16_hfma2_mma: Option<f64>,
}

impl FlopCounts {
    /// FP16 vector FLOPs without the `HFMA2.MMA` constant moves.
    pub fn vector_fp16(&self) -> Option<f64> {
        self.fp16
            .map(|fp16| (fp16 - self.fp16_hfma2_mma.unwrap_or(0.0)).max(0.0))
    }

    /// Tensor-core FLOPs (integer ops excluded); `None` when no tensor precision was counted.
    pub fn tensor_total(&self) -> Option<f64> {
        sum_measured(&[
            self.tensor_fp16,
            self.tensor_bf16,
            self.tensor_tf32,
            self.tensor_fp8,
            self.tensor_fp64,
        ])
    }

    /// Vector FLOPs (FP16 without the constant moves, FP32, FP64).
    pub fn vector_total(&self) -> Option<f64> {
        sum_measured(&[self.vector_fp16(), self.fp32, self.fp64])
    }

    /// Sum of the FLOPs that were measured, vector and tensor; `None` when none was.
    pub fn total(&self) -> Option<f64> {
        sum_measured(&[self.vector_total(), self.tensor_total()])
    }

    /// Every count by precision and pipe, phantom FP16 moves removed; for peaks and verdicts.
    pub fn by_precision(&self) -> [(Precision, Option<f64>); 9] {
        [
            (Precision::Fp16, self.vector_fp16()),
            (Precision::Fp32, self.fp32),
            (Precision::Fp64, self.fp64),
            (Precision::TensorFp16, self.tensor_fp16),
            (Precision::TensorBf16, self.tensor_bf16),
            (Precision::TensorTf32, self.tensor_tf32),
            (Precision::TensorFp8, self.tensor_fp8),
            (Precision::TensorInt8, self.tensor_int8),
            (Precision::TensorFp64, self.tensor_fp64),
        ]
    }

    /// FLOPs by operand width as Proton names them (`flops8`, `flops16`, `flops32`,
    /// `flops64`): vector and tensor together, bf16 with fp16, tf32 with fp32.
    pub fn by_width(&self, bits: u32) -> Option<f64> {
        match bits {
            8 => self.tensor_fp8,
            16 => sum_measured(&[self.vector_fp16(), self.tensor_fp16, self.tensor_bf16]),
            32 => sum_measured(&[self.fp32, self.tensor_tf32]),
            64 => sum_measured(&[self.fp64, self.tensor_fp64]),
            _ => None,
        }
    }

    /// Take every count `self` lacks from `other` (two pages of one launch).
    pub fn fill_missing(&mut self, other: &FlopCounts) {
        let pairs = [
            (&mut self.fp16, other.fp16),
            (&mut self.fp32, other.fp32),
            (&mut self.fp64, other.fp64),
            (&mut self.tensor_fp16, other.tensor_fp16),
            (&mut self.tensor_bf16, other.tensor_bf16),
            (&mut self.tensor_tf32, other.tensor_tf32),
            (&mut self.tensor_fp8, other.tensor_fp8),
            (&mut self.tensor_int8, other.tensor_int8),
            (&mut self.tensor_fp64, other.tensor_fp64),
            (&mut self.fp16_hfma2_mma, other.fp16_hfma2_mma),
        ];
        for (slot, value) in pairs {
            if slot.is_none() {
                *slot = value;
            }
        }
    }

    /// Add `more` into `self`, precision by precision. The HFMA2.MMA bound is added only up to
    /// `more`'s own FP16 count, so [`vector_fp16`](Self::vector_fp16) of a sum is the sum of
    /// the parts' (an export's inclusive FLOPs equal the sum of its children's).
    pub fn accumulate(&mut self, more: &FlopCounts) {
        let excluded = match (more.fp16_hfma2_mma, more.fp16) {
            (Some(moves), Some(fp16)) => Some(moves.min(fp16)),
            (moves, _) => moves,
        };
        let more = &FlopCounts {
            fp16_hfma2_mma: excluded,
            ..*more
        };
        let pairs = [
            (&mut self.fp16, more.fp16),
            (&mut self.fp32, more.fp32),
            (&mut self.fp64, more.fp64),
            (&mut self.tensor_fp16, more.tensor_fp16),
            (&mut self.tensor_bf16, more.tensor_bf16),
            (&mut self.tensor_tf32, more.tensor_tf32),
            (&mut self.tensor_fp8, more.tensor_fp8),
            (&mut self.tensor_int8, more.tensor_int8),
            (&mut self.tensor_fp64, more.tensor_fp64),
            (&mut self.fp16_hfma2_mma, more.fp16_hfma2_mma),
        ];
        for (slot, value) in pairs {
            if let Some(value) = value {
                *slot = Some(slot.unwrap_or(0.0) + value);
            }
        }
    }
}

fn sum_measured(parts: &[Option<f64>]) -> Option<f64> {
    if parts.iter().all(Option::is_none) {
        return None;
    }
    Some(parts.iter().flatten().sum())
}

/// A precision on a pipe: what a compute peak is quoted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    Fp16,
    Fp32,
    Fp64,
    TensorFp16,
    TensorBf16,
    TensorTf32,
    TensorFp8,
    TensorInt8,
    TensorFp64,
}

impl Precision {
    pub fn is_tensor(&self) -> bool {
        !matches!(self, Precision::Fp16 | Precision::Fp32 | Precision::Fp64)
    }

    /// The data type alone (`bf16`), as a verdict names it.
    pub fn data_type(&self) -> &'static str {
        match self {
            Precision::Fp16 | Precision::TensorFp16 => "fp16",
            Precision::Fp32 => "fp32",
            Precision::Fp64 | Precision::TensorFp64 => "fp64",
            Precision::TensorBf16 => "bf16",
            Precision::TensorTf32 => "tf32",
            Precision::TensorFp8 => "fp8",
            Precision::TensorInt8 => "int8",
        }
    }
}

/// What a record is: a kernel, or a memory command the device ran between kernels. Memory
/// commands travel in their own list ([`crate::model::parsed::ParsedOutput::memory_commands`]
/// (crate::model::parsed::ParsedOutput::memory_commands)), so nothing that counts kernels
/// counts them.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    #[default]
    Kernel,
    /// A copy between host and device or between devices.
    MemoryCopy,
    /// A fill (memset) of device memory.
    MemoryFill,
    /// A barrier or other synchronizing command on a queue.
    Barrier,
}

impl RecordKind {
    pub fn is_kernel(&self) -> bool {
        *self == RecordKind::Kernel
    }

    /// As in JSON and CSV: `kernel`, `memory_copy`, `memory_fill`, `barrier`.
    pub fn as_str(&self) -> &'static str {
        match self {
            RecordKind::Kernel => "kernel",
            RecordKind::MemoryCopy => "memory_copy",
            RecordKind::MemoryFill => "memory_fill",
            RecordKind::Barrier => "barrier",
        }
    }
}

/// Metric holding the bytes a memory command moved or filled (all of the record's `calls`).
pub const MEMORY_BYTES_METRIC: &str = "bytes";

/// One kernel launch (or one aggregated kernel, for profilers that only report totals).
/// `Default` is one launch (`calls` 1), the same as a record whose JSON omits `calls`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KernelRecord {
    /// Which profiler produced the record (`ncu`, `unitrace`, …).
    pub profiler: String,
    /// A kernel unless said otherwise (absent from JSON for kernels).
    #[serde(default, skip_serializing_if = "RecordKind::is_kernel")]
    pub kind: RecordKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_name: Option<String>,
    /// The profiler's launch id (ncu `ID`); unique within one run together with `process_id`.
    pub launch_id: u64,
    /// Kernel name as printed (demangled, with parameter list).
    pub name: String,
    /// Name without return type and parameter list: `matmul_tiled<32>`.
    pub short_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Stream (CUDA), queue (Level Zero / OpenCL) or engine the kernel ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<[u64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<[u64; 3]>,
    /// Start time on the profiler's clock, when the profiler records one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<f64>,
    /// Number of launches folded into this record (1 for per-launch profilers).
    #[serde(default = "one")]
    pub calls: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_bytes_read: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_bytes_write: Option<f64>,
    /// Total DRAM traffic; read + write when the profiler reports only those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_occupancy_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theoretical_occupancy_pct: Option<f64>,
    /// Compute (SM) speed of light, % of peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_throughput_pct: Option<f64>,
    /// Memory speed of light, % of peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_throughput_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers_per_thread: Option<u32>,
    /// Static + dynamic shared memory per block, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_mem_per_block: Option<u64>,
    #[serde(default, skip_serializing_if = "is_default_flops")]
    pub flops: FlopCounts,
    /// Everything else the profiler measured, by its own metric name, in base units.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<MetricName, Metric>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleResult>,
    /// Where the kernel sits in the job's call path (job / pass / process / [segment /]
    /// kernel), outermost first; filled by the pipeline, empty when a parser produced the record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub call_path: Vec<String>,
    /// The launching thread's OS id, when the profiler names it (ncu: with `--nvtx`, for
    /// launches inside a push/pop range). Unlike a range name, the program cannot choose it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<u64>,
    /// The push/pop annotation ranges (NVTX, ROCTx) open on the launching thread when the
    /// kernel was launched, outermost first, by name (`polyprof/call/3`); a non-default domain
    /// is written `domain@name`. Empty when none was open or the profiler does not record them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<String>,
    /// The start/end annotation ranges (NVTX `nvtxRangeStart`) open in the process when the
    /// kernel was launched, whichever thread started them, in the profiler's order, named as
    /// `ranges`. Kept apart from `ranges`: they are not the launching thread's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub process_ranges: Vec<String>,
    /// Where the record came from when the run used the profile cache (profiled in this run, a
    /// repeat of a launch profiled in it, or a cache hit and the run that profiled it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<super::record_origin::RecordOrigin>,
}

fn one() -> u64 {
    1
}

impl Default for KernelRecord {
    fn default() -> Self {
        KernelRecord {
            profiler: String::new(),
            kind: RecordKind::Kernel,
            process_id: None,
            process_name: None,
            launch_id: 0,
            name: String::new(),
            short_name: String::new(),
            device: None,
            stream: None,
            grid: None,
            block: None,
            start_ns: None,
            duration_ns: None,
            calls: one(),
            dram_bytes_read: None,
            dram_bytes_write: None,
            dram_bytes: None,
            achieved_occupancy_pct: None,
            theoretical_occupancy_pct: None,
            sm_throughput_pct: None,
            memory_throughput_pct: None,
            registers_per_thread: None,
            shared_mem_per_block: None,
            flops: FlopCounts::default(),
            metrics: BTreeMap::new(),
            rules: Vec::new(),
            call_path: Vec::new(),
            thread_id: None,
            ranges: Vec::new(),
            process_ranges: Vec::new(),
            cache: None,
        }
    }
}

/// Metric naming the benchmark segment a launch ran in (the harness's timed region, e.g.
/// unitrace's ITT task `model run loop::<label>`). Reports put such a launch under a scope frame
/// of that name, between its process and the kernel.
pub const SEGMENT_METRIC: &str = "benchmark";

fn is_default_flops(flops: &FlopCounts) -> bool {
    *flops == FlopCounts::default()
}

impl KernelRecord {
    /// Total FLOPs, when any precision was counted.
    pub fn total_flops(&self) -> Option<f64> {
        self.flops.total()
    }

    /// DRAM bytes: the total when known, else read + write.
    pub fn total_dram_bytes(&self) -> Option<f64> {
        self.dram_bytes
            .or(match (self.dram_bytes_read, self.dram_bytes_write) {
                (Some(read), Some(write)) => Some(read + write),
                _ => None,
            })
    }

    /// GFLOP/s over the kernel's GPU time.
    pub fn gflops_per_s(&self) -> Option<f64> {
        per_second(self.total_flops()?, self.duration_ns?).map(|v| v / 1e9)
    }

    /// DRAM GB/s (10^9 bytes) over the kernel's GPU time.
    pub fn dram_gb_per_s(&self) -> Option<f64> {
        per_second(self.total_dram_bytes()?, self.duration_ns?).map(|v| v / 1e9)
    }

    /// FLOPs per DRAM byte.
    pub fn arithmetic_intensity(&self) -> Option<f64> {
        let bytes = self.total_dram_bytes()?;
        (bytes > 0.0).then(|| self.total_flops().map(|flops| flops / bytes))?
    }

    /// A metric's numeric value by the profiler's own name.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).and_then(|m| m.value.as_f64())
    }

    /// The benchmark segment the launch ran in ([`SEGMENT_METRIC`]), when a parser found one.
    pub fn segment(&self) -> Option<&str> {
        match self.metrics.get(SEGMENT_METRIC).map(|m| &m.value) {
            Some(MetricValue::Text(label)) if !label.is_empty() => Some(label),
            _ => None,
        }
    }
}

fn per_second(amount: f64, duration_ns: f64) -> Option<f64> {
    (duration_ns > 0.0).then(|| amount / (duration_ns * 1e-9))
}

pub use super::kernel_name::short_kernel_name;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_fp16_of_a_sum_is_the_sum_of_the_parts() {
        // One launch with more HFMA2.MMA moves than FP16 FMAs (clamped to 0), one with real
        // FP16 math: the total must not go below the second launch's count (seen on the H200 as
        // an export whose root had 39,680 FP16 FLOPs fewer than its children together).
        let moves_only = FlopCounts {
            fp16: Some(64.0),
            fp16_hfma2_mma: Some(39_744.0),
            ..FlopCounts::default()
        };
        let real = FlopCounts {
            fp16: Some(1_000_000.0),
            fp16_hfma2_mma: Some(0.0),
            ..FlopCounts::default()
        };
        let mut total = FlopCounts::default();
        total.accumulate(&moves_only);
        total.accumulate(&real);
        let parts = moves_only.vector_fp16().unwrap() + real.vector_fp16().unwrap();
        assert_eq!(total.vector_fp16(), Some(parts));
        assert_eq!(parts, 1_000_000.0);
    }

    #[test]
    fn metric_units_serialize_as_plain_strings_borrowed_or_owned() {
        let borrowed = Metric {
            value: MetricValue::Number(1.5),
            unit: Cow::Borrowed("ns"),
        };
        let owned = Metric {
            value: MetricValue::Number(1.5),
            unit: "ns".to_string().into(),
        };
        let text = serde_json::to_string(&borrowed).unwrap();
        assert_eq!(text, r#"{"value":1.5,"unit":"ns"}"#);
        assert_eq!(serde_json::to_string(&owned).unwrap(), text);
        assert_eq!(serde_json::from_str::<Metric>(&text).unwrap(), borrowed);
        let unitless = Metric {
            value: MetricValue::Text("x".into()),
            unit: Cow::Borrowed(""),
        };
        let text = serde_json::to_string(&unitless).unwrap();
        assert_eq!(text, r#"{"value":"x"}"#);
        assert_eq!(serde_json::from_str::<Metric>(&text).unwrap(), unitless);
    }

    #[test]
    fn metric_names_serialize_as_plain_string_keys() {
        // Shared names must leave the JSON of a record exactly as `String` keys wrote it.
        let shared = MetricName::new("sm__cycles_elapsed.avg");
        let mut record = KernelRecord::default();
        let metric = Metric {
            value: MetricValue::Number(2.0),
            unit: Cow::Borrowed("cycle"),
        };
        record.metrics.insert(shared.clone(), metric.clone());
        record
            .metrics
            .insert("dram__bytes.sum".into(), metric.clone());
        let text = serde_json::to_string(&record.metrics).unwrap();
        let plain: BTreeMap<String, Metric> = [
            ("sm__cycles_elapsed.avg".to_string(), metric.clone()),
            ("dram__bytes.sum".to_string(), metric),
        ]
        .into();
        assert_eq!(text, serde_json::to_string(&plain).unwrap());
        assert!(text.starts_with(r#"{"dram__bytes.sum":{"value":2.0,"unit":"cycle"}"#));
        let back: KernelRecord =
            serde_json::from_str(&serde_json::to_string(&record).unwrap()).unwrap();
        assert_eq!(back, record);
        assert_eq!(back.metric("sm__cycles_elapsed.avg"), Some(2.0));
        // Interned: the record's key is the same allocation as the parser's name.
        let key = record
            .metrics
            .keys()
            .find(|k| **k == "sm__cycles_elapsed.avg")
            .unwrap();
        assert!(Arc::ptr_eq(&key.0, &shared.0));
    }

    #[test]
    fn default_record_is_one_launch_like_its_json_default() {
        let from_json: KernelRecord =
            serde_json::from_str(r#"{"profiler":"x","launch_id":0,"name":"","short_name":""}"#)
                .unwrap();
        assert_eq!(from_json.calls, 1);
        assert_eq!(KernelRecord::default().calls, from_json.calls);
    }

    #[test]
    fn derived_throughputs_use_gpu_time() {
        let record = KernelRecord {
            duration_ns: Some(1_000.0),
            dram_bytes_read: Some(3_000.0),
            dram_bytes_write: Some(1_000.0),
            flops: FlopCounts {
                fp32: Some(8_000.0),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(record.total_dram_bytes(), Some(4_000.0));
        assert!((record.gflops_per_s().unwrap() - 8.0).abs() < 1e-9);
        assert!((record.dram_gb_per_s().unwrap() - 4.0).abs() < 1e-9);
        assert_eq!(record.arithmetic_intensity(), Some(2.0));
        let empty = KernelRecord::default();
        assert_eq!(empty.gflops_per_s(), None);
        assert_eq!(empty.arithmetic_intensity(), None);
    }
}
