//! The build stage (docs/eval-harness.md, "The build stage"): before its judged turn, the
//! candidate is imported alone in a sandboxed build worker that sees no device, with the GPU's
//! architecture given, so an inline extension's compiler runs on the CPU while the GPU judges
//! others. Its products stay in a build folder of its own, which only the same candidate's
//! judged workers read later. A build that fails is the verdict: no judged turn.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{Instant, SystemTime};

use crate::eval::evidence::{BuildEvidence, Failure, FailureKind, Stage};
use crate::model::outcome::Outcome;
use crate::model::run::ProfileRun;
use crate::pipeline::eval::build_dir::{BuildDir, Listing, listing};
use crate::pipeline::eval::confine::CandidateSandbox;
use crate::pipeline::eval::failure::ended_as;
use crate::pipeline::eval::spec::{Device, EvalSpec};
use crate::pipeline::eval::worker::{self, Launch, Role, StartError};
use crate::profilers::ProfilerSettings;

/// The GPU runtimes' visibility variables, each set empty for the build worker: no device.
const HIDE_DEVICES: [&str; 3] = [
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
];

/// Words of an import that failed only because it wanted a GPU (module-level device work):
/// such a candidate is built in its judged turn instead, as before the build stage.
const NEEDED_A_DEVICE: [&str; 5] = [
    "No CUDA GPUs are available",
    "Found no NVIDIA driver",
    "no CUDA-capable device",
    "CUDA driver initialization failed",
    "No HIP GPUs are available",
];

/// The build worker's first line on stderr, written before it imports anything of the
/// candidate's (`BUILD_STARTED` in the worker script).
const STARTED: &str = "polyprof build worker: started";

/// Lines of the build log's tail quoted in the failure.
const TAIL_LINES: usize = 20;

/// A candidate's finished build stage.
#[derive(Debug)]
pub struct Built {
    pub dir: BuildDir,
    pub evidence: BuildEvidence,
    /// The build failed: the eval's failure, and no judged turn.
    pub failure: Option<Failure>,
    after_build: Listing,
}

impl Built {
    /// Whether the build folder is still as the build left it (read by polyprof after the
    /// judged import).
    pub fn unchanged(&self) -> bool {
        listing(self.dir.path()) == self.after_build
    }
}

/// What the build worker is started with.
pub struct BuildLaunch<'a> {
    pub spec: &'a EvalSpec,
    /// The eval directory (its `build.000` run directory goes there).
    pub eval_dir: &'a Path,
    pub script: &'a Path,
    /// The candidate's file, absolute.
    pub candidate: &'a Path,
    pub sandbox: Option<CandidateSandbox>,
    /// It runs ahead of the judged turn (beside other work).
    pub ahead: bool,
}

/// Run the candidate's build stage. `Err` only when its folder cannot be made.
pub async fn run(launch: BuildLaunch<'_>) -> std::result::Result<Built, Failure> {
    let spec = launch.spec;
    let dir = BuildDir::create().map_err(|e| Failure {
        stage: Stage::Build,
        kind: FailureKind::Harness,
        message: format!("cannot create the candidate's build folder: {e}"),
        log: None,
    })?;
    let arch = arch_list(spec).await;
    let mut extra_env = spec.extra_env.clone();
    for name in HIDE_DEVICES {
        extra_env.insert(name.to_string(), String::new());
    }
    if let Some(arch) = &arch {
        extra_env.insert("TORCH_CUDA_ARCH_LIST".to_string(), arch.clone());
    }
    let worker = Launch {
        role: Role::Build,
        python: spec.python.clone(),
        script: launch.script.to_path_buf(),
        source: launch.candidate.to_path_buf(),
        device: spec.device.as_str(),
        eval_dir: launch.eval_dir.to_path_buf(),
        profiler: "none".to_string(),
        settings: ProfilerSettings::default(),
        tracking: spec.tracking.clone(),
        extra_env,
        cancel: spec.cancel.clone(),
        kill_now: spec.kill_now.clone(),
        connect_timeout: spec.options.setup_timeout,
        sandbox: launch.sandbox,
        build_dir: Some(dir.path().to_path_buf()),
        trace: None,
        bystanders: None,
    };
    let started_at = now();
    let clock = Instant::now();
    let ran = worker.run_to_end().await;
    let seconds = clock.elapsed().as_secs_f64();
    let ended_at = now();
    let after_build = listing(dir.path());
    let mut evidence = BuildEvidence {
        run_dir: Role::Build.dir_name(),
        devices: "none".to_string(),
        arch,
        started_at,
        ended_at,
        seconds,
        ahead: launch.ahead,
        files: u32::try_from(after_build.len()).unwrap_or(u32::MAX),
        reused: None,
        note: None,
    };
    let failure = match ran {
        Ok(run) => judge_build(spec, &run, launch.eval_dir, &mut evidence),
        Err(StartError::Setup(why)) => Some(Failure {
            stage: Stage::Build,
            kind: FailureKind::Harness,
            message: format!("cannot start the build worker: {why}"),
            log: None,
        }),
        // Only a worker that must connect ends these ways.
        Err(StartError::Ended(run) | StartError::Timeout(run) | StartError::Cancelled(run)) => {
            judge_build(spec, &run, launch.eval_dir, &mut evidence)
        }
    };
    Ok(Built {
        dir,
        evidence,
        failure,
        after_build,
    })
}

