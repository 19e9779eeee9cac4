//! The calibration's two profiler passes through polyprof's own pipeline ([`profile`]): the
//! launch floor (the empty kernel's launches, their duration only: one replay pass each) and
//! the counters (each known-work kernel once, with the metrics the checks read). The profiler's
//! calibration capability gives each pass's settings (on ncu: clocks left as the GPU runs them,
//! caches flushed before every kernel, so the copy's reads come from DRAM).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::error::CalibrateError;
use crate::model::run::ProfileRun;
use crate::pipeline::job::{Job, profile};
use crate::profilers::ProfilerSettings;
use crate::profilers::capability::TensorPrecision;
use crate::results::calibration_kernels::{CalibrationKernel, KernelKind};

/// The passes' run directories in the work directory.
pub const FLOOR_RUN: &str = "floor";
pub const COUNTERS_RUN: &str = "counters";

/// One pass may take this long (ncu replays each kernel about a dozen times; the copy moves
/// gigabytes per replay and ncu restores its memory between them).
const PASS_TIMEOUT: Duration = Duration::from_secs(900);

/// The tensor-core precisions `plan` exercises (the counters pass collects their op counters).
pub fn precisions(plan: &[CalibrationKernel]) -> Vec<TensorPrecision> {
    let mut found: Vec<TensorPrecision> = plan
        .iter()
        .filter_map(|kernel| match kernel.kernel {
            KernelKind::MmaFp16 => Some(TensorPrecision::Fp16),
            KernelKind::MmaBf16 => Some(TensorPrecision::Bf16),
            KernelKind::MmaTf32 => Some(TensorPrecision::Tf32),
            KernelKind::MmaFp8 | KernelKind::WgmmaFp8 => Some(TensorPrecision::Fp8),
            _ => None,
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The job that runs `program` with `kernels` into `dir` under `profiler` with `settings` (the
/// calibration capability's pass settings).
pub fn pass_job(
    profiler: &str,
    settings: ProfilerSettings,
    program: &Path,
    kernels: &[CalibrationKernel],
    dir: PathBuf,
    env: &BTreeMap<String, String>,
    cancel: &CancellationToken,
) -> Job {
    let mut target = vec![program.as_os_str().into()];
    target.extend(kernels.iter().flat_map(|k| k.args()).map(Into::into));
    let mut job = Job::new(target, dir);
    job.profiler = profiler.to_string();
    job.settings = settings;
    job.call_path = vec!["calibrate".into()];
    job.run.extra_env = env.clone();
    job.run.cancel = cancel.clone();
    job.run.timeout = Some(PASS_TIMEOUT);
    job
}

/// Run one pass; its run document when the program ran to its end and ncu's output was read.
pub async fn run_pass(pass: &'static str, job: &Job) -> Result<ProfileRun, CalibrateError> {
    let run = profile(job).await;
    if job.run.cancel.is_cancelled() {
        return Err(CalibrateError::Cancelled);
    }
    match failure(pass, &run) {
        Some(error) => Err(error),
        None => Ok(run),
    }
}

/// Run a pass that may fail part way: the run, and why it failed when it did. Only a pass that
/// recorded no kernel at all is an error.
pub async fn run_partial_pass(
    pass: &'static str,
    job: &Job,
) -> Result<(ProfileRun, Option<CalibrateError>), CalibrateError> {
    let run = profile(job).await;
    if job.run.cancel.is_cancelled() {
        return Err(CalibrateError::Cancelled);
    }
    match failure(pass, &run) {
        Some(error) if run.kernels.is_empty() => Err(error),
        failed => Ok((run, failed)),
    }
}

/// Why a pass's run did not succeed (the program's own end first, then the run's errors).
fn failure(pass: &'static str, run: &ProfileRun) -> Option<CalibrateError> {
    if run.succeeded() {
        return None;
    }
    let mut errors: Vec<String> = run.errors.iter().map(ToString::to_string).collect();
    if let Some(outcome) = run.outcome.as_ref().filter(|o| !o.is_success()) {
        errors.insert(0, format!("the program ended with {outcome:?}"));
    }
    if errors.is_empty() {
        errors.push("nothing ran".into());
    }
    Some(CalibrateError::Profile {
        pass,
        errors: errors.join("; "),
        run_dir: run.output_dir.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profilers::capability::Capability;
    use crate::profilers::registry;
    use crate::results::calibration_kernels::{DeviceFacts, floor_kernel, work_kernels};

    fn plan(cc: (u32, u32)) -> Vec<CalibrationKernel> {
        work_kernels(&DeviceFacts {
            compute_capability: cc,
            sm_count: 132,
            l2_bytes: 50 << 20,
            memory_bytes: 140 << 30,
        })
    }

    #[test]
    fn the_plan_names_the_precisions_whose_counters_the_checks_read() {
        use TensorPrecision::*;
        assert_eq!(precisions(&plan((9, 0))), [Fp16, Bf16, Tf32, Fp8]);
        // Before Ada no FP8 kernel, before Ampere no tensor kernel at all.
        assert!(!precisions(&plan((8, 0))).contains(&Fp8));
        assert!(precisions(&plan((7, 0))).is_empty());
    }

    #[test]
    fn a_pass_runs_the_program_under_the_profiler_with_the_capabilitys_settings() {
        let calibration = registry::capability("ncu", Capability::Calibration, |c| c.calibration)
            .unwrap()
            .unwrap();
        let env = BTreeMap::from([("CUDA_VISIBLE_DEVICES".to_string(), "GPU-1".to_string())]);
        let settings = calibration.pass_settings(vec![calibration.duration_metric().to_string()]);
        let job = pass_job(
            "ncu",
            settings.clone(),
            Path::new("/tmp/calibrate"),
            &[floor_kernel()],
            PathBuf::from("work/floor"),
            &env,
            &CancellationToken::new(),
        );
        let argv: Vec<String> = job.target.iter().map(ToString::to_string).collect();
        assert_eq!(argv, ["/tmp/calibrate", "empty", "51"]);
        assert_eq!(job.profiler, "ncu");
        assert_eq!(job.settings, settings);
        assert_eq!(job.run.extra_env, env);
    }
}
