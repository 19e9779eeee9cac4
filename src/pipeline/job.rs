//! One profiler pass over a target, end to end: `profile(job)` plans with the profiler, runs the
//! plan under supervision, reads the profiler's output and writes `run.json`. It never panics and
//! never loses what was captured: every failure lands in the returned run's `errors`.

use std::path::PathBuf;

use crate::model::arg::Arg;
use crate::model::error::Error;
use crate::model::outcome::Outcome;
use crate::model::run::{ErrorKind, ProfileRun, RunError, StepRun};
use crate::pipeline::artifacts;
use crate::pipeline::executor::execute_plan;
use crate::pipeline::probe::HostProbe;
use crate::pipeline::profiler::Profiler;
use crate::pipeline::rundir::{self, ClaimedDir};
use crate::pipeline::runner::RunOptions;
use crate::pipeline::target::ExecutionTarget;
use crate::profilers::{self, Backend, Plan, ProfilerSettings};

/// What to profile and how.
#[derive(Debug, Clone)]
pub struct Job {
    /// The target argv, exactly as given (bytes: see [`Arg`]).
    pub target: Vec<Arg>,
    /// Profiler name; `none` runs the target as is.
    pub profiler: String,
    pub settings: ProfilerSettings,
    /// Where logs, profiler output and `run.json` go (created if missing).
    pub output_dir: PathBuf,
    /// Defaults to the output directory's name.
    pub label: Option<String>,
    /// Timeouts, environment policy, cancellation, line sink, limits. The end marker and graces
    /// come from the plan's steps (set them through `settings`).
    pub run: RunOptions,
    /// The job's own call-path frames (outermost first) that the kernels are placed under;
    /// empty: one frame named after the target command.
    pub call_path: Vec<String>,
    /// Profile each kernel fingerprint once and serve repeats from the profile cache (profilers
    /// with a fingerprint pass: ncu); `None`: profile every launch the settings select.
    pub profile_cache: Option<crate::pipeline::profile_cache::ProfileCacheOptions>,
}

impl Job {
    pub fn new(target: Vec<Arg>, output_dir: impl Into<PathBuf>) -> Self {
        Job {
            target,
            profiler: "none".to_string(),
            settings: ProfilerSettings::default(),
            output_dir: output_dir.into(),
            label: None,
            run: RunOptions::default(),
            call_path: Vec::new(),
            profile_cache: None,
        }
    }
}

/// The name of a pass's run directory and its label: `<profiler>.<NNN>` (`ncu.000`).
pub fn pass_label(profiler: &str, index: u32) -> String {
    format!("{profiler}.{index:03}")
}

/// The step whose outcome is the run's: the last step that runs the target (its argv ends with
/// the target's), else the first step.
pub fn main_step_index(plan: &Plan) -> Option<usize> {
    let target = plan.target.as_slice();
    plan.steps
        .iter()
        .rposition(|s| !target.is_empty() && s.command.argv.ends_with(target))
        .or_else(|| (!plan.steps.is_empty()).then_some(0))
}

/// Profile `job` once. Always returns a run document (also written as `run.json` when the
/// output directory is writable).
pub async fn profile(job: &Job) -> ProfileRun {
    profile_on(job, &ExecutionTarget::Local).await
}

/// [`profile`] with the plan's commands run on `target` (local processes or containers). The
/// run goes into the job's output directory, or the next free `<name>.NNN` when that holds a
/// run or another live run holds it ([`rundir::claim_next_free`]).
pub async fn profile_on(job: &Job, target: &ExecutionTarget) -> ProfileRun {
    match rundir::claim_next_free(&job.output_dir) {
        Ok(claimed) => profile_claimed(job, target, &claimed).await,
        Err(e) => {
            let mut run = ProfileRun::new(
                job.label.as_deref().unwrap_or(&job.profiler),
                &job.profiler,
                &job.target,
                &job.output_dir,
            );
            run.errors.push(e.into());
            run
        }
    }
}

