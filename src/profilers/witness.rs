//! Witness settings: the cheapest pass of a profiler that still times every kernel launch and
//! records the annotation ranges open on the launching thread. The eval harness runs its
//! candidate under these to check, from outside the candidate's process, what it reports.
//! Beside them, the work settings: the counters of what a call moved and computed (the eval's
//! work pass), collected only inside the calls.

use super::ProfilerSettings;
use super::ncu::options::{
    ClockControl, DRAM_CLOCK, DRAM_READ, DRAM_WRITE, DURATION, FP16_OPS, FP32_OPS, FP64_OPS,
    HFMA2_MMA_INST, Preset, SM_CLOCK, TENSOR_OPS,
};

/// Profilers that can witness an eval: they time every launch and record its ranges.
pub const WITNESS_PROFILERS: [&str; 1] = ["ncu"];

/// The witness settings of `profiler`, or `None` when it cannot witness.
///
/// ncu: `gpu__time_duration.sum` alone (one pass, no replay), NVTX ranges recorded, clocks
/// left as they are (the score time is taken at the clocks the GPU runs at; ncu's base-clock
/// lock made compute kernels 1.29–1.32× slower on the H200).
pub fn witness_settings(profiler: &str) -> Option<ProfilerSettings> {
    match profiler {
        "ncu" => {
            let mut settings = ProfilerSettings::default();
            settings.ncu.preset = Preset::Metrics(vec![super::ncu::options::DURATION.to_string()]);
            settings.ncu.clock_control = ClockControl::None;
            settings.ncu.nvtx = true;
            Some(settings)
        }
        _ => None,
    }
}

/// The clock policy the witness of `profiler` runs under, as the evidence records it: `none`
/// (clocks left as the GPU runs them, like the timing) or `base` (locked); `None` when the
/// profiler does not witness.
pub fn witness_clock_control(profiler: &str) -> Option<&'static str> {
    witness_settings(profiler).map(|settings| settings.ncu.clock_control.as_str())
}

/// The work pass's counters: duration, DRAM bytes read and written, FLOPs per precision (the
/// SASS add/mul/fma counters of FP16, FP32 and FP64, every tensor-pipe source precision, the
/// `HFMA2.MMA` constant moves to take out of FP16), and the SM and DRAM clocks the peaks scale
/// by. No pipe loads, occupancy or launch configuration: every metric group costs replay passes.
/// All tensor precisions stay in: one left out would be a precision a kernel could hide in.
pub fn work_metrics() -> Vec<String> {
    [DURATION, DRAM_READ, DRAM_WRITE]
        .into_iter()
        .chain(FP16_OPS)
        .chain(FP32_OPS)
        .chain(FP64_OPS)
        .chain(TENSOR_OPS)
        .chain([HFMA2_MMA_INST, SM_CLOCK, DRAM_CLOCK])
        .map(str::to_string)
        .collect()
}

/// The work settings of `profiler`, or `None` when it cannot take a work pass.
///
/// ncu: [`work_metrics`]; `--cache-control all` (caches flushed before each kernel and each
/// replay pass, so DRAM reads are first touches of the data, not what an earlier kernel left in
/// L2); clocks left free as in the witness; NVTX recorded; `--profile-from-start off`, so only
/// the windows the worker opens with `cudaProfilerStart`/`cudaProfilerStop` around each call
/// are profiled (setup, warmup, poison and export stay out, and cost no replay). A candidate
/// that stops the profiler inside its call only hides its own work, which the work checks then
/// read as too little work: the choice fails safe. The names are polyprof's own (checked on the
/// H200), so ncu's `--query-metrics` check before the run is skipped.
pub fn work_settings(profiler: &str) -> Option<ProfilerSettings> {
    match profiler {
        "ncu" => {
            let mut settings = ProfilerSettings::default();
            settings.ncu.preset = Preset::Metrics(work_metrics());
            settings.ncu.clock_control = ClockControl::None;
            settings.ncu.nvtx = true;
            settings.ncu.skip_metric_check = true;
            settings.ncu.extra_args = [
                "--cache-control",
                WORK_CACHE_CONTROL,
                "--profile-from-start",
                "off",
            ]
            .map(str::to_string)
            .to_vec();
            Some(settings)
        }
        _ => None,
    }
}

/// ncu's cache policy in the work pass: flush before each kernel.
const WORK_CACHE_CONTROL: &str = "all";

/// The clock and cache policies the work pass of `profiler` runs under, as the evidence records
/// them; `None` when the profiler takes no work pass.
pub fn work_controls(profiler: &str) -> Option<(&'static str, &'static str)> {
    work_settings(profiler).map(|s| (s.ncu.clock_control.as_str(), WORK_CACHE_CONTROL))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profilers::ncu::plan::profile_argv;

    #[test]
    fn ncu_witness_is_one_metric_with_nvtx_at_free_clocks() {
        let settings = witness_settings("ncu").expect("ncu witnesses");
        assert_eq!(
            settings.ncu.metric_names(),
            vec!["gpu__time_duration.sum".to_string()]
        );
        assert_eq!(settings.ncu.clock_control, ClockControl::None);
        assert!(settings.ncu.nvtx);
        assert!(settings.ncu.extra_args.is_empty());
        assert_eq!(witness_clock_control("ncu"), Some("none"));
    }

    #[test]
    fn profilers_without_ranges_do_not_witness() {
        assert!(witness_settings("none").is_none());
        assert!(witness_settings("vtune").is_none());
        assert_eq!(witness_clock_control("vtune"), None);
    }

    #[test]
    fn ncu_work_pass_counts_bytes_flops_and_clocks_inside_the_calls_only() {
        let settings = work_settings("ncu").expect("ncu takes a work pass");
        let target = crate::model::arg::args(["python3", "worker.py"]);
        let argv: Vec<String> = profile_argv(&settings.ncu, std::path::Path::new("/out"), &target)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        let after = |flag: &str| {
            let at = argv.iter().position(|a| a == flag).unwrap_or_else(|| {
                panic!("{flag} missing from {argv:?}");
            });
            argv[at + 1].clone()
        };
        assert_eq!(after("--cache-control"), "all");
        assert_eq!(after("--profile-from-start"), "off");
        assert_eq!(after("--clock-control"), "none");
        assert!(argv.contains(&"--nvtx".to_string()), "{argv:?}");
        let metrics = after("--metrics");
        let metrics: Vec<&str> = metrics.split(',').collect();
        for name in [
            "gpu__time_duration.sum",
            "dram__bytes_read.sum",
            "dram__bytes_write.sum",
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
            "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
            "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
            "sm__ops_path_tensor_src_fp16.sum",
            "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
            "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
            "sm__ops_path_tensor_src_fp8.sum",
            "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum",
            "sm__cycles_elapsed.avg.per_second",
            "dram__cycles_elapsed.avg.per_second",
        ] {
            assert!(metrics.contains(&name), "{name} missing from {metrics:?}");
        }
        // Short: no pipe loads, occupancy or launch configuration (replay passes).
        assert_eq!(metrics.len(), 21, "{metrics:?}");
        assert!(
            metrics
                .iter()
                .all(|m| !m.contains("pipe_fma") && !m.starts_with("launch__"))
        );
        // The options ncu would refuse are not there, and the run is checked as ncu takes it.
        settings.ncu.validate().unwrap();
        assert_eq!(work_controls("ncu"), Some(("none", "all")));
        assert!(work_settings("vtune").is_none() && work_controls("none").is_none());
    }
}
