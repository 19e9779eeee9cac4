//! `polyprof batch`: run a job file over this host's device pool (or one job of it, for a
//! scheduler's array task), with a `batch.json` index that a killed batch resumes from.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use polyprof::model::batch::{BatchEntry, EntryState, RayJobInfo, SlurmTaskInfo};
use polyprof::pipeline::batch::devices::DeviceChoice;
use polyprof::pipeline::batch::pool::PoolOptions;
use polyprof::pipeline::batch::warm_evals::WarmEvals;
use polyprof::pipeline::batch::{self, BatchOptions, JobSpec, OpenBatch, TaskOptions, run_task};
use polyprof::profilers::devices::{Device, device_from_env};
use polyprof::profilers::selection::Selection;

use polyprof::pipeline::profile_cache::ProfileCacheOptions;
use polyprof::pipeline::{EnvPolicy, RunOptions};

use super::batch_progress::Progress;
use super::run::{TrackingMode, cancel_on_signals};

/// Arguments of `polyprof batch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The job file: JSON Lines (one job object per line) or TOML (`[[job]]`, a .toml file).
    #[arg(value_name = "JOBS")]
    pub jobs: PathBuf,
    /// The batch root: `batch.json` and `runs/<id>/` per job.
    #[arg(long, value_name = "ROOT")]
    pub output_dir: PathBuf,
    /// CPU slots of a CPU pool (no GPU found, or `--devices cpu`) [default: the CPU count];
    /// on a GPU pool, at most this many jobs at once [default: one per GPU].
    #[arg(long = "jobs", value_name = "N", value_parser = at_least_one)]
    pub jobs_at_once: Option<usize>,
    /// The pool: GPU indices (`0,1`; `amd:0,1`, `intel:0`, `nvidia:2`), or `cpu`
    /// [default: the GPUs found, else cpu].
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,
    /// Keep the jobs that already ran to their end (entry.json and run.json read back); run
    /// the rest (crashed, lost, cancelled, unfinished, missing) again.
    #[arg(long)]
    pub resume: bool,
    /// Run every stage of every candidate of the job file's problems, skipping none (the
    /// cascade's baseline: what it saves is measured against this).
    #[arg(long)]
    pub all_stages: bool,
    /// Judge each eval job cold, with a trusted worker of its own, instead of through a warm
    /// evaluator per problem and device (docs/batch.md, "Warm evals"): slower, for comparison.
    #[arg(long)]
    pub cold_evals: bool,
    /// Check the job file and print each job it expands to (its profilers and profile cache),
    /// running nothing and creating nothing; with `--json`, as a JSON array.
    #[arg(long, conflicts_with_all = ["resume", "task_index", "task_id"])]
    pub dry_run: bool,
    /// Print the index (batch.json) on stdout at the end instead of the summary table.
    #[arg(long)]
    pub json: bool,
    /// No progress and no messages on stderr (a device taken out of the pool is still said).
    #[arg(short, long)]
    pub quiet: bool,
    /// Extra attempts of a failed, timed-out or crashed job that gives no `retries`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub retries: u32,
    /// Wall-clock limit of a job that gives no `timeout_s` (`30s`, `10m`, `1h30m`; a bare number
    /// is seconds).
    #[arg(long, value_parser = positive_secs, value_name = "DURATION")]
    pub timeout: Option<Duration>,
    /// A device whose jobs fail with a device-level error this many times in a row is taken
    /// out of the pool.
    #[arg(long, value_name = "N", default_value_t = polyprof::pipeline::batch::pool::DEFAULT_QUARANTINE_AFTER)]
    pub quarantine_after: u32,
    /// Also count output containing TEXT as a device-level error (repeatable).
    #[arg(long = "device-error", value_name = "TEXT")]
    pub device_errors: Vec<String>,
    /// How descendants are found and ended: supervisor (every one) or group.
    #[arg(long, value_enum, default_value_t, value_name = "MODE")]
    pub tracking: TrackingMode,
    /// What the jobs see of polyprof's environment: inherit, clean, untrusted (for generated
    /// code: no credential-like variables) [default: `env_policy` of the configuration
    /// (`polyprof config`), else inherit].
    #[arg(long, value_name = "POLICY")]
    pub env_policy: Option<EnvPolicy>,
    /// Also pass this variable from polyprof's environment (clean/untrusted; `NAME*` is a prefix).
    #[arg(long, value_name = "NAME")]
    pub env_allow: Vec<String>,
    /// Profile each kernel fingerprint once and serve repeats from the profile cache, in DIR
    /// [default: the user's cache], for every job under a profiler other than none that gives
    /// no `profile_cache` of its own (write `--profile-cache=DIR`, or the flag alone).
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true)]
    pub profile_cache: Option<Option<PathBuf>>,
    /// Run only the job at this 0-based position of the job file (a scheduler's array task),
    /// on the device the environment pins; writes its entry.json, not batch.json.
    #[arg(long, hide = true, value_name = "N", conflicts_with = "task_id")]
    pub task_index: Option<usize>,
    /// As `--task-index`, by job id.
    #[arg(long, hide = true, value_name = "ID")]
    pub task_id: Option<String>,
    /// With `--task-index K`: run the jobs on line K (0-based) of FILE, one after the other
    /// (their 0-based positions in the job file, space-separated): a `--slurm-mode shares`
    /// array task.
    #[arg(long, hide = true, value_name = "FILE", requires = "task_index")]
    pub task_shares: Option<PathBuf>,
    /// Run jobs one after the other as lines `INDEX SUBMISSION_ID` arrive on stdin, answering
    /// each with a line `polyprof-task-done INDEX STATE` on stdout: the warm process a Ray
    /// actor keeps for the jobs it gets (each job as `--task-index INDEX --ray-submission-id
    /// SUBMISSION_ID` would run it).
    #[arg(long, hide = true, conflicts_with_all = ["task_index", "task_id"])]
    pub task_serve: bool,
    /// The Ray job this task runs as (set by the `--ray` driver in each entrypoint).
    #[arg(long, hide = true, value_name = "ID")]
    pub ray_submission_id: Option<String>,
    #[command(flatten)]
    pub slurm: Box<super::batch_slurm::SlurmArgs>,
    #[command(flatten)]
    pub ray: Box<super::batch_ray::RayArgs>,
    #[command(flatten)]
    pub ci: super::ci_output::CiArgs,
}

