//! `profile`, `profile_all` and selection: profiler passes end to end, each writing a run
//! directory with `run.json`.

use std::path::PathBuf;

use pyo3::prelude::*;

use polyprof::pipeline::{Job, ProfileAllOptions, profile, profile_all};
use polyprof::profilers::ProfilerSettings;
use polyprof::profilers::selection::Selection;

use crate::errors;
use crate::runner::RunArgs;
use crate::runtime;

fn settings(json: &str) -> PyResult<ProfilerSettings> {
    serde_json::from_str(json).map_err(|e| errors::usage(format!("profiler options: {e}")))
}

/// Profile `argv` with `profiler` into `output_dir`; returns the run document as JSON. Run
/// failures are in the document (`errors`, `outcome`), never raised.
#[pyfunction]
#[pyo3(signature = (argv, profiler, output_dir, settings_json = "{}", options_json = "{}", call_path = Vec::new()))]
fn profile_json(
    py: Python<'_>,
    argv: Vec<std::ffi::OsString>,
    profiler: String,
    output_dir: PathBuf,
    settings_json: &str,
    options_json: &str,
    call_path: Vec<String>,
) -> PyResult<String> {
    if argv.is_empty() {
        return Err(errors::usage(
            "argv is empty: give the program and its arguments",
        ));
    }
    // A bogus profiler name is a usage error, raised before anything is created.
    polyprof::profilers::create(&profiler, &output_dir, &ProfilerSettings::default())
        .map_err(errors::to_py)?;
    let args = RunArgs::parse(options_json)?;
    let mut job = Job::new(polyprof::model::arg::args(argv), output_dir);
    job.profiler = profiler;
    job.settings = settings(settings_json)?;
    job.run = args.options()?;
    job.call_path = call_path;
    let cancel = job.run.cancel.clone();
    let run = runtime::block_on_cancellable(py, cancel, async move { profile(&job).await })?;
    serde_json::to_string(&run).map_err(errors::json)
}

/// Every pass selection returns for `language` × `arch`; returns `{label: run}` as JSON.
#[pyfunction]
#[pyo3(signature = (language, arch, argv, output_root, profiler_type = None, settings_json = None, options_json = "{}"))]
#[allow(clippy::too_many_arguments)]
fn profile_all_json(
    py: Python<'_>,
    language: String,
    arch: String,
    argv: Vec<std::ffi::OsString>,
    output_root: PathBuf,
    profiler_type: Option<String>,
    settings_json: Option<&str>,
    options_json: &str,
) -> PyResult<String> {
    if argv.is_empty() {
        return Err(errors::usage(
            "argv is empty: give the program and its arguments",
        ));
    }
    // Selection errors are usage errors, raised before any pass runs.
    Selection::load(None)
        .and_then(|s| s.get_profilers(&language, &arch, profiler_type.as_deref()))
        .map_err(errors::to_py)?;
    let args = RunArgs::parse(options_json)?;
    let options = ProfileAllOptions {
        output_root,
        run: args.options()?,
        overrides: settings_json.map(settings).transpose()?,
        call_path: Vec::new(),
    };
    let cancel = options.run.cancel.clone();
    let runs = runtime::block_on_cancellable(py, cancel, async move {
        profile_all(&language, &arch, profiler_type.as_deref(), &argv, &options).await
    })?
    .map_err(errors::to_py)?;
    serde_json::to_string(&runs).map_err(errors::json)
}

/// The selected passes as JSON: `[{"profiler": "...", "label": "...", "settings": {...}}]`.
#[pyfunction]
#[pyo3(signature = (language, arch, profiler_type = None))]
fn select_json(language: &str, arch: &str, profiler_type: Option<&str>) -> PyResult<String> {
    let passes = Selection::load(None)
        .and_then(|s| s.get_profilers(language, arch, profiler_type))
        .map_err(errors::to_py)?;
    let list: Vec<serde_json::Value> = passes
        .iter()
        .map(|pass| {
            serde_json::json!({
                "profiler": pass.profiler,
                "label": pass.label(),
                "settings": pass.settings,
            })
        })
        .collect();
    serde_json::to_string(&list).map_err(errors::json)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(profile_json, m)?)?;
    m.add_function(wrap_pyfunction!(profile_all_json, m)?)?;
    m.add_function(wrap_pyfunction!(select_json, m)?)?;
    Ok(())
}