/// [`profile_on`] into a run directory the caller has claimed (the job's `output_dir` is
/// replaced by `claimed.dir`); the claim is held until the caller drops it.
pub async fn profile_claimed(
    job: &Job,
    target: &ExecutionTarget,
    claimed: &ClaimedDir,
) -> ProfileRun {
    let job = &Job {
        output_dir: claimed.dir.clone(),
        ..job.clone()
    };
    let label = job.label.clone().unwrap_or_else(|| {
        job.output_dir
            .file_name()
            .and_then(|n| n.to_str())
            .map_or_else(|| job.profiler.clone(), str::to_string)
    });
    let mut run = ProfileRun::new(&label, &job.profiler, &job.target, &job.output_dir);
    run.env_policy = job.run.env_policy.to_string();
    if let Err(e) = std::fs::create_dir_all(&job.output_dir) {
        run.errors
            .push(Error::io("create output directory", &job.output_dir, e).into());
        return run;
    }
    // The profiler's code runs on its own task so that a bug there (a panic) still ends in a
    // run document; the captured output stays in the logs on disk. Boxed before it is spawned:
    // the pass is a future of tens of KiB, and each stack frame it was moved through by value
    // was probed page by page (11 page faults per run).
    let pass = {
        let (job, mut run, target) = (job.clone(), run.clone(), target.clone());
        tokio::spawn(Box::pin(async move {
            run_pass(&job, &mut run, &target).await;
            run
        }))
    };
    match pass.await {
        Ok(done) => run = done,
        Err(e) => run.fail(
            ErrorKind::Internal,
            format!(
                "internal error while running the pass (the logs in {} are kept): {e}",
                job.output_dir.display()
            ),
        ),
    }
    match run.write(&job.output_dir) {
        Ok(path) => tracing::debug!(path = %path.display(), "wrote the run document"),
        Err(e) => run.errors.push(e.into()),
    }
    run
}