/// `--jobs N`: 0 slots would run nothing and wait forever.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("0 jobs at once would run nothing; give 1 or more".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a whole number of jobs")),
    }
}

/// `batch --timeout S`: 0 would stop every job as it starts.
fn positive_secs(text: &str) -> Result<Duration, String> {
    let secs = super::duration::seconds(text)?;
    if secs.is_zero() {
        return Err(
            "a timeout of 0 s would stop every job as it starts; give a duration above 0 (or leave --timeout out)"
                .into(),
        );
    }
    Ok(secs)
}

pub async fn execute(mut args: Args) -> anyhow::Result<u8> {
    let config = polyprof::pipeline::config::Config::load()?;
    if args.env_policy.is_none() {
        args.env_policy = Some(config.env_policy.value.parse()?);
    }
    let mut specs = batch::load(&args.jobs)?;
    // A `language` job that names no profiler type takes the one configured for its language.
    for spec in &mut specs {
        if spec.profiler_type.is_none()
            && let Some(profiler) = spec
                .language
                .as_deref()
                .and_then(|l| config.profiler_for(l))
        {
            spec.profiler_type = Some(profiler.to_string());
        }
    }
    if args.dry_run {
        return super::batch_dry_run::print(&specs, &task_options(&args)?, args.json);
    }
    let remote = args.slurm.slurm || args.ray.ray.is_some();
    if args.task_serve {
        let opts = task_options(&args)?;
        return serve_tasks(&args, &specs, &opts).await;
    }
    if remote && args.task_index.is_none() && args.task_id.is_none() {
        let common = super::batch_slurm::Common {
            jobs: &args.jobs,
            output_dir: &args.output_dir,
            resume: args.resume,
            json: args.json,
            quiet: args.quiet,
            retries: args.retries,
            timeout: args.timeout,
            tracking: args.tracking,
            device_errors: &args.device_errors,
            env_policy: args.env_policy.as_ref().unwrap_or(&EnvPolicy::Inherit),
            env_allow: &args.env_allow,
            profile_cache: args.profile_cache.as_ref(),
            cold_evals: args.cold_evals,
            all_stages: args.all_stages,
            ci: &args.ci,
        };
        if args.ray.ray.is_some() {
            return super::batch_ray::execute(common, &args.slurm, &args.ray, &specs).await;
        }
        return super::batch_slurm::execute(common, &args.slurm, &specs).await;
    }
    let opts = task_options(&args)?;
    if args.task_index.is_some() || args.task_id.is_some() {
        return run_one(&args, &specs, &opts).await;
    }
    run_local(&args, &specs, opts).await
}

