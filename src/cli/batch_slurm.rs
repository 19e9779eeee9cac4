//! `polyprof batch --slurm`: the job file as one Slurm job array. Each array task runs
//! `polyprof batch JOBS --output-dir ROOT --task-index $SLURM_ARRAY_TASK_ID` on its node (so
//! ROOT and JOBS must be on a filesystem the nodes share, at the same path); this process
//! submits, follows the tasks and keeps ROOT/batch.json.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::ValueEnum;
use polyprof::model::batch::Backend;
use polyprof::pipeline::batch::slurm::{
    SLURM_DIR, SlurmEvent, SlurmObserver, SlurmRun, SubmitOptions, run_slurm,
};
use polyprof::pipeline::batch::waves::Waves;
use polyprof::pipeline::batch::{JobSpec, index};
use polyprof::pipeline::runner::EnvPolicy;
use tokio_util::sync::CancellationToken;

use super::run::{TrackingMode, cancel_on_signals};

/// The options of `polyprof batch` that the Slurm and Ray drivers use (given by
/// src/cli/batch.rs, so these files do not import it back).
#[derive(Debug, Clone)]
pub struct Common<'a> {
    pub jobs: &'a Path,
    pub output_dir: &'a Path,
    pub resume: bool,
    pub json: bool,
    pub quiet: bool,
    /// Passed on to every task.
    pub retries: u32,
    pub timeout: Option<Duration>,
    pub tracking: TrackingMode,
    pub device_errors: &'a [String],
    pub env_policy: &'a EnvPolicy,
    pub env_allow: &'a [String],
    /// `--profile-cache [DIR]`, passed on to every task.
    pub profile_cache: Option<&'a Option<PathBuf>>,
    /// `--cold-evals`, passed on to every task.
    pub cold_evals: bool,
    /// `--all-stages`: the cascade skips nothing (the driver decides the stages, not a task).
    pub all_stages: bool,
    pub ci: &'a super::ci_output::CiArgs,
}

impl Common<'_> {
    /// `--profile-cache [DIR]` as the options the tasks resolve it to.
    pub fn profile_cache_options(
        &self,
    ) -> Option<polyprof::pipeline::profile_cache::ProfileCacheOptions> {
        self.profile_cache.map(
            |dir| polyprof::pipeline::profile_cache::ProfileCacheOptions {
                dir: dir.clone(),
                ..Default::default()
            },
        )
    }
}

/// The Slurm options of `polyprof batch`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SlurmArgs {
    /// Submit the jobs as a Slurm job array (sbatch) instead of running them on this host.
    #[arg(long, group = "scheduler")]
    pub slurm: bool,
    /// Slurm partition (`sbatch --partition`).
    #[arg(long, requires = "slurm", value_name = "NAME")]
    pub partition: Option<String>,
    /// Slurm account (`sbatch --account`).
    #[arg(long, requires = "slurm", value_name = "NAME")]
    pub account: Option<String>,
    /// Time limit per task: a duration (`30m`, `1h30m`, `90s`) or as sbatch reads it (a bare
    /// number is minutes, `1:00:00`, `2-12`); a task past it is timed_out (Slurm's limit; with
    /// --ray the driver stops the Ray job).
    #[arg(long, requires = "scheduler", value_parser = super::duration::slurm_time, value_name = "LIMIT")]
    pub time: Option<String>,
    /// GPUs per task (`sbatch --gpus-per-task`); each task sees its own in CUDA_VISIBLE_DEVICES.
    #[arg(long, requires = "slurm", conflicts_with = "gres", value_name = "N")]
    pub gpus_per_task: Option<u32>,
    /// Generic resources per task (`sbatch --gres`, e.g. `gpu:1`, `gpu:h100:1`).
    #[arg(long, requires = "slurm", value_name = "SPEC")]
    pub gres: Option<String>,
    /// Any other sbatch option, passed as one word after polyprof's own (repeatable):
    /// `--sbatch-arg=--requeue`, `--sbatch-arg=--constraint=h100`.
    #[arg(
        long = "sbatch-arg",
        requires = "slurm",
        allow_hyphen_values = true,
        value_name = "ARG"
    )]
    pub sbatch_args: Vec<String>,
    /// At most N tasks at once (`--array=…%N`; with --ray: jobs submitted and not finished
    /// [default: what the cluster's live nodes hold]).
    #[arg(long, requires = "scheduler", value_name = "N")]
    pub max_parallel: Option<u32>,
    /// polyprof's path as the nodes see it [default: this executable].
    #[arg(long, requires = "scheduler", value_name = "PATH")]
    pub polyprof_bin: Option<PathBuf>,
    /// How the array runs the jobs: `tasks` (one array task per job) or `shares` (`--tasks N`
    /// array tasks, one per GPU, each running its share of the jobs one after the other:
    /// Slurm's launch cost paid N times, not once per job).
    #[arg(long, requires = "slurm", value_enum, default_value_t = SlurmMode::Tasks, value_name = "MODE")]
    pub slurm_mode: SlurmMode,
    /// With `--slurm-mode shares`: how many array tasks (one GPU each) [default: --max-parallel,
    /// else 1].
    #[arg(long = "tasks", requires = "slurm", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub tasks: Option<u32>,
    /// Time between polls of squeue (of the Ray jobs, with --ray) (`500ms`, `2s`; a bare number
    /// is seconds).
    #[arg(long, requires = "scheduler", value_parser = super::duration::seconds, default_value = "0.5", value_name = "DURATION")]
    pub poll: Duration,
}

