//! Intel Unitrace for OpenCL: `--opencl --metric-sampling`, started with collection off
//! (`PTI_ENABLE_COLLECTION=0`). OpenCL metric collection is flaky, so the step is retried by
//! the runner (up to 20 attempts) until the newest `trace.metrics.*` file has at least 10
//! lines. This replaces KernelFoundry's `retry_unitrace.sh`: no script to stage, no
//! `UNITRACE_DONE` marker printed even on failure, no deleting every `*.json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::unitrace::{TIMELINE_PATTERN, TRACE_PREFIX, UnitraceCore, unitrace_preflight};
use super::{
    Backend, CommandSpec, EndMarker, Graces, Plan, Preflight, ProfilerOutput, ProfilerSettings,
    RawOutput, RetryPolicy, Step, Validator,
};
use crate::error::Result;
use crate::model::plan::{DeclaredOutputs, FilePattern};
use crate::model::probe::Probe;

/// Attempts before the runner gives up on OpenCL metric collection.
pub const MAX_ATTEMPTS: u32 = 20;
/// Name prefix of the metrics file the validator checks.
pub const METRICS_PREFIX: &str = "trace.metrics.";
/// A metrics file with fewer lines holds no kernel rows.
pub const MIN_METRICS_LINES: usize = 10;

#[derive(Debug, Clone)]
pub struct OclUnitrace {
    core: UnitraceCore,
}

impl OclUnitrace {
    pub fn new(output_dir: PathBuf, settings: &ProfilerSettings) -> Self {
        OclUnitrace {
            core: UnitraceCore::new(output_dir, settings, true),
        }
    }

    /// The metric group of this pass.
    pub fn metric_group(&self) -> &str {
        &self.core.metric_group
    }

    /// The retry policy of the profiling step.
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: MAX_ATTEMPTS,
            validator: Validator::FileMinLines {
                dir: self.core.output_dir.clone(),
                prefix: METRICS_PREFIX.into(),
                min_lines: MIN_METRICS_LINES,
            },
            // A failed attempt's text and metrics files must not be taken for the next one's.
            clean_prefixes: vec![TRACE_PREFIX.into()],
        }
    }
}

impl Backend for OclUnitrace {
    fn name(&self) -> &str {
        self.core.name()
    }

    fn output_dir(&self) -> &Path {
        &self.core.output_dir
    }

    fn build_plan(&self, target: &[String]) -> Result<Plan> {
        let mut command = CommandSpec::new(self.core.argv(target)?);
        command.env = self.env_vars();
        let mut step = Step::new("profile", command, self.end_marker(), self.graces());
        step.retry = Some(self.retry_policy());
        Ok(Plan {
            profiler: self.name().into(),
            target: target.to_vec(),
            outputs: Default::default(),
            capabilities: Vec::new(),
            steps: vec![step],
        })
    }

    fn env_vars(&self) -> BTreeMap<String, String> {
        self.core.env_vars()
    }

    /// No marker: each attempt runs to its exit so the validator sees complete files.
    fn end_marker(&self) -> EndMarker {
        self.core.end_marker.clone().unwrap_or(EndMarker::None)
    }

    fn graces(&self) -> Graces {
        self.core.graces()
    }

    /// Stale `trace.*` files are removed before every attempt by the retry policy; a previous
    /// run's timeline would still be mistaken for this one's.
    fn outputs(&self) -> DeclaredOutputs {
        DeclaredOutputs {
            collect: vec![UnitraceCore::collect_pattern()],
            fresh: vec![FilePattern::Regex(TIMELINE_PATTERN.to_string())],
            ..Default::default()
        }
    }

    fn parse(&self, raw: RawOutput) -> Result<ProfilerOutput> {
        self.core.parse(raw)
    }

    fn check_availability(&self, probe: &dyn Probe) -> Preflight {
        let mut p = unitrace_preflight(probe, self.name());
        let icds = probe.list_dir(Path::new("/etc/OpenCL/vendors"));
        let verdict = opencl_icd_verdict(&icds);
        p.advise("opencl-icd", verdict.ok, verdict.detail);
        p.finish()
    }
}

/// Advisory: an Intel OpenCL ICD is registered (`/etc/OpenCL/vendors/intel*.icd`).
pub fn opencl_icd_verdict(icd_files: &[String]) -> super::preflight::Verdict {
    use super::preflight::Verdict;
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
    use super::*;

    #[test]
    fn wraps_opencl_with_sampling_and_retry() {
        let s = ProfilerSettings {
            metric_group: Some("VectorEngineProfile".into()),
            ..Default::default()
        };
        let p = OclUnitrace::new(PathBuf::from("/out"), &s);
        assert_eq!(p.metric_group(), "VectorEngineProfile");
        let target: Vec<String> = vec!["./gemm".into(), "a b".into()];
        let plan = p.wrap(&target).unwrap();
        assert_eq!(plan.profiler, "ocl-unitrace");
        let step = &plan.steps[0];
        let argv = &step.command.argv;
        assert_eq!(&argv[..2], &["unitrace".to_string(), "--opencl".into()]);
        assert!(argv.contains(&"--metric-sampling".to_string()));
        assert!(!argv.contains(&"--metric-query".to_string()));
        assert!(argv.contains(&"--teardown-on-signal".to_string()));
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
