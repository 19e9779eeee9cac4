//! Python exceptions for polyprof's typed errors: usage errors are `ValueError`, a profiler that
//! cannot run is `ProfilerUnavailable` (and one that left no output `ProfilerOutputMissing`, a
//! subclass), files are `OSError`, the rest `PolyprofError`.

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use polyprof::Error;

create_exception!(
    polyprof,
    PolyprofError,
    PyRuntimeError,
    "polyprof could not do what was asked (the message says what and how to fix it)."
);
create_exception!(
    polyprof,
    ProfilerUnavailable,
    PolyprofError,
    "The profiler cannot run on this machine; the message names the fix."
);
create_exception!(
    polyprof,
    ProfilerOutputMissing,
    ProfilerUnavailable,
    "The profiler left no output to read (it did not run, or was stopped first); a \
     ProfilerUnavailable, as the profiler APIs polyprof replaces raise it."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("PolyprofError", py.get_type::<PolyprofError>())?;
    m.add("ProfilerUnavailable", py.get_type::<ProfilerUnavailable>())?;
    m.add(
        "ProfilerOutputMissing",
        py.get_type::<ProfilerOutputMissing>(),
    )?;
    Ok(())
}

/// The Python exception for a library error, with the message the CLI prints.
pub fn to_py(error: Error) -> PyErr {
    let message = error.to_string();
    match error {
        Error::UnknownValue { .. } | Error::InvalidArgument { .. } | Error::NoProfiler { .. } => {
            PyValueError::new_err(message)
        }
        Error::ProfilerUnavailable { .. } => ProfilerUnavailable::new_err(message),
        Error::NoData { .. } => ProfilerOutputMissing::new_err(message),
        Error::Io { .. } | Error::Spawn { .. } => PyOSError::new_err(message),
        _ => PolyprofError::new_err(message),
    }
}

/// The Python exception for a Ray batch's error: a cluster that does not answer is
/// `ConnectionError`, a bad address or live jobs of the root `ValueError`.
pub fn ray_to_py(error: polyprof::pipeline::batch::ray::RayError) -> PyErr {
    use polyprof::pipeline::batch::ray::RayError;
    let message = error.to_string();
    match error {
        RayError::Other(e) => to_py(e),
        RayError::Unreachable { .. } => pyo3::exceptions::PyConnectionError::new_err(message),
        RayError::Address { .. } | RayError::StillRunning { .. } => PyValueError::new_err(message),
        _ => PolyprofError::new_err(message),
    }
}

/// A usage error in arguments the binding itself checks.
pub fn usage(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}

/// A document that could not be turned into JSON (never expected; the types are plain data).
pub fn json(error: serde_json::Error) -> PyErr {
    PolyprofError::new_err(format!(
        "polyprof: cannot encode the result as JSON: {error}"
    ))
}
