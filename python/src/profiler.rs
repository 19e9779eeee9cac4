//! `Profiler`: the profiler_command face Python pipelines know (`name`, `wrap_cmd`, `env_vars`,
//! `end_marker`, `prepare`, `read_output`, `unavailable_reason`), one object per backend and
//! output directory, backed by the Rust backend itself.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::prelude::*;

use polyprof::model::plan::EndMarker;
use polyprof::pipeline::profiler::Profiler as _;
use polyprof::profilers::{self, ProfilerSettings};

use crate::errors;
use crate::runtime;

#[pyclass(module = "polyprof._native", name = "NativeProfiler", frozen)]
pub struct NativeProfiler {
    inner: std::sync::Arc<dyn profilers::Backend>,
}

#[pymethods]
impl NativeProfiler {
    #[new]
    #[pyo3(signature = (name, output_dir, settings_json = "{}"))]
    fn new(name: &str, output_dir: PathBuf, settings_json: &str) -> PyResult<Self> {
        let settings: ProfilerSettings = serde_json::from_str(settings_json)
            .map_err(|e| errors::usage(format!("profiler options: {e}")))?;
        let inner = profilers::create(name, &output_dir, &settings).map_err(errors::to_py)?;
        Ok(NativeProfiler {
            inner: inner.into(),
        })
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    #[getter]
    fn output_dir(&self) -> PathBuf {
        self.inner.output_dir().to_path_buf()
    }

    /// The plan for `argv` as JSON (argv vectors, env, marker, graces, steps).
    fn plan_json(&self, argv: Vec<std::ffi::OsString>) -> PyResult<String> {
        let plan = self
            .inner
            .wrap(&polyprof::model::arg::args(argv))
            .map_err(errors::to_py)?;
        serde_json::to_string(&plan).map_err(errors::json)
    }

    /// The plan as one POSIX shell string; `cmd` is split with shell rules, every argument
    /// reaches the program verbatim.
    fn wrap_cmd(&self, cmd: &str) -> PyResult<String> {
        self.inner.wrap_cmd(cmd).map_err(errors::to_py)
    }

    fn env_vars(&self) -> BTreeMap<String, String> {
        self.inner.env_vars()
    }

    /// The end marker in the Python pipeline's convention: `"pytest"`, a literal substring, or
    /// `None` for no marker; a regex marker is given as `"regex:RE"`.
    fn end_marker(&self) -> Option<String> {
        match self.inner.end_marker() {
            EndMarker::Pytest => Some("pytest".to_string()),
            EndMarker::Literal(text) => Some(text),
            EndMarker::Regex(pattern) => Some(format!("regex:{pattern}")),
            EndMarker::None => None,
        }
    }

    /// `(marker_grace_s, kill_grace_s)` sized for this profiler.
    fn graces(&self) -> (f64, f64) {
        let g = self.inner.graces();
        (g.marker_grace.as_secs_f64(), g.kill_grace.as_secs_f64())
    }

    /// Stage what must exist before the run in the host's view of the output directory.
    fn prepare(&self, py: Python<'_>, host_output_dir: PathBuf) -> PyResult<()> {
        let inner = self.inner.clone();
        runtime::block_on(py, async move { inner.prepare(&host_output_dir).await })?
            .map_err(errors::to_py)
    }

    /// `(files, parsed_json, errors)`: every raw file the profiler wrote, name → text (lossy
    /// UTF-8, capped as polyprof caps artifacts), what the parser made of them (JSON: kernels,
    /// diagnostics, session facts), and the parse errors (each naming its file).
    fn read_output(
        &self,
        py: Python<'_>,
    ) -> PyResult<(BTreeMap<String, String>, String, Vec<String>)> {
        let inner = self.inner.clone();
        let output = runtime::block_on(py, async move { inner.read_output().await })?
            .map_err(errors::to_py)?;
        let files = output
            .raw
            .artifacts
            .iter()
            .map(|a| {
                (
                    a.name.clone(),
                    String::from_utf8_lossy(&a.content).into_owned(),
                )
            })
            .collect();
        let parsed = serde_json::to_string(&output.parsed).map_err(errors::json)?;
        Ok((files, parsed, output.errors))
    }

    /// Why this profiler cannot run here, with the fix; `None` when it can.
    fn unavailable_reason(&self, py: Python<'_>) -> Option<String> {
        let inner = self.inner.clone();
        py.detach(move || inner.unavailable_reason())
    }

    fn __repr__(&self) -> String {
        format!(
            "NativeProfiler(name={:?}, output_dir={:?})",
            self.inner.name(),
            self.inner.output_dir()
        )
    }
}

/// Every backend polyprof knows, by name.
#[pyfunction]
fn profiler_names() -> Vec<String> {
    std::iter::once("none")
        .chain(profilers::PROFILER_NAMES.iter().copied())
        .map(str::to_string)
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeProfiler>()?;
    m.add_function(wrap_pyfunction!(profiler_names, m)?)?;
    Ok(())
}
