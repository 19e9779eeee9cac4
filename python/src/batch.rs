//! `batch`: many jobs over this host's device pool, as `polyprof batch` runs them. Jobs come as
//! a job file or as JSON Lines text built from Python dicts; both go through the job-file
//! checks (unique, directory-safe ids; unknown keys refused), so the two entries cannot drift.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::prelude::*;
use serde::Deserialize;

use polyprof::pipeline::batch::devices::DeviceChoice;
use polyprof::pipeline::batch::pool::PoolOptions;
use polyprof::pipeline::batch::waves::Waves;
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
    /// A Ray dashboard (`http://head:8265`): each job becomes a Ray job there.
    ray: Option<String>,
    /// GPUs / CPUs / custom resources each Ray job asks for (GPUs: 1 by default).
    ray_gpus: Option<f64>,
    ray_cpus: Option<f64>,
    ray_resources: BTreeMap<String, f64>,
    /// Ray: at most this many jobs submitted and not finished.
    max_parallel: Option<usize>,
    /// Ray: a job running longer is stopped and timed_out (`--time`'s forms: `30`, `1:00:00`).
    time_limit: Option<String>,
    /// Ray: polyprof's executable as the nodes see it.
    polyprof_bin: Option<PathBuf>,
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
    let args: BatchArgs = serde_json::from_str(batch_json)
        .map_err(|e| errors::usage(format!("batch options: {e}")))?;
    let run_args = RunArgs::parse(options_json)?;
    if args.ray.is_some() {
        return ray_batch(py, output_dir, jobs_file, jobs_jsonl, args, &run_args);
    }
    let (specs, job_file) = specs_of(jobs_file, jobs_jsonl)?;
    let run = run_args.options()?;
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
        ray: None,
        node: polyprof::pipeline::host::hostname(),
        profile_cache: None,
        // The pool starts its own warm evaluators for eval jobs.
        warm: None,
    };
    let opts = BatchOptions {
        devices,
        jobs: args.parallel,
        resume: args.resume,
        job_file,
    };
    let pool = PoolOptions {
        task,
        quarantine_after: args
            .quarantine_after
            .unwrap_or(polyprof::pipeline::batch::pool::DEFAULT_QUARANTINE_AFTER),
        ..PoolOptions::default()
    };
    let index = runtime::block_on_cancellable(py, cancel, async move {
        run_batch(&specs, &output_dir, &opts, &pool).await
    })?
    .map_err(errors::to_py)?;
    serde_json::to_string(&index).map_err(errors::json)
}

/// The batch as Ray jobs: the nodes read the job file and the batch root at the same paths,
/// so jobs given from Python are written to `ROOT/ray/jobs.jsonl` first.
fn ray_batch(
    py: Python<'_>,
    output_dir: PathBuf,
    jobs_file: Option<PathBuf>,
    jobs_jsonl: Option<&str>,
    args: BatchArgs,
    run_args: &RunArgs,
) -> PyResult<String> {
    use polyprof::model::batch::Backend;
    use polyprof::pipeline::batch::index;
    use polyprof::pipeline::batch::ray::api::parse_time_limit;
    use polyprof::pipeline::batch::ray::{RAY_DIR, RayRun, Resources, run_ray};

    let address = args.ray.clone().unwrap_or_default();
    let polyprof = args.polyprof_bin.clone().ok_or_else(|| {
        errors::usage("give polyprof_bin: polyprof's executable as the Ray nodes see it")
    })?;
    std::fs::create_dir_all(&output_dir)
        .map_err(|e| errors::to_py(polyprof::Error::io("create", &output_dir, e)))?;
    let root = output_dir
        .canonicalize()
        .map_err(|e| errors::to_py(polyprof::Error::io("resolve", &output_dir, e)))?;
    // Parsed before anything is written: a bad list changes nothing on disk.
    let (specs, _) = specs_of(jobs_file.clone(), jobs_jsonl)?;
    let written = root.join(RAY_DIR).join("jobs.jsonl");
    let jobs = match &jobs_file {
        Some(path) => path
            .canonicalize()
            .map_err(|e| errors::to_py(polyprof::Error::io("resolve", path, e)))?,
        None => written.clone(),
    };
    // The root's lock first: a driver still running on it has nodes reading its job file.
    let prepared = index::prepare(
        &root,
        &jobs.display().to_string(),
        &specs,
        Backend::Ray,
        args.resume,
    )
    .map_err(errors::to_py)?;
    if let (None, Some(text)) = (&jobs_file, jobs_jsonl) {
        std::fs::create_dir_all(root.join(RAY_DIR))
            .map_err(|e| errors::to_py(polyprof::Error::io("create", root.join(RAY_DIR), e)))?;
        polyprof::model::atomic_file::write_atomic(&written, text.as_bytes())
            .map_err(|e| errors::to_py(polyprof::Error::io("write", &written, e)))?;
    }
    let text = |p: &Path| {
        p.to_str()
            .map(str::to_string)
            .ok_or_else(|| errors::usage(format!("`{}` is not valid UTF-8", p.display())))
    };
    let mut argv = vec![
        text(&polyprof)?,
        "batch".into(),
        text(&jobs)?,
        "--output-dir".into(),
        text(&root)?,
        "--quiet".into(),
        format!("--retries={}", args.retries),
    ];
    if let Some(t) = args.timeout_s {
        argv.push(format!(
            "--timeout={}",
            seconds("timeout", t)?.as_secs_f64()
        ));
    }
    for text in &args.device_errors {
        argv.push(format!("--device-error={text}"));
    }
    argv.push(format!(
        "--env-policy={}",
        run_args.env_policy.as_deref().unwrap_or("inherit")
    ));
    for name in &run_args.allow_env {
        argv.push(format!("--env-allow={name}"));
    }
    let gpus = args.ray_gpus.unwrap_or(1.0);
    if gpus.is_nan() || gpus < 0.0 {
        return Err(errors::usage(format!("ray_gpus {gpus}: give 0 or more")));
    }
    let mut run = RayRun::new(root.clone(), address, argv);
    run.resources = Resources {
        gpus: (gpus > 0.0).then_some(gpus),
        cpus: args.ray_cpus,
        custom: args.ray_resources,
    };
    run.max_parallel = args.max_parallel;
    run.time_limit = args
        .time_limit
        .as_deref()
        .map(parse_time_limit)
        .transpose()
        .map_err(errors::to_py)?;
    run.resume = args.resume;
    let cancel = run.cancel.clone();
    // A job file's problem stages go a wave at a time, as the local pool decides them.
    let waves = Waves::new(&specs, false, &prepared.to_run);
    let index = runtime::block_on_cancellable(py, cancel, async move {
        run_ray(&specs, prepared, &run, None, waves).await
    })?
    .map_err(errors::ray_to_py)?;
    serde_json::to_string(&index).map_err(errors::json)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batch_json, m)?)?;
    Ok(())
}
