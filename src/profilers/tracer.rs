//! The GPU activity tracer a backend offers the eval's scored pass (docs/eval-harness.md, "The
//! GPU timeline"): a library polyprof compiles from its own source and loads into the candidate's
//! worker for the whole eval, which records every kernel, copy and memset with the GPU's times.
//! The pipeline builds and loads it through this description alone, and reads what it wrote
//! with `parse`; only the backend's folder knows the vendor (for NVIDIA, `ncu::trace_log`).
//! Which backend has one: `profilers::tracers::gpu_tracer`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::model::gpu_trace::GpuTrace;

/// Everything the pipeline needs to build, load and read a tracer.
#[derive(Debug, Clone, Copy)]
pub struct GpuTracer {
    /// Short name: the cache folder (`gpu-trace`).
    pub name: &'static str,
    /// The source's file name and text.
    pub source_file: &'static str,
    pub source: &'static str,
    /// The compiled library's file name.
    pub library_file: &'static str,
    /// The compiler, looked up on PATH, and what to say when it is missing.
    pub compiler: &'static str,
    pub compiler_missing: &'static str,
    /// Where the SDK lies below the toolkit root (the compiler's `../..`): folders that may hold
    /// the headers and the library, and the files each must hold.
    pub include_dirs: &'static [&'static str],
    pub headers: &'static [&'static str],
    pub lib_dirs: &'static [&'static str],
    pub libraries: &'static [&'static str],
    /// The compiler's arguments: `output` from `source` against the SDK's folders.
    pub compile_args: fn(include: &Path, lib: &Path, source: &Path, output: &Path) -> Vec<String>,
    /// The variables that load `library` into a process, its records going into `dir`.
    pub load_env: fn(library: &Path, dir: &Path) -> BTreeMap<String, String>,
    /// The pid a record file of `dir` belongs to, from its name (`None`: not a record file).
    pub record_file_pid: fn(name: &str) -> Option<u32>,
    /// Read one record file.
    pub parse: fn(pid: u32, text: &str) -> Result<GpuTrace, String>,
}