async fn run_pass(job: &Job, run: &mut ProfileRun, target: &ExecutionTarget) {
    let dir = job.output_dir.as_path();
    let mut profiler: std::sync::Arc<dyn Backend> =
        match profilers::create(&job.profiler, dir, &job.settings) {
            Ok(p) => p.into(),
            Err(e) => return run.errors.push(e.into()),
        };
    run.profiler.name = profiler.name().to_string();
    // Preflight probes the machine (version commands, /proc files): keep it off the async
    // workers. Its probes stop when the run is cancelled. A backend that probes nothing is
    // judged here (no blocking-pool thread started per run for it).
    let preflight = if profiler.preflight_probes_host() {
        let profiler = profiler.clone();
        let probe = HostProbe::with_cancel(job.run.cancel.clone());
        tokio::task::spawn_blocking(move || profiler.check_availability(&probe)).await
    } else {
        Ok(profiler.check_availability(&HostProbe::with_cancel(job.run.cancel.clone())))
    };
    match preflight {
        Ok(preflight) => {
            tracing::debug!(
                profiler = profiler.name(),
                version = preflight.version.as_deref().unwrap_or("unknown"),
                unavailable = preflight.reason.as_deref().unwrap_or("no"),
                "preflight answered"
            );
            run.profiler.version = preflight.version.clone();
            if let (Some(reason), ExecutionTarget::Container(c)) = (&preflight.reason, target) {
                // The preflight probes this host; the profiler runs in the image.
                run.warnings.push(format!(
                    "preflight (on the host, not in image `{}`): {reason}; running in the container anyway",
                    c.image
                ));
            } else if let Some(reason) = preflight.reason {
                let error = Error::ProfilerUnavailable {
                    profiler: profiler.name().to_string(),
                    reason,
                };
                return run.errors.push(error.into());
            }
        }
        Err(e) => {
            return run.fail(
                ErrorKind::Internal,
                format!("preflight of {} failed: {e}", job.profiler),
            );
        }
    }
    let mut once = None;
    let mut fingerprint_step = None;
    if job.profile_cache.is_some() {
        match profile_once_first(job, run, &profiler, target).await {
            Ahead::Profile(prepared, settings) => {
                fingerprint_step = Some(prepared.pass.step.clone());
                match profilers::create(&job.profiler, dir, &settings) {
                    Ok(p) => profiler = p.into(),
                    Err(e) => return run.errors.push(e.into()),
                }
                once = Some(prepared);
            }
            Ahead::AllCached(prepared) => {
                run.outcome = prepared
                    .pass
                    .step
                    .attempts
                    .last()
                    .map(|a| a.outcome.clone());
                run.steps.push(prepared.pass.step.clone());
                crate::pipeline::profile_once::finish(*prepared, run, 0.0);
                crate::results::profile::stamp_call_paths(run, &job.call_path);
                return;
            }
            Ahead::Bypassed(step) => fingerprint_step = step,
        }
    }
    if let Err(e) = profiler.prepare_with(dir, job.run.cancel.clone()).await {
        // A file polyprof could not stage, a previous run in the way or a profiler found
        // unusable keep their kind; anything else failed the profiler's pre-run step.
        let kind = match ErrorKind::of(&e) {
            k @ (ErrorKind::Io | ErrorKind::Usage | ErrorKind::ProfilerUnavailable) => k,
            _ => ErrorKind::Prepare,
        };
        return run.fail(kind, e.to_string());
    }
    let plan = match profiler.wrap(&job.target) {
        Ok(plan) => plan,
        Err(e) => return run.errors.push(e.into()),
    };
    log_plan(&plan, dir);
    run.plan = Some(plan.clone());
    let mut opts = job.run.clone();
    let mut env = profiler.env_vars();
    env.extend(std::mem::take(&mut opts.extra_env));
    opts.extra_env = env;

    let main = main_step_index(&plan);
    run.steps = match target {
        ExecutionTarget::Local => execute_plan(&plan, &opts, dir).await,
        ExecutionTarget::Container(c) => {
            let (steps, container) =
                crate::pipeline::container::execute_plan_in_container(c, &plan, &opts, dir, main)
                    .await;
            run.container = container;
            steps
        }
    };
    summarize_steps(run, main, matches!(target, ExecutionTarget::Container(_)));
    let profile_wall_s = main
        .and_then(|i| run.steps.get(i))
        .and_then(|s| s.attempts.last())
        .map_or(0.0, |a| a.timings.end_s);
    if let Some(step) = fingerprint_step {
        run.steps.insert(0, step);
    }

    match profiler.read_output().await {
        Ok(output) => {
            for artifact in &output.raw.artifacts {
                tracing::debug!(
                    file = %dir.join(&artifact.name).display(),
                    "read the profiler's output"
                );
            }
            tracing::debug!(
                kernels = output.parsed.kernels.len(),
                diagnostics = output.parsed.diagnostics.len(),
                "parsed the profiler's output"
            );
            run.artifacts = output.raw.artifacts;
            run.kernels = output.parsed.kernels;
            run.memory_commands = output.parsed.memory_commands;
            run.diagnostics = output.parsed.diagnostics;
            // An error diagnostic (ncu's LaunchFailed, application_error, a missing requested
            // metric) fails the run like any other error, in run.json and the exit status.
            let diagnosed = run
                .diagnostics
                .iter()
                .filter(|d| d.severity == crate::model::parsed::Severity::Error)
                .map(|d| {
                    RunError::new(ErrorKind::Diagnostic, format!("{}: {}", d.kind, d.message))
                });
            run.errors.extend(diagnosed);
            run.device = output.parsed.device;
            run.session = output.parsed.session;
            if let Some(prepared) = once.take() {
                crate::pipeline::profile_once::finish(*prepared, run, profile_wall_s);
            }
            crate::results::profile::stamp_call_paths(run, &job.call_path);
            run.errors.extend(
                output
                    .errors
                    .into_iter()
                    .map(|e| RunError::new(ErrorKind::ProfilerOutput, e)),
            );
        }
        Err(e) => {
            run.fail(
                ErrorKind::ProfilerOutput,
                format!("reading the profiler's output: {e}"),
            );
            if let Some(prepared) = once.take() {
                // Nothing profiled could be read: nothing is stored or served.
                run.profile_cache = Some(crate::model::profile_cache::ProfileCacheSummary {
                    bypassed: Some("the profiler's output could not be read".to_string()),
                    hits: 0,
                    audited: 0,
                    ..prepared.summary
                });
            }
            // Keep pointers to whatever the profiler wrote; the files stay on disk.
            // Nothing is read into memory (cap 0): the paths and sizes are what the run keeps.
            run.artifacts = artifacts::collect_files(dir, |n| !is_polyprof_file(n), 0)
                .await
                .unwrap_or_default()
                .artifacts;
        }
    }
}

