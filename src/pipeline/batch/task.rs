//! One job of a batch, start to end: `run_task` runs a job's profiler passes into
//! `<root>/runs/<id>/` (through `profile_on`), retries it as its policy says, and writes the
//! job's `entry.json`. The local pool and Slurm array tasks both run jobs through it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::model::batch::{
    BatchEntry, EntryState, RUNS_DIR, RayJobInfo, SlurmTaskInfo, now_unix_s,
};
use crate::model::outcome::Outcome;
use crate::model::run::ProfileRun;
use crate::pipeline::container::ContainerJob;
use crate::pipeline::container::job::{GpuRequest, caller_user};
use crate::pipeline::job::{Job, pass_label, profile_on};
use crate::pipeline::lock::{HeldLock, try_lock};
use crate::pipeline::profile_cache::ProfileCacheOptions;
use crate::pipeline::runner::RunOptions;
use crate::pipeline::target::ExecutionTarget;
use crate::profilers::devices::{Device, device_failure};
use crate::profilers::selection::Selection;

use super::eval_job::run_eval_job;
use super::spec::JobSpec;
use super::warm_evals::WarmEvals;

/// What every job of a batch shares.
#[derive(Debug, Clone)]
pub struct TaskOptions {
    /// The selection table `language` + `arch` jobs resolve through.
    pub selection: Arc<Selection>,
    /// Base run options: tracking, environment policy, cancellation. Each job adds its own
    /// timeouts, variables and its device's pinning on top.
    pub run: RunOptions,
    /// Timeout of a job that gives none (`--timeout`).
    pub timeout: Option<Duration>,
    /// Retries of a job that gives none (`--retries`).
    pub retries: u32,
    /// Extra substrings that mark a failure as the device's (`--device-error TEXT`).
    pub device_errors: Vec<String>,
    /// Return at once after a device-level failure instead of retrying on the same device
    /// (the pool moves the job to another device).
    pub stop_on_device_error: bool,
    /// Host name recorded in the entry.
    pub node: Option<String>,
    /// The scheduler's array task this job runs as (Slurm's `SLURM_ARRAY_JOB_ID` and
    /// `SLURM_ARRAY_TASK_ID`), recorded in the entry so a driver tells its own task's entry
    /// from one a cancelled task of an earlier array wrote late.
    pub slurm: Option<SlurmTaskInfo>,
    /// The Ray job this job runs as (its submission id, given on the task's command line), for
    /// the same reason.
    pub ray: Option<RayJobInfo>,
    /// The batch's profile cache (`--profile-cache [DIR]`) for every pass under a profiler
    /// other than `none` whose job gives no `profile_cache` of its own.
    pub profile_cache: Option<ProfileCacheOptions>,
    /// The warm evaluators eval jobs go through (`None`: each eval judged cold, with a
    /// trusted worker of its own).
    pub warm: Option<Arc<WarmEvals>>,
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions {
            // A constant of the binary that its own tests parse; nothing a user gives.
            selection: Arc::new(
                Selection::embedded().expect("the embedded selection table parses"),
            ),
            run: RunOptions::default(),
            timeout: None,
            retries: 0,
            device_errors: Vec::new(),
            stop_on_device_error: false,
            slurm: None,
            ray: None,
            node: None,
            profile_cache: None,
            warm: None,
        }
    }
}

/// The entry's state for one finished pass (pure: from the run document alone).
pub fn state_of(run: &ProfileRun) -> EntryState {
    match &run.outcome {
        None => EntryState::Crashed,
        Some(o) if o.is_success() => {
            if run.errors.is_empty() {
                EntryState::Succeeded
            } else {
                // The command did its work and polyprof could not do its part.
                EntryState::Crashed
            }
        }
        Some(Outcome::TimedOut { .. } | Outcome::Inactive { .. }) => EntryState::TimedOut,
        Some(Outcome::Cancelled) => EntryState::Cancelled,
        // SIGTERM or SIGKILL from outside polyprof (a scheduler's scancel, a time limit, a
        // preemption, an operator) cut the job off; it did not fail by itself, so `--resume`
        // runs it again. polyprof's own stops are TimedOut/Inactive/Cancelled above.
        Some(
            Outcome::Signalled {
                signal: libc::SIGTERM | libc::SIGKILL,
            }
            | Outcome::SupervisorKilled {
                signal: libc::SIGTERM | libc::SIGKILL,
            },
        ) => EntryState::Cancelled,
        Some(_) => EntryState::Failed,
    }
}

