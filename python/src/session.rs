//! Call paths for Python code, backed by the Rust session (`polyprof::results::callpath`):
//! sessions, scopes, `record_function`, kernel hooks, and the finished profile's key averages,
//! tree and exports. A scope belongs to the thread that opened it, as in Rust.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use polyprof::results::callpath::{self, KernelLaunch, KernelWork, ScopeGuard, Session};
use polyprof::results::devices::DeviceTable;
use polyprof::results::export::{self, Format, Report};
use polyprof::results::profile::Profile;
use polyprof::results::{FlopCounts, GroupBy, ProfileRun, SortBy};

use crate::errors;

#[pyclass(module = "polyprof._native", name = "NativeSession")]
pub struct NativeSession {
    inner: Option<Session>,
}

fn finished() -> PyErr {
    errors::usage("this profiling session has already finished")
}

/// Work (FLOPs by precision, bytes, other metrics) from a hook's returned mapping.
fn work_from(mapping: &Bound<'_, PyAny>) -> PyResult<KernelWork> {
    let mut work = KernelWork::default();
    if mapping.is_none() {
        return Ok(work);
    }
    let dict = mapping.cast::<PyDict>().map_err(|_| {
        errors::usage("a kernel hook must return a dict such as {\"flops\": 2e9, \"bytes\": 8e6}")
    })?;
    for (key, value) in dict.iter() {
        let key: String = key.extract()?;
        let value: f64 = value.extract()?;
        match key.as_str() {
            "bytes" => work.bytes = Some(value),
            "flops" | "flops32" => work.flops.fp32 = Some(value),
            "flops16" => work.flops.fp16 = Some(value),
            "flops64" => work.flops.fp64 = Some(value),
            _ => {
                work.metrics.insert(key, value);
            }
        }
    }
    Ok(work)
}

fn launch_dict<'py>(py: Python<'py>, launch: &KernelLaunch) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("name", &launch.name)?;
    dict.set_item("gpu_time_ns", launch.gpu_time_ns)?;
    dict.set_item("grid", launch.grid.map(|g| g.to_vec()))?;
    dict.set_item("block", launch.block.map(|b| b.to_vec()))?;
    dict.set_item("device", &launch.device)?;
    dict.set_item("stream", &launch.stream)?;
    Ok(dict)
}

#[pymethods]
impl NativeSession {
    #[new]
    fn new(name: &str) -> PyResult<Self> {
        Ok(NativeSession {
            inner: Some(Session::start(name).map_err(errors::to_py)?),
        })
    }

    /// Register `hook(launch: dict) -> dict` for kernels named `kernel` (full or short name).
    fn register_hook(&self, kernel: &str, hook: Py<PyAny>) -> PyResult<()> {
        let session = self.inner.as_ref().ok_or_else(finished)?;
        session.register_hook(kernel, move |launch| {
            Python::attach(|py| {
                let result = launch_dict(py, launch)
                    .and_then(|d| hook.call1(py, (d,)))
                    .and_then(|r| work_from(r.bind(py)));
                match result {
                    Ok(work) => work,
                    Err(error) => {
                        // A hook's error must not tear down the session; Python sees it.
                        error.print(py);
                        KernelWork::default()
                    }
                }
            })
        });
        Ok(())
    }

    fn unregister_hook(&self, kernel: &str) -> PyResult<bool> {
        let session = self.inner.as_ref().ok_or_else(finished)?;
        Ok(session.unregister_hook(kernel))
    }

    /// Place a profiled run's kernels under the current thread's call path.
    fn add_run(&self, run_json: &str) -> PyResult<()> {
        let session = self.inner.as_ref().ok_or_else(finished)?;
        let run: ProfileRun = serde_json::from_str(run_json)
            .map_err(|e| errors::usage(format!("not a run document: {e}")))?;
        session.add_run(&run);
        Ok(())
    }

    /// Record a kernel launch timed by the caller (GPU time in ns) under the current path.
    #[pyo3(signature = (name, gpu_time_ns, flops = None, bytes = None, grid = None, block = None))]
    fn add_kernel(
        &self,
        name: String,
        gpu_time_ns: f64,
        flops: Option<f64>,
        bytes: Option<f64>,
        grid: Option<[u64; 3]>,
        block: Option<[u64; 3]>,
    ) -> PyResult<()> {
        let session = self.inner.as_ref().ok_or_else(finished)?;
        session.add_kernel(KernelLaunch {
            name,
            gpu_time_ns: Some(gpu_time_ns),
            flops: FlopCounts {
                fp32: flops,
                ..Default::default()
            },
            bytes,
            grid,
            block,
            ..Default::default()
        });
        Ok(())
    }