/// The build's failure from how its process ended (nothing it said counts): exit 0 built;
/// a process that never started, or a cancel, is polyprof's failure; anything else the
/// candidate's, with the log's tail, unless it only wanted a GPU.
fn judge_build(
    spec: &EvalSpec,
    run: &ProfileRun,
    eval_dir: &Path,
    evidence: &mut BuildEvidence,
) -> Option<Failure> {
    let tail = worker::stderr_tail(run, TAIL_LINES);
    let ending = ended_as(run);
    let (kind, message) = match classify(
        run.outcome.as_ref(),
        started(run),
        &tail,
        spec.device,
        &ending,
    ) {
        BuildEnd::Built => return None,
        BuildEnd::WantedDevice => {
            evidence.note = Some(
                "the import wanted a GPU (module-level device work): the candidate is built in its judged turn instead"
                    .to_string(),
            );
            return None;
        }
        BuildEnd::Failed(kind, message) => (kind, message),
    };
    evidence.note = Some(match kind {
        FailureKind::Harness => "not built: polyprof's failure".to_string(),
        _ => "failed: the judged turn never began".to_string(),
    });
    Some(Failure {
        stage: Stage::Build,
        kind,
        message,
        log: worker::stderr_log(run, eval_dir),
    })
}

/// What the end of a build worker means.
#[derive(Debug, PartialEq)]
enum BuildEnd {
    Built,
    /// Its import failed only for want of a GPU: built in the judged turn instead.
    WantedDevice,
    Failed(FailureKind, String),
}

/// The meaning of a build worker's end: its `outcome`, whether its script `started` (its first
/// line), its log's `tail`, the eval's device, how it `ended` in words.
fn classify(
    outcome: Option<&Outcome>,
    started: bool,
    tail: &str,
    device: Device,
    ended: &str,
) -> BuildEnd {
    let with_tail = |message: String| {
        if tail.trim().is_empty() {
            message
        } else {
            format!("{message}; the build log's last lines:\n{tail}")
        }
    };
    let failed = |message: String| BuildEnd::Failed(FailureKind::BuildFailed, with_tail(message));
    match outcome {
        Some(outcome) if outcome.is_success() => BuildEnd::Built,
        Some(Outcome::SpawnFailed { error, .. }) => BuildEnd::Failed(
            FailureKind::Harness,
            format!(
                "cannot start the build worker: {error}; give the Python interpreter with --python (or $POLYPROF_PYTHON)"
            ),
        ),
        None | Some(Outcome::Cancelled) => BuildEnd::Failed(
            FailureKind::Harness,
            "the eval was cancelled during the candidate's build".to_string(),
        ),
        Some(Outcome::TimedOut { after_s }) => failed(format!(
            "the candidate's build (its import with no device visible) did not finish within {after_s:.0} s and was killed"
        )),
        // Its script never ran (no such interpreter, a sandbox that could not be set up): no
        // candidate code ran either. The candidate cannot remove a line written before it.
        Some(_) if !started => BuildEnd::Failed(
            FailureKind::Harness,
            format!(
                "the build worker did not start: its process {ended}; its output:\n{tail}\n(is the Python interpreter right? give it with --python or $POLYPROF_PYTHON)"
            ),
        ),
        Some(_) if device == Device::Cuda && NEEDED_A_DEVICE.iter().any(|w| tail.contains(w)) => {
            BuildEnd::WantedDevice
        }
        Some(_) => failed(format!(
            "the candidate's build (its import with no device visible) failed: the build worker {ended}"
        )),
    }
}