/// Whether a job that ended in `state` is tried again while it has retries left.
pub fn retryable(state: EntryState) -> bool {
    matches!(
        state,
        EntryState::Failed | EntryState::TimedOut | EntryState::Crashed | EntryState::Lost
    )
}

/// The run directory of job `id` inside the batch root.
pub fn run_dir(root: &Path, id: &str) -> PathBuf {
    root.join(RUNS_DIR).join(id)
}

/// Run one job into `root/runs/<id>/` and write its `entry.json`. `device`: the slot it runs
/// on (its pinning variables are set for the command); `None`: whatever the environment
/// already pins (a Slurm task). Never panics; every failure is in the returned entry.
pub async fn run_task(
    spec: &JobSpec,
    root: &Path,
    device: Option<&Device>,
    opts: &TaskOptions,
) -> BatchEntry {
    let dir = run_dir(root, &spec.id);
    let mut entry = spec.pending_entry();
    entry.definition_digest = Some(spec.definition_digest());
    // One runner per job, whoever runs it (a pool's slot, a Slurm array task, a task of an
    // earlier array still alive): the loser writes nothing, the run directory is the holder's.
    let _job_lock = match lock_job(root, &spec.id) {
        Ok(lock) => lock,
        Err(e) => {
            entry.state = EntryState::Crashed;
            entry.errors = vec![e.to_string()];
            return entry;
        }
    };
    entry.device = device.map(Device::name);
    entry.node = opts.node.clone();
    entry.slurm = opts.slurm.clone();
    entry.ray = opts.ray.clone();
    entry.state = EntryState::Running;
    let started = now_unix_s();
    entry.started_unix_s = Some(started);
    let retries = spec.retries.unwrap_or(opts.retries);
    let mut history: Vec<String> = Vec::new();
    if let Some(eval) = &spec.eval {
        // One attempt: a judged candidate is a result, and a candidate that failed failed
        // itself (retrying it would judge it again). No entry is written first: the eval
        // claims an empty directory, and an eval cut off leaves no entry, so it reruns.
        entry.attempts = 1;
        match clear_dir(&dir) {
            Ok(()) => {
                run_eval_job(
                    &mut entry,
                    spec,
                    eval,
                    &dir,
                    device,
                    &opts.run,
                    opts.timeout,
                    opts.warm.as_deref(),
                )
                .await
            }
            Err(e) => {
                entry.state = EntryState::Crashed;
                entry.errors = vec![format!(
                    "cannot prepare the run directory {}: {e}",
                    dir.display()
                )];
            }
        }
        if opts.run.cancel.is_cancelled() && entry.state != EntryState::Succeeded {
            entry.state = EntryState::Cancelled;
        }
    } else {
        loop {
            entry.attempts += 1;
            if let Err(e) = clear_dir(&dir) {
                entry.state = EntryState::Crashed;
                entry.errors = vec![format!(
                    "cannot prepare the run directory {}: {e}",
                    dir.display()
                )];
                break;
            }
            // A batch killed from here on finds the job marked running.
            let _ = entry.write_atomic(&dir);
            let runs = run_passes(spec, root, &dir, device, opts).await;
            summarize(&mut entry, &runs, &opts.device_errors);
            if let Err(e) = &runs {
                entry.state = EntryState::Crashed;
                entry.errors = vec![e.clone()];
            }
            // A scheduler's SIGTERM (scancel) reaches the command and this process together: a
            // shell exits 143 at once, and the handler that cancels `opts.run.cancel` may run a
            // moment later. Give it that moment before judging the exit a failure.
            if entry.state == EntryState::Failed && exited_as_if_terminated(entry.exit_code) {
                let _ =
                    tokio::time::timeout(SIGNAL_HANDLER_GRACE, opts.run.cancel.cancelled()).await;
            }
            // Stopped by our cancellation (Ctrl-C, a scheduler's SIGTERM to an array task): cut
            // off, whatever the command made of the signal (a shell exits 143), so `--resume`
            // runs it again.
            if opts.run.cancel.is_cancelled() && entry.state != EntryState::Succeeded {
                entry.state = EntryState::Cancelled;
            }
            let device_fault = entry.device_error.is_some();
            let again = retryable(entry.state)
                && entry.attempts <= retries
                && !opts.run.cancel.is_cancelled()
                && !(device_fault && opts.stop_on_device_error);
            if !again {
                break;
            }
            history.push(format!(
                "attempt {} {}: {}",
                entry.attempts,
                entry.state,
                entry
                    .errors
                    .first()
                    .cloned()
                    .or_else(|| entry.outcome.as_ref().map(|o| o.to_string()))
                    .unwrap_or_default()
            ));
        }
    }
    // Earlier attempts' files are gone; what they ended with stays in the entry.
    if !history.is_empty() {
        history.extend(std::mem::take(&mut entry.errors));
        entry.errors = history;
    }
    let finished = now_unix_s();
    entry.finished_unix_s = Some(finished);
    entry.duration_s = Some((finished - started).max(0.0));
    if let Err(e) = std::fs::create_dir_all(&dir)
        .map_err(|e| e.to_string())
        .and_then(|()| entry.write_atomic(&dir).map_err(|e| e.to_string()))
    {
        entry.errors.push(format!("cannot write entry.json: {e}"));
    }
    entry
}