/// The local pool over this host's devices.
async fn run_local(args: &Args, specs: &[JobSpec], opts: TaskOptions) -> anyhow::Result<u8> {
    let batch_opts = BatchOptions {
        devices: match &args.devices {
            Some(text) => text.parse()?,
            None => DeviceChoice::Auto,
        },
        jobs: args.jobs_at_once,
        resume: args.resume,
        job_file: args.jobs.display().to_string(),
    };
    let open = OpenBatch::open(specs, &args.output_dir, &batch_opts).await?;
    if !args.quiet {
        let kept = super::batch_summary::kept_note(open.prepared.kept, open.prepared.changed);
        let names: Vec<String> = open.devices.iter().map(|d| d.name()).collect();
        eprintln!(
            "polyprof batch: {} of {} jobs to run{kept} on {}",
            open.prepared.to_run.len(),
            specs.len(),
            names.join(", ")
        );
    }
    cancel_on_signals(opts.run.cancel.clone(), opts.run.kill_now.clone());
    let cancel = opts.run.cancel.clone();
    let show = !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let progress = Progress::new(
        specs.len(),
        open.prepared.kept,
        &open.devices,
        show,
        args.quiet,
    );
    let pool_opts = PoolOptions {
        task: opts,
        quarantine_after: args.quarantine_after,
        max_parallel: None,
        all_stages: args.all_stages,
        cold_evals: args.cold_evals,
    };
    let index = open.run(specs, &pool_opts, Some(progress.observer())).await;
    progress.finish();
    super::batch_summary::finish(
        &index,
        &args.output_dir.display().to_string(),
        args.json,
        cancel.is_cancelled(),
        &args.ci,
    )
}

fn task_options(args: &Args) -> anyhow::Result<TaskOptions> {
    Ok(TaskOptions {
        selection: Arc::new(Selection::load(None)?),
        run: RunOptions {
            tracking: args.tracking.tracking()?,
            env_policy: args
                .env_policy
                .clone()
                .unwrap_or(EnvPolicy::Inherit)
                .with_allow(args.env_allow.clone()),
            ..RunOptions::default()
        },
        timeout: args.timeout,
        retries: args.retries,
        device_errors: args.device_errors.clone(),
        stop_on_device_error: false,
        node: polyprof::pipeline::host::hostname(),
        slurm: None,
        ray: None,
        profile_cache: args.profile_cache.as_ref().map(|dir| ProfileCacheOptions {
            dir: dir.clone(),
            ..ProfileCacheOptions::default()
        }),
        warm: None,
    })
}

