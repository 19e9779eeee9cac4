//! `profile`, `profile_all` and selection: profiler passes end to end, each writing a run
//! directory with `run.json`.

use std::path::{Path, PathBuf};

use pyo3::exceptions::{PyFileExistsError, PyOSError};
use pyo3::prelude::*;

use polyprof::pipeline::{Job, ProfileAllOptions, profile, profile_all, rundir};
use polyprof::profilers::ProfilerSettings;
use polyprof::profilers::selection::Selection;

use crate::errors;
use crate::runner::RunArgs;
use crate::runtime;

fn settings(json: &str) -> PyResult<ProfilerSettings> {
    serde_json::from_str(json).map_err(|e| errors::usage(format!("profiler options: {e}")))
}

/// What `profile` does with an output directory that already holds a run; the CLI's rule
/// (`polyprof run` refuses unless `--force`).
fn claim_output_dir(dir: &Path, if_exists: &str) -> PyResult<()> {
    match if_exists {
        "refuse" if rundir::holds_run(dir) => Err(PyFileExistsError::new_err(format!(
            "{} already holds a run; pass if_exists=\"overwrite\" to replace it, \
             if_exists=\"number\" to write to the next free <name>.NNN beside it, or choose \
             another output_dir",
            dir.display()
        ))),
        "overwrite" if rundir::holds_run(dir) => rundir::clear_run(dir).map(drop).map_err(|e| {
            PyOSError::new_err(format!(
                "cannot clear the old run in {}: {e}",
                dir.display()
            ))
        }),
        // `number`: the library passes over a directory holding a run.
        "refuse" | "overwrite" | "number" => Ok(()),
        other => Err(errors::usage(format!(
            "if_exists must be \"refuse\", \"overwrite\" or \"number\"; got {other:?}"
        ))),
    }
}

/// Profile `argv` with `profiler` into `output_dir`; returns the run document as JSON. Run
/// failures are in the document (`errors`, `outcome`), never raised. An `output_dir` holding a
/// run is refused unless `if_exists` says `overwrite` or `number`.
#[pyfunction]
#[pyo3(signature = (argv, profiler, output_dir, settings_json = "{}", options_json = "{}", call_path = Vec::new(), if_exists = "refuse", profile_cache_json = None))]
#[allow(clippy::too_many_arguments)]
fn profile_json(
    py: Python<'_>,
    argv: Vec<std::ffi::OsString>,
    profiler: String,
    output_dir: PathBuf,
    settings_json: &str,
    options_json: &str,
    call_path: Vec<String>,
    if_exists: &str,
    profile_cache_json: Option<&str>,
) -> PyResult<String> {
    if argv.is_empty() {
        return Err(errors::usage(
            "argv is empty: give the program and its arguments",
        ));
    }
    // A bogus profiler name is a usage error, raised before anything is created.
    polyprof::profilers::create(&profiler, &output_dir, &ProfilerSettings::default())
        .map_err(errors::to_py)?;
    claim_output_dir(&output_dir, if_exists)?;
    let args = RunArgs::parse(options_json)?;
    let mut job = Job::new(polyprof::model::arg::args(argv), output_dir);
    job.profiler = profiler;
    job.settings = settings(settings_json)?;
    job.run = args.options()?;
    job.call_path = call_path;
    job.profile_cache = profile_cache_json
        .map(serde_json::from_str::<polyprof::pipeline::profile_cache::ProfileCacheOptions>)
        .transpose()
        .map_err(|e| errors::usage(format!("profile_cache: {e}")))?;
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
