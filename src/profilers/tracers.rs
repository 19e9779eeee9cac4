//! Which backend offers a GPU activity tracer (`profilers::tracer::GpuTracer`) for the eval's
//! scored pass.

use super::tracer::GpuTracer;

/// The tracer of the backend named `profiler`, when it has one.
pub fn gpu_tracer(profiler: &str) -> Option<&'static GpuTracer> {
    match profiler {
        "ncu" => Some(&super::ncu::trace_log::TRACER),
        _ => None,
    }
}
