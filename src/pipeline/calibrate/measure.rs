//! The calibration's two ncu passes through polyprof's own pipeline ([`profile`]): the launch
//! floor (the empty kernel's launches, their duration only: one replay pass each) and the
//! counters (each known-work kernel once, with the metrics the checks read). Clocks are left as
//! the GPU runs them (`--clock-control none`, as the eval's passes run) and caches are flushed
//! before every kernel (`--cache-control all`), so the copy's reads come from DRAM.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::error::CalibrateError;
use crate::model::run::ProfileRun;
use crate::pipeline::job::{Job, profile};
use crate::profilers::ncu::options::{
    ClockControl, DRAM_CLOCK, DRAM_READ, DRAM_WRITE, DURATION, FP16_OPS, FP32_OPS, FP64_OPS,
    HFMA2_MMA_INST, NcuOptions, Preset, SM_CLOCK, TENSOR_BF16_OPS, TENSOR_FP8_OPS, TENSOR_FP16_OPS,
    TENSOR_TF32_OPS,
};
use crate::results::calibration_kernels::{CalibrationKernel, KernelKind};

/// The passes' run directories in the work directory.
pub const FLOOR_RUN: &str = "floor";
pub const COUNTERS_RUN: &str = "counters";

/// One pass may take this long (ncu replays each kernel about a dozen times; the copy moves
/// gigabytes per replay and ncu restores its memory between them).
const PASS_TIMEOUT: Duration = Duration::from_secs(900);

/// The metrics of the counters pass: time, DRAM bytes, the SASS FLOP counters, the clocks, and
/// the tensor op counters of the precisions `plan` exercises. `HFMA2.MMA` instructions (which
/// polyprof excludes from FP16 FLOPs) are counted where the metric is known to exist (Hopper).
pub fn counter_metrics(compute_capability: (u32, u32), plan: &[CalibrationKernel]) -> Vec<String> {
    let mut metrics: Vec<&str> = vec![DURATION, DRAM_READ, DRAM_WRITE, SM_CLOCK, DRAM_CLOCK];
    metrics.extend(FP32_OPS.iter().chain(&FP16_OPS).chain(&FP64_OPS));
    for kernel in plan {
        let tensor = match kernel.kernel {
            KernelKind::MmaFp16 => TENSOR_FP16_OPS,
            KernelKind::MmaBf16 => TENSOR_BF16_OPS,
            KernelKind::MmaTf32 => TENSOR_TF32_OPS,
            KernelKind::MmaFp8 | KernelKind::WgmmaFp8 => TENSOR_FP8_OPS,
            _ => continue,
        };
        if !metrics.contains(&tensor) {
            metrics.push(tensor);
        }
    }
    if compute_capability == (9, 0) {
        metrics.push(HFMA2_MMA_INST);
    }
    metrics.into_iter().map(str::to_string).collect()
}

/// The ncu job that runs `program` with `kernels` into `dir`, collecting `metrics`.
pub fn pass_job(
    program: &Path,
    kernels: &[CalibrationKernel],
    dir: PathBuf,
    metrics: Vec<String>,
    env: &BTreeMap<String, String>,
    cancel: &CancellationToken,
) -> Job {
    let mut target = vec![program.as_os_str().into()];
    target.extend(kernels.iter().flat_map(|k| k.args()).map(Into::into));
    let mut job = Job::new(target, dir);
    job.profiler = "ncu".into();
    job.settings.ncu = NcuOptions {
        preset: Preset::Metrics(metrics),
        clock_control: ClockControl::None,
        extra_args: vec!["--cache-control".into(), "all".into()],
        ..NcuOptions::default()
    };
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
    fn the_counters_pass_collects_what_the_checks_read_and_no_more() {
        let hopper = counter_metrics((9, 0), &plan((9, 0)));
        for name in [
            DURATION,
            DRAM_READ,
            DRAM_WRITE,
            SM_CLOCK,
            DRAM_CLOCK,
            TENSOR_FP16_OPS,
            TENSOR_BF16_OPS,
            TENSOR_TF32_OPS,
            TENSOR_FP8_OPS,
            HFMA2_MMA_INST,
        ] {
            assert!(hopper.iter().any(|m| m == name), "{name}");
        }
        assert_eq!(hopper.len(), 5 + 9 + 4 + 1);
        // Before Ada no FP8 counter (ncu would refuse the name), before Ampere no tensor one.
        let ampere = counter_metrics((8, 0), &plan((8, 0)));
        assert!(
            !ampere
                .iter()
                .any(|m| m == TENSOR_FP8_OPS || m == HFMA2_MMA_INST)
        );
        let volta = counter_metrics((7, 0), &plan((7, 0)));
        assert_eq!(volta.len(), 5 + 9);
    }

    #[test]
    fn a_pass_runs_the_program_under_ncu_with_clocks_free_and_caches_flushed() {
        let env = BTreeMap::from([("CUDA_VISIBLE_DEVICES".to_string(), "GPU-1".to_string())]);
        let job = pass_job(
            Path::new("/tmp/calibrate"),
            &[floor_kernel()],
            PathBuf::from("work/floor"),
            vec![DURATION.to_string()],
            &env,
            &CancellationToken::new(),
        );
        let argv: Vec<String> = job.target.iter().map(ToString::to_string).collect();
        assert_eq!(argv, ["/tmp/calibrate", "empty", "51"]);
        assert_eq!(job.profiler, "ncu");
        assert_eq!(job.settings.ncu.clock_control, ClockControl::None);
        assert_eq!(job.settings.ncu.extra_args, ["--cache-control", "all"]);
        assert_eq!(
            job.settings.ncu.validate().map_err(|e| e.to_string()),
            Ok(())
        );
        assert_eq!(job.run.extra_env, env);
    }
}