    /// Stop recording; the profile holds the events.
    fn finish(&mut self) -> PyResult<NativeProfile> {
        let session = self.inner.take().ok_or_else(finished)?;
        Ok(NativeProfile {
            inner: session.finish(),
        })
    }

    /// A snapshot of the profile so far (the session keeps recording).
    fn snapshot(&self) -> PyResult<NativeProfile> {
        let session = self.inner.as_ref().ok_or_else(finished)?;
        Ok(NativeProfile {
            inner: Profile {
                name: session.name().to_string(),
                profiler: Some("polyprof session".to_string()),
                device: None,
                events: session.events(),
            },
        })
    }
}

#[pyclass(module = "polyprof._native", name = "NativeProfile", frozen)]
pub struct NativeProfile {
    inner: Profile,
}

fn group(text: &str) -> PyResult<GroupBy> {
    text.parse().map_err(errors::to_py)
}

#[pymethods]
impl NativeProfile {
    fn key_averages_json(&self, group_by: &str) -> PyResult<String> {
        let rows = self.inner.key_averages(group(group_by)?);
        serde_json::to_string(&rows).map_err(errors::json)
    }

    fn key_averages_table(&self, group_by: &str, sort_by: &str) -> PyResult<String> {
        let sort: SortBy = sort_by.parse().map_err(errors::to_py)?;
        Ok(self.inner.key_averages(group(group_by)?).table(sort))
    }

    fn tree_text(&self) -> String {
        self.inner.tree().render()
    }

    fn events_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.inner.events).map_err(errors::json)
    }

    /// The profile in an export format (`hatchet`, `chrome`, `json`, `csv`, `table`).
    #[pyo3(signature = (format, device = None))]
    fn render<'py>(
        &self,
        py: Python<'py>,
        format: &str,
        device: Option<&str>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let bytes =
            export::render(&self.report(device)?, parse_format(format)?).map_err(errors::to_py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    #[pyo3(signature = (format, path, device = None))]
    fn write(&self, format: &str, path: PathBuf, device: Option<&str>) -> PyResult<()> {
        export::write_file(&self.report(device)?, parse_format(format)?, &path)
            .map_err(errors::to_py)
    }
}

fn parse_format(format: &str) -> PyResult<Format> {
    format.parse().map_err(errors::to_py)
}

impl NativeProfile {
    fn report(&self, device: Option<&str>) -> PyResult<Report> {
        let peaks = match device {
            Some(name) => Some(
                DeviceTable::builtin()
                    .and_then(|t| t.require(name).cloned())
                    .map_err(errors::to_py)?,
            ),
            None => None,
        };
        Ok(Report::from_profile(self.inner.clone(), peaks))
    }
}

/// An open scope; closes when `close()` is called (the Python context manager's `__exit__`).
#[pyclass(module = "polyprof._native", name = "NativeScope", unsendable)]
pub struct NativeScope {
    guard: Option<ScopeGuard>,
}

#[pymethods]
impl NativeScope {
    fn add_metric(&mut self, name: &str, value: f64) {
        if let Some(guard) = self.guard.as_mut() {
            guard.add_metric(name, value);
        }
    }

    fn close(&mut self) {
        self.guard.take();
    }

    #[getter]
    fn recording(&self) -> bool {
        self.guard.as_ref().is_some_and(ScopeGuard::is_recording)
    }
}

/// Open a scope (`kind` = `scope` or `function`) with additive metrics.
#[pyfunction]
#[pyo3(signature = (name, metrics = None, kind = "scope"))]
fn open_scope(
    name: &str,
    metrics: Option<BTreeMap<String, f64>>,
    kind: &str,
) -> PyResult<NativeScope> {
    let pairs: Vec<(&str, f64)> = metrics
        .as_ref()
        .map(|m| m.iter().map(|(k, v)| (k.as_str(), *v)).collect())
        .unwrap_or_default();
    let guard = match kind {
        "scope" => callpath::scope(name, &pairs),
        "function" => {
            let mut guard = callpath::record_function(name);
            for (key, value) in pairs {
                guard.add_metric(key, value);
            }
            guard
        }
        other => {
            return Err(errors::usage(format!(
                "unknown scope kind `{other}`; valid: scope, function"
            )));
        }
    };
    Ok(NativeScope { guard: Some(guard) })
}

#[pyfunction]
fn session_active() -> bool {
    callpath::is_active()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeSession>()?;
    m.add_class::<NativeProfile>()?;
    m.add_class::<NativeScope>()?;
    m.add_function(wrap_pyfunction!(open_scope, m)?)?;
    m.add_function(wrap_pyfunction!(session_active, m)?)?;
    Ok(())
}