/// How long a job that exited as a shell does on SIGTERM waits for this process's own signal
/// handler (a command that exits 143 by itself loses only this).
const SIGNAL_HANDLER_GRACE: Duration = Duration::from_millis(250);

/// Whether `code` is a shell's exit on SIGTERM (128 + 15). Not SIGKILL's 137: a SIGKILL that
/// reached this process too left nothing to wait for.
fn exited_as_if_terminated(code: Option<i32>) -> bool {
    code == Some(128 + libc::SIGTERM)
}

/// The lock of job `id` (`runs/.<id>.lock`: outside its run directory, which each attempt
/// clears). Whoever runs the job holds it; a job held elsewhere is [`Error::Busy`].
///
/// [`Error::Busy`]: crate::model::error::Error::Busy
pub fn lock_job(root: &Path, id: &str) -> crate::model::error::Result<HeldLock> {
    let runs = root.join(RUNS_DIR);
    std::fs::create_dir_all(&runs)
        .map_err(|e| crate::model::error::Error::io("create", &runs, e))?;
    try_lock(
        &runs.join(format!(".{id}.lock")),
        "batch job",
        &run_dir(root, id),
    )
}

/// An empty run directory at `dir` (an earlier attempt's or run's files removed).
fn clear_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::create_dir_all(dir)
}

/// Run every pass of the job; `Err` when it could not be planned at all (selection).
async fn run_passes(
    spec: &JobSpec,
    root: &Path,
    dir: &Path,
    device: Option<&Device>,
    opts: &TaskOptions,
) -> Result<Vec<(String, ProfileRun)>, String> {
    let passes = spec.passes(&opts.selection).map_err(|e| e.to_string())?;
    let target = match &spec.container {
        None => ExecutionTarget::Local,
        Some(image) => {
            let mut job = ContainerJob::new(image.clone());
            job.user = Some(caller_user());
            if let Some(d) = device
                && d.vendor() == Some(crate::profilers::registry::Vendor::Nvidia)
            {
                job.gpus = Some(GpuRequest::Ids(vec![d.index.clone()]));
            }
            ExecutionTarget::Container(Box::new(job))
        }
    };
    let mut run = opts.run.clone();
    if let Some(t) = spec
        .timeout_s
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
    {
        run.timeout = Some(t);
    } else if opts.timeout.is_some() {
        run.timeout = opts.timeout;
    }
    if let Some(t) = spec
        .inactivity_timeout_s
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
    {
        run.inactivity_timeout = Some(t);
    }
    run.extra_env
        .extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    // The pool's pinning wins over the job's own variables: the device is the job's alone.
    if let Some(d) = device {
        run.extra_env.extend(d.pin_env());
    }
    let many = passes.len() > 1;
    let mut counters: BTreeMap<String, u32> = BTreeMap::new();
    let mut runs = Vec::new();
    for pass in passes {
        if opts.run.cancel.is_cancelled() {
            break;
        }
        let n = counters.entry(pass.profiler.clone()).or_default();
        let label = pass_label(&pass.profiler, *n);
        *n += 1;
        let output_dir = if many {
            dir.join(&label)
        } else {
            dir.to_path_buf()
        };
        let job = Job {
            target: crate::model::arg::args(spec.target.iter().cloned()),
            profiler: pass.profiler.clone(),
            settings: pass.settings.clone(),
            output_dir: output_dir.clone(),
            label: Some(format!("{}/{label}", spec.id)),
            run: run.clone(),
            call_path: Vec::new(),
            profile_cache: spec.profile_cache_for(&pass.profiler, opts.profile_cache.as_ref()),
        };
        let done = profile_on(&job, &target).await;
        // Where the pass really ran (a directory another run held is passed over).
        let rel = done
            .output_dir
            .strip_prefix(root)
            .map_or_else(|_| done.output_dir.clone(), Path::to_path_buf);
        runs.push((rel.to_string_lossy().into_owned(), done));
    }
    Ok(runs)
}

