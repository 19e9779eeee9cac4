//! `polyprof batch --ray ADDRESS`: each job of the file as one Ray job on the cluster whose
//! dashboard is ADDRESS. Each Ray job's entrypoint runs `polyprof batch JOBS --output-dir ROOT
//! --task-index N` on the node Ray picks (so ROOT, JOBS and polyprof must be on a filesystem
//! the nodes share, at the same path); this process submits, follows the jobs and keeps
//! ROOT/batch.json.

use anyhow::Context;
use polyprof::model::batch::Backend;
use polyprof::pipeline::batch::JobSpec;
use polyprof::pipeline::batch::ray::api::parse_time_limit;
use polyprof::pipeline::batch::ray::{RayEvent, RayMode, RayObserver, RayRun, Resources, run_ray};
use polyprof::pipeline::batch::waves::Waves;
use tokio_util::sync::CancellationToken;

use super::batch_slurm::{Common, Remote, SlurmArgs};
use super::run::cancel_on_signals;

/// The Ray options of `polyprof batch` (`--time`, `--max-parallel`, `--polyprof-bin` and
/// `--poll` are shared with `--slurm`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RayArgs {
    /// Submit each job as a Ray job to the cluster whose dashboard is ADDRESS
    /// (`http://HEAD:8265`, as `ray job submit --address` takes it) instead of running them here.
    #[arg(
        long,
        value_name = "ADDRESS",
        conflicts_with = "slurm",
        group = "scheduler"
    )]
    pub ray: Option<String>,
    /// GPUs each job asks Ray for (entrypoint_num_gpus); Ray pins them in CUDA_VISIBLE_DEVICES.
    /// 0 on a cluster without GPUs (then give --ray-cpus or --ray-resource).
    #[arg(long, requires = "ray", default_value_t = 1.0, value_name = "N")]
    pub ray_gpus: f64,
    /// CPUs each job asks Ray for (entrypoint_num_cpus).
    #[arg(long, requires = "ray", value_name = "N")]
    pub ray_cpus: Option<f64>,
    /// A custom resource each job asks Ray for, NAME=AMOUNT (entrypoint_resources; repeatable):
    /// the nodes declare them with `ray start --resources='{"h100": 8}'`.
    #[arg(long = "ray-resource", requires = "ray", value_parser = parse_resource, value_name = "NAME=AMOUNT")]
    pub ray_resources: Vec<(String, f64)>,
    /// How the jobs reach the cluster: `actors` (one Ray job for the batch; one long-lived
    /// actor per GPU runs job after job: milliseconds per job, for short jobs and evals) or
    /// `jobs` (one Ray job per job: Ray's start-up, seconds, per job; each job stopped and
    /// reported on its own, for long jobs).
    #[arg(long, requires = "ray", value_enum, default_value_t = ModeArg::Actors, value_name = "MODE")]
    pub ray_mode: ModeArg,
    /// The Python that runs the actor mode's driver on the cluster (it must import `ray`: the
    /// environment `ray start` ran from).
    #[arg(long, requires = "ray", default_value = "python3", value_name = "PATH")]
    pub ray_python: String,
}

/// `--ray-mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    #[default]
    Actors,
    Jobs,
}

fn parse_resource(text: &str) -> Result<(String, f64), String> {
    let (name, amount) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=AMOUNT"))?;
    let amount: f64 = amount
        .trim()
        .parse()
        .map_err(|_| format!("`{amount}` is not an amount"))?;
    if name.trim().is_empty() || amount.is_nan() || amount <= 0.0 {
        return Err(format!("`{text}`: give a name and an amount above 0"));
    }
    Ok((name.trim().to_string(), amount))
}

