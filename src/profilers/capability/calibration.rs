//! The calibration capability: how the backend measures known-work kernels (the settings of a
//! pass and the metrics the checks read). The plan of kernels and the judge are the results
//! layer's (`results::calibration_kernels`, `results::calibration`), the same for every vendor.

use std::path::Path;

use crate::profilers::ProfilerSettings;
use crate::profilers::capability::tool::Tool;

/// The known-work program: its source (embedded in polyprof), the compiler that builds it for
/// one GPU's architecture, and the files' names in the calibration's work directory. Run as
/// `PROGRAM info` (the device's sizes as `key=value` lines) and `PROGRAM KERNEL ARGS…`.
pub struct CalibrationProgram {
    pub source_file: &'static str,
    pub source: &'static str,
    pub program_file: &'static str,
    pub compiler: Tool,
    /// The compiler's arguments that build `source` into `program` for `arch`.
    pub compile_args: fn(arch: &str, source: &Path, program: &Path) -> Vec<String>,
    /// The architecture to build for on a GPU of this compute capability.
    pub arch: fn(compute_capability: (u32, u32)) -> String,
}

/// A tensor-core precision a calibration plan exercises (each has its own op counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TensorPrecision {
    Fp16,
    Bf16,
    Tf32,
    Fp8,
}

pub trait CalibrationCapability: Send + Sync {
    /// The known-work program the passes run.
    fn program(&self) -> &'static CalibrationProgram;

    /// The metric of a kernel's duration: the launch-floor pass collects only it.
    fn duration_metric(&self) -> &'static str;

    /// The metrics of the counters pass on a GPU of `compute_capability` running kernels of
    /// `precisions`: time, DRAM bytes, FLOP counters, clocks and the tensor counters asked.
    fn counter_metrics(
        &self,
        compute_capability: (u32, u32),
        precisions: &[TensorPrecision],
    ) -> Vec<String>;

    /// The settings of a pass collecting `metrics`, clocks left as the GPU runs them and caches
    /// flushed before every kernel.
    fn pass_settings(&self, metrics: Vec<String>) -> ProfilerSettings;
}