/// Fill the entry's state and key figures from the passes' run documents.
fn summarize(
    entry: &mut BatchEntry,
    runs: &Result<Vec<(String, ProfileRun)>, String>,
    device_errors: &[String],
) {
    entry.passes.clear();
    entry.errors.clear();
    entry.outcome = None;
    entry.exit_code = None;
    entry.device_error = None;
    entry.kernels = 0;
    entry.total_kernel_ns = None;
    entry.top_kernel = None;
    let Ok(runs) = runs else { return };
    if runs.is_empty() {
        entry.state = EntryState::Cancelled;
        return;
    }
    // The worst pass decides: any failure of any pass is the job's.
    let mut state = EntryState::Succeeded;
    let mut totals: BTreeMap<String, f64> = BTreeMap::new();
    for (rel, run) in runs {
        if runs.len() > 1 {
            entry.passes.push(rel.clone());
        }
        let s = state_of(run);
        if severity(s) > severity(state) {
            state = s;
        }
        entry.outcome = run.outcome.clone().or(entry.outcome.take());
        if let Some(Outcome::Exited { code }) = &run.outcome {
            entry.exit_code = Some(*code);
        }
        entry
            .errors
            .extend(run.errors.iter().map(|e| e.to_string()));
        entry.kernels += run.kernels.len();
        for k in &run.kernels {
            if let Some(ns) = k.duration_ns {
                *totals.entry(k.short_name.clone()).or_default() += ns;
            }
        }
        if entry.device_error.is_none() && s != EntryState::Succeeded {
            let lines = failure_lines(run);
            entry.device_error = device_failure(lines.iter().map(String::as_str), device_errors);
        }
    }
    if !totals.is_empty() {
        entry.total_kernel_ns = Some(totals.values().sum());
        entry.top_kernel = totals
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(name, _)| name.clone());
    }
    // A device-level failure is the infrastructure's, not the job's: `--resume` reruns it.
    if entry.device_error.is_some() && matches!(state, EntryState::Failed | EntryState::TimedOut) {
        state = EntryState::Crashed;
    }
    entry.state = state;
}

/// How bad a pass's state is, to pick the job's from several passes.
fn severity(state: EntryState) -> u8 {
    match state {
        EntryState::Succeeded => 0,
        EntryState::Failed => 1,
        EntryState::TimedOut => 2,
        EntryState::Crashed | EntryState::Lost => 3,
        EntryState::Cancelled => 4,
        EntryState::Pending | EntryState::Running | EntryState::Skipped => 5,
    }
}