/// Run the batch through Ray.
pub async fn execute(
    args: Common<'_>,
    shared: &SlurmArgs,
    ray: &RayArgs,
    specs: &[JobSpec],
) -> anyhow::Result<u8> {
    let address = ray.ray.clone().context("give --ray ADDRESS")?;
    if ray.ray_gpus < 0.0 || ray.ray_gpus.is_nan() {
        anyhow::bail!("--ray-gpus {}: give 0 or more", ray.ray_gpus);
    }
    let time_limit = shared.time.as_deref().map(parse_time_limit).transpose()?;
    let Remote {
        root,
        prepared,
        task_argv,
    } = Remote::prepare(&args, shared, specs, Backend::Ray)?;
    let mut run = RayRun::new(root.clone(), address, task_argv);
    run.profile_cache = args.profile_cache_options();
    run.resources = Resources {
        gpus: (ray.ray_gpus > 0.0).then_some(ray.ray_gpus),
        cpus: ray.ray_cpus,
        custom: ray.ray_resources.iter().cloned().collect(),
    };
    run.max_parallel = shared.max_parallel.map(|n| n as usize);
    run.time_limit = time_limit;
    run.resume = args.resume;
    run.poll = shared.poll;
    run.mode = match ray.ray_mode {
        ModeArg::Actors => RayMode::Actors,
        ModeArg::Jobs => RayMode::Jobs,
    };
    run.python = ray.ray_python.clone();
    let cancel = CancellationToken::new();
    cancel_on_signals(cancel.clone(), run.give_up.clone());
    run.cancel = cancel.clone();
    if !args.quiet {
        let kept = super::batch_summary::kept_note(prepared.kept, prepared.changed);
        eprintln!(
            "polyprof batch: {} of {} jobs to submit to Ray{kept}, each asking {}",
            prepared.to_run.len(),
            specs.len(),
            run.resources.describe()
        );
    }
    let total = prepared.to_run.len();
    let waves = Waves::new(specs, args.all_stages, &prepared.to_run);
    let index = run_ray(
        specs,
        prepared,
        &run,
        Some(observer(args.quiet, total, run.mode)),
        waves,
    )
    .await?;
    super::batch_summary::finish(
        &index,
        &args.output_dir.display().to_string(),
        args.json,
        cancel.is_cancelled(),
        args.ci,
    )
}

/// One stderr line per finished job (a log, not a bar, as with Slurm).
fn observer(quiet: bool, total: usize, mode: RayMode) -> RayObserver {
    let done = std::sync::atomic::AtomicUsize::new(0);
    std::sync::Arc::new(move |event: &RayEvent| {
        if quiet {
            return;
        }
        match event {
            RayEvent::Connected {
                address,
                version,
                window,
            } => match (
                mode,
                // Ray's own text: shown, never sent.
                polyprof::results::escape::terminal::line(address),
                polyprof::results::escape::terminal::line(version),
            ) {
                (RayMode::Jobs, address, version) => eprintln!(
                    "polyprof batch: Ray {version} at {address}; at most {window} jobs submitted at once"
                ),
                (RayMode::Actors, address, version) => eprintln!(
                    "polyprof batch: Ray {version} at {address}; one Ray job, up to {window} actors (one per slot)"
                ),
            },
            RayEvent::Adopted { id, submission_id } => eprintln!(
                "polyprof batch: {id}: following Ray job {submission_id}, still live from an earlier driver"
            ),
            RayEvent::Submitted { id, submission_id } if mode == RayMode::Actors => {
                eprintln!("polyprof batch: submitted Ray job {submission_id} for {id}")
            }
            RayEvent::Submitted { .. } => {}
            RayEvent::Fed {
                jobs,
                submission_id,
            } => eprintln!(
                "polyprof batch: sent the cascade's next wave ({jobs} jobs) to Ray job {submission_id}"
            ),
            RayEvent::Changed { entry } if entry.state.is_final() => {
                let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                let node = entry
                    .ray
                    .as_ref()
                    .and_then(|r| r.node_ip.as_deref())
                    .or(entry.node.as_deref());
                eprintln!(
                    "{}",
                    super::batch_summary::finished_line(n, total, entry, node)
                );
            }
            RayEvent::Changed { .. } => {}
            RayEvent::Cancelling { jobs } => {
                eprintln!("polyprof batch: cancelling: stopping {jobs} Ray jobs")
            }
            RayEvent::Warning(text) => eprintln!(
                "polyprof batch: warning: {}",
                polyprof::results::escape::terminal::text(text)
            ),
        }
    })
}