/// Whether the worker script wrote its first line (the interpreter ran it).
fn started(run: &ProfileRun) -> bool {
    run.steps
        .iter()
        .rev()
        .find_map(|s| s.attempts.last())
        .is_some_and(|a| a.stderr.head.first().is_some_and(|l| l.trim() == STARTED))
}

/// `TORCH_CUDA_ARCH_LIST` for the build: the user's own, else the eval's GPU's compute
/// capability (`MAJOR.MINOR`) from the vendor's device tool; `None` on the CPU or when the GPU
/// cannot be identified (torch then builds for every architecture it knows).
async fn arch_list(spec: &EvalSpec) -> Option<String> {
    let vendor = spec.device.vendor()?;
    if let Some(own) = std::env::var("TORCH_CUDA_ARCH_LIST")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        return Some(own);
    }
    let device = spec
        .extra_env
        .get("CUDA_VISIBLE_DEVICES")
        .and_then(|v| v.split(',').next())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .or_else(crate::pipeline::calibrate::visible_device);
    let key = device.clone().unwrap_or_default();
    static KNOWN: OnceLock<Mutex<BTreeMap<String, Option<String>>>> = OnceLock::new();
    let known = KNOWN.get_or_init(Default::default);
    if let Some(arch) = known.lock().ok().and_then(|k| k.get(&key).cloned()) {
        return arch;
    }
    let tool = crate::profilers::device_tools::for_vendor(vendor)?;
    let program = which::which(tool.tool().program).ok()?;
    let arch = crate::pipeline::calibrate::device::identify(
        tool,
        &program,
        device.as_deref(),
        &spec.cancel,
    )
    .await
    .ok()
    .and_then(|gpu| gpu.compute_capability)
    .map(|(major, minor)| format!("{major}.{minor}"));
    if let Ok(mut known) = known.lock() {
        known.insert(key, arch.clone());
    }
    arch
}

/// Now, as RFC 3339 (UTC, nanoseconds): build and judged spans compare as text.
pub fn now() -> String {
    humantime::format_rfc3339_nanos(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(end: &BuildEnd) -> Option<FailureKind> {
        match end {
            BuildEnd::Failed(kind, _) => Some(*kind),
            _ => None,
        }
    }

    #[test]
    fn a_build_is_judged_by_how_its_process_ended_and_who_ran() {
        let exited = |code| Some(Outcome::Exited { code });
        let cpu = Device::Cpu;
        assert_eq!(
            classify(exited(0).as_ref(), true, "", cpu, "x"),
            BuildEnd::Built
        );
        // The candidate's import or compiler failed: its fault, its log's tail quoted.
        let end = classify(
            exited(4).as_ref(),
            true,
            "error: undeclared",
            cpu,
            "exited with status 4",
        );
        assert_eq!(kind(&end), Some(FailureKind::BuildFailed));
        let BuildEnd::Failed(_, message) = end else {
            unreachable!()
        };
        assert!(
            message.contains("status 4") && message.ends_with("error: undeclared"),
            "{message}"
        );
        let timed_out = Some(Outcome::TimedOut { after_s: 600.0 });
        assert_eq!(
            kind(&classify(timed_out.as_ref(), true, "", cpu, "x")),
            Some(FailureKind::BuildFailed)
        );
        // Nothing of the candidate's ran: polyprof's failure, whatever the status.
        for (outcome, started) in [
            (exited(125), false),
            (Some(Outcome::Cancelled), true),
            (None, false),
            (
                Some(Outcome::SpawnFailed {
                    error: "no such file".into(),
                    errno: Some(2),
                }),
                false,
            ),
        ] {
            let end = classify(outcome.as_ref(), started, "", cpu, "x");
            assert_eq!(kind(&end), Some(FailureKind::Harness), "{outcome:?}");
        }
        // An import that only wanted a GPU is built in its judged turn, on CUDA only.
        let tail = "RuntimeError: No CUDA GPUs are available";
        assert_eq!(
            classify(exited(4).as_ref(), true, tail, Device::Cuda, "x"),
            BuildEnd::WantedDevice
        );
        assert_eq!(
            kind(&classify(exited(4).as_ref(), true, tail, cpu, "x")),
            Some(FailureKind::BuildFailed)
        );
    }
}