/// The lines a device failure would show in: the run's errors and each step's captured
/// stderr and stdout (head and tail, as kept in memory).
fn failure_lines(run: &ProfileRun) -> Vec<String> {
    let streams = run.steps.iter().flat_map(|s| &s.attempts).flat_map(|a| {
        [&a.stderr, &a.stdout]
            .into_iter()
            .flat_map(|c| c.head.iter().chain(&c.tail))
            .cloned()
    });
    // Errors through their text: the run's error type may carry more than a string.
    run.errors
        .iter()
        .map(|e| e.to_string())
        .chain(streams)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_ending(outcome: Option<Outcome>, errors: &[&str]) -> ProfileRun {
        let mut run = ProfileRun::new("x", "none", &[], Path::new("x"));
        run.outcome = outcome;
        run.errors = errors
            .iter()
            .map(|e| crate::model::RunError::new(crate::model::ErrorKind::Unknown, *e))
            .collect();
        run
    }

    #[test]
    fn states_follow_the_outcome_and_errors() {
        use EntryState::*;
        let cases = [
            (Some(Outcome::Exited { code: 0 }), vec![], Succeeded),
            (Some(Outcome::Exited { code: 0 }), vec!["no data"], Crashed),
            (Some(Outcome::Exited { code: 2 }), vec![], Failed),
            (Some(Outcome::Signalled { signal: 11 }), vec![], Failed),
            (Some(Outcome::Signalled { signal: 15 }), vec![], Cancelled),
            (Some(Outcome::Signalled { signal: 9 }), vec![], Cancelled),
            (
                Some(Outcome::SupervisorKilled { signal: 9 }),
                vec![],
                Cancelled,
            ),
            (
                Some(Outcome::SupervisorKilled { signal: 6 }),
                vec![],
                Failed,
            ),
            (Some(Outcome::TimedOut { after_s: 1.0 }), vec![], TimedOut),
            (Some(Outcome::Inactive { after_s: 1.0 }), vec![], TimedOut),
            (Some(Outcome::Cancelled), vec![], Cancelled),
            (None, vec!["profiler `ncu` is unavailable"], Crashed),
        ];
        for (outcome, errors, want) in cases {
            assert_eq!(
                state_of(&run_ending(outcome.clone(), &errors)),
                want,
                "{outcome:?}"
            );
        }
        assert!(retryable(Failed) && retryable(Crashed) && !retryable(Cancelled));
    }

    #[tokio::test]
    async fn a_none_job_runs_into_its_directory_and_writes_its_entry() {
        let root = tempfile::tempdir().unwrap();
        let mut spec = JobSpec::new("j1", vec!["sh".into(), "-c".into(), "echo hi".into()]);
        spec.labels.insert("k".into(), "v".into());
        let entry = run_task(&spec, root.path(), None, &TaskOptions::default()).await;
        assert_eq!(entry.state, EntryState::Succeeded, "{:?}", entry.errors);
        assert_eq!(entry.attempts, 1);
        assert_eq!(entry.run_dir, "runs/j1");
        assert_eq!(entry.labels["k"], "v");
        let back = BatchEntry::read(&root.path().join("runs/j1")).unwrap();
        assert_eq!(back, entry);
        assert!(ProfileRun::read(&root.path().join("runs/j1")).is_ok());
    }

    /// scancel's SIGTERM reaches the command and polyprof together; the shell's 143 may be seen
    /// before polyprof's handler cancels. Cancelled shortly after the exit: cut off, not failed.
    /// Never cancelled: a 143 of the command's own is a failure.
    #[tokio::test]
    async fn a_shell_cut_off_by_the_schedulers_sigterm_is_cancelled_not_failed() {
        let root = tempfile::tempdir().unwrap();
        let marker = root.path().join("exited");
        let script = format!("touch '{}'; exit 143", marker.display());
        let spec = JobSpec::new("t", vec!["sh".into(), "-c".into(), script]);
        let opts = TaskOptions::default();
        let cancel = opts.run.cancel.clone();
        let watched = marker.clone();
        let canceller = tokio::spawn(async move {
            while !watched.exists() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(60)).await;
            cancel.cancel();
        });
        let entry = run_task(&spec, root.path(), None, &opts).await;
        canceller.await.unwrap();
        assert_eq!(entry.state, EntryState::Cancelled, "{:?}", entry.outcome);
        let own = JobSpec::new("own", vec!["sh".into(), "-c".into(), "exit 143".into()]);
        let entry = run_task(&own, root.path(), None, &TaskOptions::default()).await;
        assert_eq!(entry.state, EntryState::Failed);
    }

    #[tokio::test]
    async fn a_failing_job_is_retried_then_recorded() {
        let root = tempfile::tempdir().unwrap();
        let mut spec = JobSpec::new("f", vec!["sh".into(), "-c".into(), "exit 3".into()]);
        spec.retries = Some(2);
        let entry = run_task(&spec, root.path(), None, &TaskOptions::default()).await;
        assert_eq!(entry.state, EntryState::Failed);
        assert_eq!(entry.attempts, 3);
        assert_eq!(entry.exit_code, Some(3));
        assert!(
            entry.errors[0].starts_with("attempt 1 failed"),
            "{:?}",
            entry.errors
        );
    }

    #[tokio::test]
    async fn the_device_is_pinned_and_its_failures_recognized() {
        let root = tempfile::tempdir().unwrap();
        let spec = JobSpec::new(
            "d",
            vec![
                "sh".into(),
                "-c".into(),
                "echo \"saw $CUDA_VISIBLE_DEVICES\"; echo 'CUDA_ERROR_NO_DEVICE' >&2; exit 1"
                    .into(),
            ],
        );
        let device = Device::gpu(crate::profilers::registry::Vendor::Nvidia, "1", None);
        let opts = TaskOptions {
            retries: 3,
            stop_on_device_error: true,
            ..TaskOptions::default()
        };
        let entry = run_task(&spec, root.path(), Some(&device), &opts).await;
        assert_eq!(entry.device.as_deref(), Some("nvidia:1"));
        assert_eq!(entry.attempts, 1, "no retry on the same bad device");
        assert_eq!(entry.state, EntryState::Crashed);
        assert_eq!(entry.device_error.as_deref(), Some("CUDA_ERROR_NO_DEVICE"));
        let run = ProfileRun::read(&root.path().join("runs/d")).unwrap();
        let out = &run.steps[0].attempts[0].stdout.head;
        assert_eq!(out, &["saw 1"]);
    }
}
