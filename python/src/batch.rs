//! `batch`: many jobs over this host's device pool, as `polyprof batch` runs them. Jobs come as
//! a job file or as JSON Lines text built from Python dicts; both go through the job-file
//! checks (unique, directory-safe ids; unknown keys refused), so the two entries cannot drift.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::prelude::*;
use serde::Deserialize;

use polyprof::pipeline::batch::devices::DeviceChoice;
use polyprof::pipeline::batch::pool::PoolOptions;
use polyprof::pipeline::batch::{self, BatchOptions, JobSpec, TaskOptions, run_batch};
use polyprof::profilers::selection::Selection;

use crate::errors;
use crate::runner::{RunArgs, seconds};
use crate::runtime;

/// The batch's own options as `polyprof/batch.py` sends them.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct BatchArgs {
    /// `cpu`, `0,1`, `amd:0,1`; absent: the GPUs found, else CPU slots.
    devices: Option<String>,
    /// CPU slots, or a cap on the jobs at once on a GPU pool.
    parallel: Option<usize>,
    resume: bool,
    retries: u32,
    /// Timeout of a job that gives none, seconds.
    timeout_s: Option<f64>,
    quarantine_after: Option<u32>,
    device_errors: Vec<String>,
}

fn specs_of(
    jobs_file: Option<PathBuf>,
    jobs_jsonl: Option<&str>,
) -> PyResult<(Vec<JobSpec>, String)> {
    match (jobs_file, jobs_jsonl) {
        (Some(path), None) => {
            let specs = batch::load(&path).map_err(|e| errors::usage(e.to_string()))?;
            Ok((specs, path.display().to_string()))
        }
        (None, Some(text)) => {
            // "line N" in an error is the N-th job of the list.
            let name = Path::new("<jobs given from Python>");
            let jobs =
                batch::jobfile::parse(name, text).map_err(|e| errors::usage(e.to_string()))?;
            Ok((
                jobs.into_iter().map(|j| j.spec).collect(),
                "python".to_string(),
            ))
        }
        _ => Err(errors::usage(
            "give either a job file path or a list of jobs, not both",
        )),
    }
}

/// Run a batch into `output_dir`; returns the final index (`batch.json`) as JSON. A job's
/// failure is in its entry, never raised; a bad job list or a batch root that already holds a
/// batch (without `resume`) raises `ValueError`.
#[pyfunction]
#[pyo3(signature = (output_dir, jobs_file = None, jobs_jsonl = None, batch_json = "{}", options_json = "{}"))]
fn batch_json(
    py: Python<'_>,
    output_dir: PathBuf,
    jobs_file: Option<PathBuf>,
    jobs_jsonl: Option<&str>,
    batch_json: &str,
    options_json: &str,
) -> PyResult<String> {
    let (specs, job_file) = specs_of(jobs_file, jobs_jsonl)?;
    let args: BatchArgs = serde_json::from_str(batch_json)
        .map_err(|e| errors::usage(format!("batch options: {e}")))?;
    let run = RunArgs::parse(options_json)?.options()?;
    let devices = match &args.devices {
        Some(text) => text.parse::<DeviceChoice>().map_err(errors::to_py)?,
        None => DeviceChoice::Auto,
    };
    let selection = Selection::load(None).map_err(errors::to_py)?;
    let timeout = args.timeout_s.map(|t| seconds("timeout", t)).transpose()?;
    let cancel = run.cancel.clone();
    let task = TaskOptions {
        selection: Arc::new(selection),
        run,
        timeout,
        retries: args.retries,
        device_errors: args.device_errors,
        stop_on_device_error: false,
        slurm: None,
        node: polyprof::pipeline::host::hostname(),
    };
    let opts = BatchOptions {
        devices,
        jobs: args.parallel,
        resume: args.resume,
        job_file,
    };
    let pool = PoolOptions {
        task,
        quarantine_after: args.quarantine_after.unwrap_or(3),
        max_parallel: None,
        all_stages: false,
    };
    let index = runtime::block_on_cancellable(py, cancel, async move {
        run_batch(&specs, &output_dir, &opts, &pool).await
    })?
    .map_err(errors::to_py)?;
    serde_json::to_string(&index).map_err(errors::json)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batch_json, m)?)?;
    Ok(())
}
