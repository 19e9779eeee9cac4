//! Intel Unitrace for OpenCL: `--opencl --metric-sampling`, started with collection off
//! (`PTI_ENABLE_COLLECTION=0`). OpenCL metric collection is flaky, so the step is retried by
//! the runner (up to 20 attempts) until the newest `trace.metrics.*` file has at least 10
//! lines. This replaces KernelFoundry's `retry_unitrace.sh`: no script to stage, no
//! `UNITRACE_DONE` marker printed even on failure, no deleting every `*.json`.

use std::path::Path;

use super::TRACE_PREFIX;
use crate::model::plan::{RetryPolicy, Validator};
use crate::profilers::preflight::Verdict;

/// Attempts before the runner gives up on OpenCL metric collection.
pub const MAX_ATTEMPTS: u32 = 20;
/// Name prefix of the metrics file the validator checks.
pub const METRICS_PREFIX: &str = "trace.metrics.";
/// A metrics file with fewer lines holds no kernel rows.
pub const MIN_METRICS_LINES: usize = 10;

/// The retry policy of the OpenCL profiling step, for output written into `output_dir`.
pub fn retry_policy(output_dir: &Path) -> RetryPolicy {
    RetryPolicy {
        max_attempts: MAX_ATTEMPTS,
        validator: Validator::FileMinLines {
            dir: output_dir.to_path_buf(),
            prefix: METRICS_PREFIX.into(),
            min_lines: MIN_METRICS_LINES,
        },
        // A failed attempt's text and metrics files must not be taken for the next one's.
        clean_prefixes: vec![TRACE_PREFIX.into()],
    }
}

/// Advisory: an Intel OpenCL ICD is registered (`/etc/OpenCL/vendors/intel*.icd`).
pub fn opencl_icd_verdict(icd_files: &[String]) -> Verdict {
    let intel: Vec<&String> = icd_files
        .iter()
        .filter(|n| n.to_ascii_lowercase().contains("intel") && n.ends_with(".icd"))
        .collect();
    if intel.is_empty() {
        Verdict::fail(
            "no Intel OpenCL ICD in /etc/OpenCL/vendors; install the Intel compute runtime \
             (intel-opencl-icd) so OpenCL kernels run on the GPU",
        )
    } else {
        Verdict::pass(format!("OpenCL ICD {}", intel[0]))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::model::plan::EndMarker;
    use crate::profilers::unitrace::Unitrace;
    use crate::profilers::{Backend, ProfilerSettings};

    #[test]
    fn wraps_opencl_with_sampling_and_retry() {
        let s = ProfilerSettings {
            unitrace: crate::profilers::unitrace::UnitraceSettings {
                metric_group: Some("VectorEngineProfile".into()),
            },
            ..Default::default()
        };
        let p = Unitrace::opencl(PathBuf::from("/out"), &s);
        assert_eq!(p.metric_group(), "VectorEngineProfile");
        let target: Vec<crate::model::arg::Arg> = vec!["./gemm".into(), "a b".into()];
        let plan = p.wrap(&target).unwrap();
        assert_eq!(plan.profiler, "ocl-unitrace");
        let step = &plan.steps[0];
        let argv = &step.command.argv;
        assert_eq!(&argv[..2], &["unitrace".to_string(), "--opencl".into()]);
        assert!(argv.iter().any(|a| a == "--metric-sampling"));
        assert!(!argv.iter().any(|a| a == "--metric-query"));
        assert!(argv.iter().any(|a| a == "--teardown-on-signal"));
        assert_eq!(&argv[argv.len() - 2..], &target[..]);
        assert_eq!(step.command.env["PTI_ENABLE_COLLECTION"], "0");
        assert_eq!(step.command.env["POLYPROF_PROFILER"], "ocl-unitrace");
        assert_eq!(step.end_marker, EndMarker::None);
        assert_eq!(
            step.retry,
            Some(RetryPolicy {
                max_attempts: 20,
                validator: Validator::FileMinLines {
                    dir: PathBuf::from("/out"),
                    prefix: "trace.metrics.".into(),
                    min_lines: 10,
                },
                clean_prefixes: vec!["trace.".into()],
            })
        );
    }

    #[test]
    fn icd_decision() {
        assert!(opencl_icd_verdict(&["intel.icd".into()]).ok);
        assert!(opencl_icd_verdict(&["nvidia.icd".into(), "intel-neo.icd".into()]).ok);
        let v = opencl_icd_verdict(&["nvidia.icd".into()]);
        assert!(!v.ok && v.detail.contains("intel-opencl-icd"));
    }
}