/// `--task-index N` / `--task-id ID`: one job on the device the environment pins (with
/// `--task-shares`: each job of share N in turn).
async fn run_one(args: &Args, specs: &[JobSpec], opts: &TaskOptions) -> anyhow::Result<u8> {
    if let (Some(list), Some(k)) = (&args.task_shares, args.task_index) {
        return run_share(args, specs, opts, list, k).await;
    }
    let spec = match (&args.task_index, &args.task_id) {
        (Some(i), _) => specs.get(*i).with_context(|| {
            format!(
                "--task-index {i} is past the end of {} ({} jobs, counted from 0)",
                args.jobs.display(),
                specs.len()
            )
        })?,
        (None, Some(id)) => specs
            .iter()
            .find(|s| &s.id == id)
            .with_context(|| format!("no job `{id}` in {}", args.jobs.display()))?,
        (None, None) => anyhow::bail!("give --task-index N or --task-id ID"),
    };
    std::fs::create_dir_all(&args.output_dir)
        .with_context(|| format!("cannot create {}", args.output_dir.display()))?;
    let device = device_from_env(|name| std::env::var(name).ok());
    let opts = &TaskOptions {
        slurm: slurm_task_from_env(),
        ray: args
            .ray_submission_id
            .as_ref()
            .map(|submission_id| RayJobInfo {
                submission_id: submission_id.clone(),
                ..Default::default()
            }),
        ..opts.clone()
    };
    // A scheduler stops a task with SIGTERM (scancel, a time limit, a preemption): the run is
    // cancelled and its entry written, so `--resume` runs the job again (`state_of`).
    cancel_on_signals(opts.run.cancel.clone(), opts.run.kill_now.clone());
    let entry = run_task(spec, &args.output_dir, device.as_ref(), opts).await;
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &entry).context("cannot print the entry")?;
        writeln!(out)?;
    } else if !args.quiet {
        eprintln!("polyprof batch: job `{}`: {}", entry.id, describe(&entry));
    }
    // The job's own failure is in entry.json; the status says whether polyprof did its part.
    Ok(0)
}

/// A share task: the jobs on line `k` of `list`, one after the other, each as `run_one` runs
/// one (its own entry.json), until a scheduler's SIGTERM cancels the rest (they keep no entry,
/// so the driver marks them cancelled and `--resume` runs them).
async fn run_share(
    args: &Args,
    specs: &[JobSpec],
    opts: &TaskOptions,
    list: &std::path::Path,
    k: usize,
) -> anyhow::Result<u8> {
    let text = std::fs::read_to_string(list)
        .with_context(|| format!("cannot read the array's shares {}", list.display()))?;
    let line = text
        .lines()
        .nth(k)
        .with_context(|| format!("{} has no share {k} (counted from 0)", list.display()))?;
    let indices: Vec<usize> = line
        .split_whitespace()
        .map(|w| w.parse::<usize>())
        .collect::<Result<_, _>>()
        .with_context(|| format!("share {k} of {} is not a list of positions", list.display()))?;
    std::fs::create_dir_all(&args.output_dir)
        .with_context(|| format!("cannot create {}", args.output_dir.display()))?;
    let device = device_from_env(|name| std::env::var(name).ok());
    // One warm evaluator per problem for the whole share (this task's one device).
    let warm = warm_evals(args, specs);
    let opts = &TaskOptions {
        slurm: slurm_task_from_env(),
        warm: warm.clone(),
        ..opts.clone()
    };
    cancel_on_signals(opts.run.cancel.clone(), opts.run.kill_now.clone());
    let result = run_share_jobs(args, specs, opts, k, &indices, device.as_ref()).await;
    if let Some(warm) = warm {
        warm.close().await;
    }
    result
}

async fn run_share_jobs(
    args: &Args,
    specs: &[JobSpec],
    opts: &TaskOptions,
    k: usize,
    indices: &[usize],
    device: Option<&Device>,
) -> anyhow::Result<u8> {
    for &i in indices {
        if opts.run.cancel.is_cancelled() {
            break;
        }
        let spec = specs.get(i).with_context(|| {
            format!(
                "share {k} names job {i}, past the end of {} ({} jobs)",
                args.jobs.display(),
                specs.len()
            )
        })?;
        let entry = run_task(spec, &args.output_dir, device, opts).await;
        if !args.quiet {
            eprintln!("polyprof batch: job `{}`: {}", entry.id, describe(&entry));
        }
    }
    Ok(0)
}

