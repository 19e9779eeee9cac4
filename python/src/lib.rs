//! The Python binding of polyprof: a thin layer over the Rust library. Documents (run results,
//! profile runs, diffs) cross the boundary as JSON text and become typed Python objects in the
//! pure-Python part of the package (`polyprof/_types.py`), so the two sides share one schema:
//! the one `run.json` has. Every long call releases the GIL.

mod batch;
mod bench;
mod errors;
mod eval;
mod jobs;
mod profiler;
mod reports;
mod runner;
mod runtime;
mod session;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    batch::register(m)?;
    bench::register(m)?;
    eval::register(m)?;
    runner::register(m)?;
    jobs::register(m)?;
    profiler::register(m)?;
    reports::register(m)?;
    session::register(m)?;
    Ok(())
}