/// What the profile cache decided before the profiler runs.
enum Ahead {
    /// Profile with these (narrowed) settings, then put the records together.
    Profile(
        Box<crate::pipeline::profile_once::Prepared>,
        Box<crate::profilers::ProfilerSettings>,
    ),
    /// Every launch is answered: the profiler need not run.
    AllCached(Box<crate::pipeline::profile_once::Prepared>),
    /// The cache is left out of this run (the run's warnings and `profile_cache` say why);
    /// the fingerprint pass's step when it ran.
    Bypassed(Option<StepRun>),
}

/// The fingerprint pass and the cache's lookups (a profiler with the fingerprint and
/// profile-once capabilities, on this machine only: the pass runs the target here, with the
/// backend's injection library).
async fn profile_once_first(
    job: &Job,
    run: &mut ProfileRun,
    profiler: &std::sync::Arc<dyn Backend>,
    target: &ExecutionTarget,
) -> Ahead {
    let mut bypass = |why: String, step: Option<StepRun>| {
        run.warnings.push(format!("profile cache not used: {why}"));
        run.profile_cache = Some(crate::model::profile_cache::ProfileCacheSummary {
            bypassed: Some(why),
            ..Default::default()
        });
        Ahead::Bypassed(step)
    };
    if !matches!(target, ExecutionTarget::Local) {
        return bypass(
            "the fingerprint pass runs the target on this machine, not in a container".into(),
            None,
        );
    }
    let Some(options) = &job.profile_cache else {
        return Ahead::Bypassed(None);
    };
    let input = crate::pipeline::profile_once::Target {
        profiler: profiler.name(),
        argv: &job.target,
        settings: &job.settings,
        options,
        run: &job.run,
    };
    let prepared = crate::pipeline::profile_once::prepare(
        &input,
        &job.output_dir,
        run.profiler.version.as_deref(),
        profiler.end_marker(),
    )
    .await;
    match prepared {
        Ok(prepared) => match prepared.narrowed.clone() {
            Some(settings) => Ahead::Profile(Box::new(prepared), Box::new(settings)),
            None => Ahead::AllCached(Box::new(prepared)),
        },
        Err((why, step)) => bypass(why, step),
    }
}

/// The plan at debug level, one event per step: what will run, where, with which end marker and
/// graces (the environment it adds at trace level).
fn log_plan(plan: &Plan, dir: &std::path::Path) {
    tracing::debug!(
        profiler = %plan.profiler,
        steps = plan.steps.len(),
        output_dir = %dir.display(),
        "plan"
    );
    for step in &plan.steps {
        let argv: Vec<String> = step.command.argv.iter().map(ToString::to_string).collect();
        tracing::debug!(
            step = %step.name,
            argv = ?argv,
            end_marker = %step.end_marker,
            marker_grace_s = step.graces.marker_grace.as_secs_f64(),
            kill_grace_s = step.graces.kill_grace.as_secs_f64(),
            "plan step"
        );
        tracing::trace!(step = %step.name, env = ?step.command.env, cwd = ?step.command.cwd, "plan step environment");
    }
}

