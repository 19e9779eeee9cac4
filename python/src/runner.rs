//! `run`: the supervised runner for any command (the replacement for a hand-written
//! `robust_subprocess_run`), blocking and async.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;
use serde::Deserialize;

use polyprof::model::plan::{CommandSpec, EndMarker};
use polyprof::pipeline::runner::{EnvPolicy, RunOptions, Tracking, run_command};

use crate::errors;
use crate::runtime;

/// Run options as the Python layer sends them (`polyprof/_options.py` builds this).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunArgs {
    pub timeout_s: Option<f64>,
    pub inactivity_timeout_s: Option<f64>,
    /// `pytest`, `none`, `literal:TEXT`, `regex:RE`.
    pub end_marker: Option<String>,
    pub marker_grace_s: Option<f64>,
    pub kill_grace_s: Option<f64>,
    /// `inherit`, `clean`, `untrusted`.
    pub env_policy: Option<String>,
    pub allow_env: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub log_dir: Option<PathBuf>,
    pub log_name: Option<String>,
    /// The `polyprof-supervise` executable: when given, every descendant is tracked and ended
    /// (also one that left the process group) and the tree dies with this process.
    pub supervisor: Option<PathBuf>,
}

/// The longest duration accepted (a year): beyond it `Instant` arithmetic can overflow.
const MAX_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

pub fn seconds(what: &str, value: f64) -> PyResult<Duration> {
    if value.is_finite() && (0.0..=MAX_SECONDS).contains(&value) {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(errors::usage(format!(
            "{what} must be a number of seconds between 0 and {MAX_SECONDS} (a year); got {value}"
        )))
    }
}

impl RunArgs {
    pub fn parse(json: &str) -> PyResult<Self> {
        serde_json::from_str(json).map_err(|e| errors::usage(format!("run options: {e}")))
    }

    /// Runner options; the end marker and graces only when given.
    pub fn options(&self) -> PyResult<RunOptions> {
        let mut opts = RunOptions::default();
        if let Some(t) = self.timeout_s {
            opts.timeout = Some(seconds("timeout", t)?);
        }
        if let Some(t) = self.inactivity_timeout_s {
            opts.inactivity_timeout = Some(seconds("inactivity_timeout", t)?);
        }
        if let Some(marker) = &self.end_marker {
            opts.end_marker = marker.parse::<EndMarker>().map_err(errors::to_py)?;
        }
        if let Some(g) = self.marker_grace_s {
            opts.graces.marker_grace = seconds("marker_grace", g)?;
        }
        if let Some(g) = self.kill_grace_s {
            opts.graces.kill_grace = seconds("kill_grace", g)?;
        }
        if let Some(policy) = &self.env_policy {
            opts.env_policy = policy.parse::<EnvPolicy>().map_err(errors::to_py)?;
            match &mut opts.env_policy {
                EnvPolicy::Clean { allow } | EnvPolicy::Untrusted { allow } => {
                    allow.extend(self.allow_env.iter().cloned())
                }
                EnvPolicy::Inherit => {}
            }
        }
        if let Some(exe) = &self.supervisor {
            opts.tracking = Tracking::Supervisor { exe: exe.clone() };
        }
        opts.log_dir = self.log_dir.clone();
        if let Some(name) = &self.log_name {
            opts.log_name = name.clone();
        }
        Ok(opts)
    }
}

fn command(argv: Vec<std::ffi::OsString>, args: &RunArgs) -> PyResult<CommandSpec> {
    if argv.is_empty() {
        return Err(errors::usage(
            "argv is empty: give the program and its arguments",
        ));
    }
    let mut spec = CommandSpec::new(polyprof::model::arg::args(argv));
    spec.env = args.env.clone();
    spec.cwd = args.cwd.clone();
    Ok(spec)
}

/// Run `argv` supervised; returns the `RunResult` document as JSON.
#[pyfunction]
#[pyo3(signature = (argv, options_json = "{}"))]
fn run_json(py: Python<'_>, argv: Vec<std::ffi::OsString>, options_json: &str) -> PyResult<String> {
    let args = RunArgs::parse(options_json)?;
    let spec = command(argv, &args)?;
    let opts = args.options()?;
    let cancel = opts.cancel.clone();
    let result =
        runtime::block_on_cancellable(py, cancel, async move { run_command(&spec, &opts).await })?;
    serde_json::to_string(&result).map_err(errors::json)
}

/// The same as an asyncio awaitable resolving to the JSON text.
#[pyfunction]
#[pyo3(signature = (argv, options_json = "{}"))]
fn run_json_async<'py>(
    py: Python<'py>,
    argv: Vec<std::ffi::OsString>,
    options_json: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let args = RunArgs::parse(options_json)?;
    let spec = command(argv, &args)?;
    let opts = args.options()?;
    // Build (or rebuild after a fork) the runtime here, where a failure can still be raised.
    runtime::get()?;
    let cancel = opts.cancel.clone();
    let guard = cancel.clone().drop_guard();
    pyo3_async_runtimes::generic::future_into_py::<runtime::PidRuntime, _, _>(py, async move {
        // Cancelling the asyncio task drops this future; the guard then cancels the run, and
        // the runner's own task stops the process group.
        let result = runtime::get()?
            .spawn(async move { run_command(&spec, &opts).await })
            .await
            .map_err(|e| errors::PolyprofError::new_err(format!("polyprof: run failed: {e}")))?;
        guard.disarm();
        serde_json::to_string(&result).map_err(errors::json)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(run_json_async, m)?)?;
    Ok(())
}
