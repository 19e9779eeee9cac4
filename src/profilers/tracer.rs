//! The GPU activity tracer a backend offers the eval's scored pass (docs/eval-harness.md, "The
//! GPU timeline"): a library polyprof compiles from its own source and loads into the candidate's
//! worker for the whole eval, which records every kernel, copy and memset with the GPU's times.
//! The pipeline builds and loads it through this description alone, and reads what it wrote
//! with `parse`; only the backend's folder knows the vendor (for NVIDIA, `ncu::trace_log`).
//! Which backend has one: `profilers::tracers::gpu_tracer`.

use crate::model::gpu_trace::GpuTrace;
use crate::profilers::capability::injection::InjectionLibrary;

/// Everything the pipeline needs to build, load and read a tracer.
#[derive(Debug, Clone, Copy)]
pub struct GpuTracer {
    /// How it is compiled and loaded: an injection library like any other capability's.
    pub library: InjectionLibrary,
    /// The pid a record file of `dir` belongs to, from its name (`None`: not a record file).
    pub record_file_pid: fn(name: &str) -> Option<u32>,
    /// Read one record file.
    pub parse: fn(pid: u32, text: &str) -> Result<GpuTrace, String>,
}