/// The warm evaluators of a task that runs job after job (a share, `--task-serve`): `None`
/// with `--cold-evals` or when no job is an eval. Two idle at most: the problem in hand and
/// the one before (jobs come in file order).
fn warm_evals(args: &Args, specs: &[JobSpec]) -> Option<Arc<WarmEvals>> {
    (!args.cold_evals && specs.iter().any(|s| s.eval.is_some()))
        .then(|| Arc::new(WarmEvals::for_process(&args.output_dir, 2)))
}

/// `--task-serve`: job after job as stdin asks, until stdin closes or a SIGTERM (the actor
/// that started this died: PR_SET_PDEATHSIG) cancels the job in hand.
async fn serve_tasks(args: &Args, specs: &[JobSpec], opts: &TaskOptions) -> anyhow::Result<u8> {
    std::fs::create_dir_all(&args.output_dir)
        .with_context(|| format!("cannot create {}", args.output_dir.display()))?;
    let device = device_from_env(|name| std::env::var(name).ok());
    cancel_on_signals(opts.run.cancel.clone(), opts.run.kill_now.clone());
    // One warm evaluator per problem on this child's device, for as long as it serves.
    let warm = warm_evals(args, specs);
    let opts = &TaskOptions {
        warm: warm.clone(),
        ..opts.clone()
    };
    let result = serve_jobs(args, specs, opts, device.as_ref()).await;
    if let Some(warm) = warm {
        warm.close().await;
    }
    result
}

async fn serve_jobs(
    args: &Args,
    specs: &[JobSpec],
    opts: &TaskOptions,
    device: Option<&Device>,
) -> anyhow::Result<u8> {
    loop {
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|n| (n, line))
        })
        .await
        .context("cannot read the next task")??;
        let (read, line) = line;
        if read == 0 || opts.run.cancel.is_cancelled() {
            return Ok(0);
        }
        let mut words = line.split_whitespace();
        let (Some(index), Some(submission_id)) = (
            words.next().and_then(|w| w.parse::<usize>().ok()),
            words.next(),
        ) else {
            anyhow::bail!(
                "--task-serve: `{}` is not `INDEX SUBMISSION_ID`",
                line.trim()
            );
        };
        let spec = specs.get(index).with_context(|| {
            format!(
                "--task-serve: task {index} is past the end of {} ({} jobs)",
                args.jobs.display(),
                specs.len()
            )
        })?;
        let job_opts = TaskOptions {
            ray: Some(RayJobInfo {
                submission_id: submission_id.to_string(),
                ..Default::default()
            }),
            ..opts.clone()
        };
        let entry = run_task(spec, &args.output_dir, device, &job_opts).await;
        let mut out = std::io::stdout().lock();
        writeln!(out, "polyprof-task-done {index} {}", entry.state)?;
        out.flush()?;
        if opts.run.cancel.is_cancelled() {
            return Ok(0);
        }
    }
}

/// The Slurm array task this process runs as, from the variables Slurm sets for it.
fn slurm_task_from_env() -> Option<SlurmTaskInfo> {
    let array_job_id = std::env::var("SLURM_ARRAY_JOB_ID").ok()?;
    let task_id = std::env::var("SLURM_ARRAY_TASK_ID").ok()?.parse().ok()?;
    Some(SlurmTaskInfo {
        array_job_id,
        task_id,
        state: None,
        node: None,
    })
}

/// `succeeded in 1.2 s`, `failed (exited with code 3)`.
fn describe(entry: &BatchEntry) -> String {
    let mut text = entry.state.to_string();
    if entry.state != EntryState::Succeeded
        && let Some(outcome) = &entry.outcome
    {
        text.push_str(&format!(" ({outcome})"));
    }
    if let Some(d) = entry.duration_s {
        text.push_str(&format!(" in {d:.2} s"));
    }
    text
}