/// `--slurm-mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SlurmMode {
    #[default]
    Tasks,
    Shares,
}

/// What a batch on a cluster (Slurm or Ray) starts from: the root made and resolved, the index
/// prepared (what is left to run), and the argv every task runs on its node.
pub(super) struct Remote {
    pub root: PathBuf,
    pub prepared: index::Prepared,
    pub task_argv: Vec<String>,
}

impl Remote {
    pub fn prepare(
        args: &Common,
        shared: &SlurmArgs,
        specs: &[JobSpec],
        backend: Backend,
    ) -> anyhow::Result<Self> {
        polyprof::pipeline::rundir::check_usable(args.output_dir)?;
        std::fs::create_dir_all(args.output_dir)
            .with_context(|| format!("cannot create {}", args.output_dir.display()))?;
        // The nodes need absolute paths.
        let root = args
            .output_dir
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", args.output_dir.display()))?;
        let jobs = args
            .jobs
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", args.jobs.display()))?;
        let job_file = args.jobs.display().to_string();
        let prepared = index::prepare(&root, &job_file, specs, backend, args.resume)?;
        let polyprof = match &shared.polyprof_bin {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .context("cannot find polyprof's own executable; give --polyprof-bin")?,
        };
        let task_argv = task_argv(args, &polyprof, &jobs, &root)?;
        Ok(Self {
            root,
            prepared,
            task_argv,
        })
    }
}