/// Outcome, warnings and errors from the step results. `in_container`: the steps ran in a
/// container, so a step that could not start is the engine's failure.
fn summarize_steps(run: &mut ProfileRun, main: Option<usize>, in_container: bool) {
    let steps: &[StepRun] = &run.steps;
    let ran: Vec<usize> = (0..steps.len())
        .filter(|&i| !steps[i].attempts.is_empty())
        .collect();
    let chosen = main
        .filter(|&i| steps.get(i).is_some_and(|s| !s.attempts.is_empty()))
        .or_else(|| ran.last().copied());
    run.outcome = chosen
        .and_then(|i| steps[i].attempts.last())
        .map(|a| a.outcome.clone());
    let mut warnings = Vec::new();
    let mut errors = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let many = step.attempts.len() > 1;
        for (n, attempt) in step.attempts.iter().enumerate() {
            for w in &attempt.warnings {
                warnings.push(if many {
                    format!("{} (attempt {}): {w}", step.name, n + 1)
                } else {
                    format!("{}: {w}", step.name)
                });
            }
        }
        if step.accepted {
            continue;
        }
        let outcome_says_it = Some(i) == chosen
            && step
                .attempts
                .last()
                .is_some_and(|a| !a.outcome.is_success());
        if !outcome_says_it && let Some(why) = &step.rejection {
            let kind = rejection_kind(step, in_container);
            errors.push(RunError::new(
                kind,
                format!("step `{}` was not accepted: {why}", step.name),
            ));
        }
    }
    run.warnings.extend(warnings);
    run.errors.extend(errors);
}

/// Who failed a step that was not accepted: its last attempt's outcome says, else the step's
/// exit status or validator did.
fn rejection_kind(step: &StepRun, in_container: bool) -> ErrorKind {
    match step.attempts.last().map(|a| &a.outcome) {
        Some(Outcome::SpawnFailed { .. }) if in_container => ErrorKind::Container,
        Some(Outcome::SpawnFailed { .. }) => ErrorKind::Spawn,
        Some(Outcome::TimedOut { .. } | Outcome::Inactive { .. }) => ErrorKind::Timeout,
        Some(Outcome::Cancelled) => ErrorKind::Cancelled,
        _ => ErrorKind::StepRejected,
    }
}

/// Whether `name` is one of polyprof's own files in a run directory (not profiler output).
fn is_polyprof_file(name: &str) -> bool {
    name == crate::model::run::RUN_FILE
        || name.ends_with(".stdout.log")
        || name.ends_with(".stderr.log")
        || name.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::outcome::RunResult;

    fn step(name: &str, outcome: Option<Outcome>, accepted: bool) -> StepRun {
        let attempts = outcome
            .into_iter()
            .map(|outcome| RunResult {
                argv: vec![name.into()],
                outcome,
                pid: None,
                marker: None,
                timings: Default::default(),
                leaked: false,
                killed: Vec::new(),
                stdout: Default::default(),
                stderr: Default::default(),
                warnings: Vec::new(),
            })
            .collect();
        StepRun {
            name: name.to_string(),
            attempts,
            accepted,
            rejection: (!accepted).then(|| "it failed".to_string()),
        }
    }

    #[test]
    fn rejected_steps_say_who_failed() {
        let mut run = ProfileRun::new("x.000", "x", &[], std::path::Path::new("out"));
        run.steps = vec![
            step("profile", Some(Outcome::Exited { code: 0 }), true),
            step("report", Some(Outcome::TimedOut { after_s: 1.0 }), false),
            step(
                "export",
                Some(Outcome::SpawnFailed {
                    error: "no such file".into(),
                    errno: Some(2),
                }),
                false,
            ),
            step("check", Some(Outcome::Exited { code: 0 }), false),
            step("skipped", None, false),
        ];
        summarize_steps(&mut run, Some(0), false);
        let kinds: Vec<ErrorKind> = run.errors.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                ErrorKind::Timeout,
                ErrorKind::Spawn,
                ErrorKind::StepRejected,
                ErrorKind::StepRejected
            ]
        );
        assert_eq!(
            run.errors[0].to_string(),
            "step `report` was not accepted: it failed"
        );
        // In a container, a step that could not start is the engine's failure.
        run.errors.clear();
        summarize_steps(&mut run, Some(0), true);
        assert_eq!(run.errors[1].kind, ErrorKind::Container);
        // The main step's own failure is its outcome, not an error.
        let mut run = ProfileRun::new("x.000", "x", &[], std::path::Path::new("out"));
        run.steps = vec![step("profile", Some(Outcome::Exited { code: 1 }), false)];
        summarize_steps(&mut run, Some(0), false);
        assert!(run.errors.is_empty());
        assert!(!run.succeeded());
    }
}
