//! `KernelBenchmark` for the Python CUDA lane: the same type and statistics module as the Metal
//! lane (`polyprof::results::benchmark`), fed with times measured by CUDA events.

use pyo3::prelude::*;

use polyprof::results::benchmark::KernelBenchmark;

use crate::errors;

/// Summarize per-call GPU times (ms); returns the `KernelBenchmark` document as JSON.
#[pyfunction]
#[pyo3(signature = (name, times_ms, flops = None, bytes_moved = None))]
fn kernel_benchmark_json(
    name: &str,
    times_ms: Vec<f64>,
    flops: Option<f64>,
    bytes_moved: Option<f64>,
) -> PyResult<String> {
    let bench = KernelBenchmark::new(name, times_ms, flops, bytes_moved)
        .map_err(|e| errors::usage(e.to_string()))?;
    serde_json::to_string(&bench).map_err(errors::json)
}

/// The one-line summary of a `KernelBenchmark` document.
#[pyfunction]
fn kernel_benchmark_summary(doc_json: &str) -> PyResult<String> {
    let bench: KernelBenchmark = serde_json::from_str(doc_json)
        .map_err(|e| errors::usage(format!("not a KernelBenchmark document: {e}")))?;
    Ok(bench.summary())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kernel_benchmark_json, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_benchmark_summary, m)?)?;
    Ok(())
}