/// Run the batch through Slurm.
pub async fn execute(args: Common<'_>, slurm: &SlurmArgs, specs: &[JobSpec]) -> anyhow::Result<u8> {
    let Remote {
        root,
        prepared,
        task_argv,
    } = Remote::prepare(&args, slurm, specs, Backend::Slurm)?;
    let mut run = SlurmRun::new(root.clone(), task_argv);
    run.profile_cache = args.profile_cache_options();
    run.poll = slurm.poll;
    run.shares = match slurm.slurm_mode {
        SlurmMode::Tasks => {
            if slurm.tasks.is_some() {
                anyhow::bail!("--tasks N goes with --slurm-mode shares");
            }
            None
        }
        SlurmMode::Shares => Some(slurm.tasks.or(slurm.max_parallel).unwrap_or(1)),
    };
    run.submit = SubmitOptions {
        partition: slurm.partition.clone(),
        account: slurm.account.clone(),
        time: slurm.time.clone(),
        gpus_per_task: slurm.gpus_per_task,
        gres: slurm.gres.clone(),
        max_parallel: slurm.max_parallel,
        sbatch_args: slurm.sbatch_args.clone(),
        job_name: None,
    };
    let cancel = CancellationToken::new();
    cancel_on_signals(cancel.clone(), run.give_up.clone());
    run.cancel = cancel.clone();
    if !args.quiet {
        let kept = super::batch_summary::kept_note(prepared.kept, prepared.changed);
        eprintln!(
            "polyprof batch: {} of {} jobs to submit to Slurm{kept}",
            prepared.to_run.len(),
            specs.len()
        );
    }
    let total = prepared.to_run.len();
    let waves = Waves::new(specs, args.all_stages, &prepared.to_run);
    let index = run_slurm(
        specs,
        prepared,
        &run,
        Some(observer(args.quiet, total, &root)),
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

/// `polyprof batch JOBS --output-dir ROOT --quiet` plus the options every task shares.
pub(super) fn task_argv(
    args: &Common,
    polyprof: &Path,
    jobs: &Path,
    root: &Path,
) -> anyhow::Result<Vec<String>> {
    let text = |p: &Path| {
        p.to_str()
            .map(str::to_string)
            .with_context(|| format!("`{}` is not valid UTF-8", p.display()))
    };
    let mut argv = vec![
        text(polyprof)?,
        "batch".to_string(),
        text(jobs)?,
        "--output-dir".to_string(),
        text(root)?,
        "--quiet".to_string(),
        format!("--retries={}", args.retries),
    ];
    if let Some(t) = args.timeout {
        argv.push(format!("--timeout={}", t.as_secs_f64()));
    }
    if let Some(mode) = args.tracking.to_possible_value() {
        argv.push(format!("--tracking={}", mode.get_name()));
    }
    for text in args.device_errors {
        argv.push(format!("--device-error={text}"));
    }
    let policy = match args.env_policy {
        EnvPolicy::Inherit => "inherit",
        EnvPolicy::Clean { .. } => "clean",
        EnvPolicy::Untrusted { .. } => "untrusted",
    };
    argv.push(format!("--env-policy={policy}"));
    for name in args.env_allow {
        argv.push(format!("--env-allow={name}"));
    }
    if args.cold_evals {
        argv.push("--cold-evals".to_string());
    }
    match args.profile_cache {
        None => {}
        Some(None) => argv.push("--profile-cache".to_string()),
        // The nodes need an absolute path (a task's working directory may differ).
        Some(Some(dir)) => {
            let dir = std::path::absolute(dir)
                .with_context(|| format!("cannot resolve {}", dir.display()))?;
            argv.push(format!("--profile-cache={}", text(&dir)?));
        }
    }
    Ok(argv)
}

/// One stderr line per submission and per finished job (a log, not a bar: Slurm batches run
/// for hours and are often followed through a file).
fn observer(quiet: bool, total: usize, root: &Path) -> SlurmObserver {
    let logs = root.join(SLURM_DIR);
    let done = std::sync::atomic::AtomicUsize::new(0);
    std::sync::Arc::new(move |event: &SlurmEvent| {
        if quiet {
            return;
        }
        match event {
            SlurmEvent::Submitted { job_id, tasks } => eprintln!(
                "polyprof batch: submitted array {job_id} ({tasks} tasks); task output in {}",
                logs.display()
            ),
            SlurmEvent::Changed { entry } if entry.state.is_final() => {
                let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                eprintln!(
                    "{}",
                    super::batch_summary::finished_line(n, total, entry, entry.node.as_deref())
                );
            }
            SlurmEvent::Changed { .. } => {}
            SlurmEvent::Cancelling { job_id } => {
                eprintln!("polyprof batch: cancelling: scancel {job_id}")
            }
            SlurmEvent::Warning(text) => eprintln!(
                "polyprof batch: warning: {}",
                polyprof::results::escape::terminal::text(text)
            ),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The options every array task gets, with `--profile-cache` as given.
    fn argv(profile_cache: Option<&Option<PathBuf>>) -> Vec<String> {
        argv_with(profile_cache, false)
    }

    fn argv_with(profile_cache: Option<&Option<PathBuf>>, cold_evals: bool) -> Vec<String> {
        let ci = super::super::ci_output::CiArgs::default();
        let common = Common {
            jobs: Path::new("jobs.jsonl"),
            output_dir: Path::new("out"),
            resume: false,
            json: false,
            quiet: false,
            retries: 1,
            timeout: None,
            tracking: TrackingMode::default(),
            device_errors: &[],
            env_policy: &EnvPolicy::Inherit,
            env_allow: &[],
            profile_cache,
            cold_evals,
            all_stages: false,
            ci: &ci,
        };
        task_argv(
            &common,
            Path::new("/bin/polyprof"),
            Path::new("/r/jobs.jsonl"),
            Path::new("/r/out"),
        )
        .unwrap()
    }

    #[test]
    fn each_task_judges_evals_cold_only_when_the_batch_does() {
        assert!(!argv(None).iter().any(|a| a == "--cold-evals"));
        assert!(argv_with(None, true).iter().any(|a| a == "--cold-evals"));
    }

    #[test]
    fn each_task_gets_the_batchs_profile_cache_with_an_absolute_directory() {
        assert!(!argv(None).iter().any(|a| a.starts_with("--profile-cache")));
        assert!(argv(Some(&None)).contains(&"--profile-cache".to_string()));
        let relative = Some(PathBuf::from("cache"));
        let with_dir = argv(Some(&relative));
        let flag = with_dir
            .iter()
            .find(|a| a.starts_with("--profile-cache="))
            .unwrap();
        let dir = Path::new(flag.trim_start_matches("--profile-cache="));
        assert!(dir.is_absolute() && dir.ends_with("cache"), "{flag}");
    }
}
