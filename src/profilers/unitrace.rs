//! Intel Unitrace for Level Zero (SYCL, and PyTorch/Triton on Intel GPUs).
//!
//! One pass per metric group. The plan is KernelFoundry's command line with its defects fixed:
//! argv instead of a concatenated string, `--teardown-on-signal 15` so a forced stop still
//! writes data, a post-marker grace sized for unitrace's flush, stale output refused before the
//! run, and timeline files found by unitrace's own naming rule instead of "first `*.json`".
//! The OpenCL variant (`ocl_unitrace`) shares everything here.

pub mod chrome;
pub mod lines;
pub mod metrics;
pub mod names;
pub mod outputs;
pub mod records;
pub mod tables;
pub mod timeline;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use regex::Regex;

use super::artifacts::{DEFAULT_ARTIFACT_CAP, collect_files};
use super::preflight::{self, Preflight};
use super::staging::{ensure_fresh, path_arg, require_target, session_id};
use super::{
    CommandSpec, Diagnostic, EndMarker, Graces, Plan, Profiler, ProfilerOutput, ProfilerSettings,
    Severity, Step,
};
use crate::error::{Error, Result};

/// The metric group used when none is given (unitrace's own default).
pub const DEFAULT_METRIC_GROUP: &str = "ComputeBasic";
/// Prefix of every text file unitrace writes (`-o <OUT>/trace`): `trace.<pid>`,
/// `trace.metrics.<pid>`.
pub const TRACE_PREFIX: &str = "trace.";
/// SIGTERM: unitrace tears down and writes its files when the runner stops the target.
pub const TEARDOWN_SIGNAL: &str = "15";

/// Unitrace's timeline naming: `<appname>.<pid>.json` or `<appname>.<pid>.<rank>.json`.
static TIMELINE_NAME: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^.+\.[0-9]+(\.[0-9]+)?\.json$").ok());

/// Whether `name` is a file unitrace writes into the output directory.
pub fn is_unitrace_output(name: &str) -> bool {
    name.starts_with(TRACE_PREFIX) || is_timeline(name)
}

/// Whether `name` follows unitrace's timeline naming.
pub fn is_timeline(name: &str) -> bool {
    TIMELINE_NAME.as_ref().is_some_and(|re| re.is_match(name))
}

/// What the Level Zero and OpenCL variants share.
#[derive(Debug, Clone)]
pub(crate) struct UnitraceCore {
    pub output_dir: PathBuf,
    pub metric_group: String,
    pub extra_args: Vec<String>,
    pub end_marker: Option<EndMarker>,
    pub graces: Option<Graces>,
    pub opencl: bool,
}

impl UnitraceCore {
    pub fn new(output_dir: PathBuf, settings: &ProfilerSettings, opencl: bool) -> Self {
        UnitraceCore {
            output_dir,
            metric_group: settings
                .metric_group
                .clone()
                .unwrap_or_else(|| DEFAULT_METRIC_GROUP.to_string()),
            extra_args: settings.extra_args.clone(),
            end_marker: settings.end_marker.clone(),
            graces: settings.graces,
            opencl,
        }
    }

    pub fn name(&self) -> &'static str {
        if self.opencl {
            "ocl-unitrace"
        } else {
            "unitrace"
        }
    }

    /// The unitrace argv for one attempt.
    pub fn argv(&self, target: &[String]) -> Result<Vec<String>> {
        require_target(self.name(), target)?;
        let out = path_arg(&self.output_dir)?;
        let prefix = path_arg(&self.output_dir.join("trace"))?;
        let mut argv: Vec<String> = vec!["unitrace".into()];
        if self.opencl {
            argv.push("--opencl".into());
        }
        argv.extend(
            [
                "--chrome-kernel-logging",
                "--chrome-itt-logging",
                "--start-paused",
                "--session",
            ]
            .map(String::from),
        );
        argv.push(session_id());
        argv.extend(["--teardown-on-signal".to_string(), TEARDOWN_SIGNAL.into()]);
        argv.extend(["--group".to_string(), self.metric_group.clone()]);
        // Per-kernel queries are Level Zero only; OpenCL needs time-based sampling.
        argv.push(
            if self.opencl {
                "--metric-sampling"
            } else {
                "--metric-query"
            }
            .into(),
        );
        argv.extend(["--output-dir-path".to_string(), out, "-o".into(), prefix]);
        argv.extend(self.extra_args.iter().cloned());
        argv.extend(target.iter().cloned());
        Ok(argv)
    }

    /// Variables the pytest harness reads to find and drive the profiler.
    pub fn env_vars(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        env.insert("POLYPROF_PROFILER".into(), self.name().into());
        env.insert("KERNELFOUNDRY_PROFILER".into(), "unitrace".into());
        // The harness calls `$KERNELFOUNDRY_unitrace_cmd --resume/--pause $UNITRACE_Session`.
        env.insert("KERNELFOUNDRY_unitrace_cmd".into(), "unitrace".into());
        if self.opencl {
            // The target starts with collection off; the harness turns it on for the timed
            // loop (OpenCL has no session resume).
            env.insert("PTI_ENABLE_COLLECTION".into(), "0".into());
        }
        env
    }

    pub fn default_graces() -> Graces {
        Graces {
            // Unitrace writes its timeline and metrics after the application's last line.
            marker_grace: Duration::from_secs(30),
            // With --teardown-on-signal a SIGTERM still flushes; give it time before SIGKILL.
            kill_grace: Duration::from_secs(10),
        }
    }

    pub fn graces(&self) -> Graces {
        self.graces.unwrap_or_else(Self::default_graces)
    }

    /// Collect `trace.*` and unitrace timeline files; a run that wrote none has no data.
    pub async fn read_output(&self) -> Result<ProfilerOutput> {
        let raw = collect_files(&self.output_dir, is_unitrace_output, DEFAULT_ARTIFACT_CAP).await?;
        if raw.artifacts.is_empty() {
            return Err(Error::NoData {
                profiler: self.name().into(),
                reason: format!(
                    "no `trace.*` or `<app>.<pid>.json` files in `{}`; unitrace's stderr \
                     (`[INFO] ... stored in ...`, `[ERROR] ...`) says what happened",
                    self.output_dir.display()
                ),
            });
        }
        let mut output = ProfilerOutput {
            raw,
            ..Default::default()
        };
        let names = || output.raw.artifacts.iter().map(|a| a.name.as_str());
        if !names().any(is_timeline) {
            output.parsed.diagnostics.push(Diagnostic {
                severity: Severity::Warning,
                kind: "no_timeline".into(),
                message: format!("no timeline JSON in `{}`", self.output_dir.display()),
                hint: Some(
                    "unitrace writes the timeline when the process exits; it may have been \
                     killed before it could"
                        .into(),
                ),
            });
        }
        if !names().any(|n| n.starts_with("trace.metrics.")) {
            output.parsed.diagnostics.push(Diagnostic {
                severity: Severity::Warning,
                kind: "no_metrics".into(),
                message: format!(
                    "no `trace.metrics.*` file in `{}`",
                    self.output_dir.display()
                ),
                hint: Some(format!(
                    "check that metric group `{}` exists on this GPU (`unitrace --metric-list`) \
                     and that the code under test resumed collection",
                    self.metric_group
                )),
            });
        }
        Ok(output)
    }
}

/// Shared preflight of both unitrace variants: binary, version, Intel GPU, counter access.
pub(crate) fn unitrace_preflight(name: &str) -> Preflight {
    let mut p = Preflight::new(name);
    let binary = preflight::find_binary("unitrace");
    let found = p.record(
        "binary",
        preflight::binary_verdict(
            "unitrace",
            binary.as_deref(),
            "build it from intel/pti-gpu (tools/unitrace) or source oneAPI's `setvars.sh`, then \
             put it on PATH",
        ),
    );
    if let (true, Some(path)) = (found, &binary) {
        let version = preflight::read_version(path, &["--version"], preflight::VERSION_TIMEOUT);
        p.version = version.as_ref().ok().cloned();
        p.record("version", preflight::version_verdict("unitrace", &version));
    }
    p.binary = binary;
    p.record(
        "gpu",
        preflight::intel_gpu_verdict(&preflight::render_nodes()),
    );
    let xe = preflight::read_sysctl(Path::new(preflight::XE_PARANOID));
    let i915 = preflight::read_sysctl(Path::new(preflight::I915_PARANOID));
    p.record(
        "counters",
        preflight::intel_counters_verdict(xe.as_deref(), i915.as_deref(), preflight::is_root()),
    );
    p
}

/// Unitrace on Level Zero, one metric group per pass.
#[derive(Debug, Clone)]
pub struct Unitrace {
    core: UnitraceCore,
}

impl Unitrace {
    pub fn new(output_dir: PathBuf, settings: &ProfilerSettings) -> Self {
        Unitrace {
            core: UnitraceCore::new(output_dir, settings, false),
        }
    }

    /// The metric group of this pass.
    pub fn metric_group(&self) -> &str {
        &self.core.metric_group
    }
}

#[async_trait]
impl Profiler for Unitrace {
    fn name(&self) -> &str {
        self.core.name()
    }

    fn output_dir(&self) -> &Path {
        &self.core.output_dir
    }

    fn wrap(&self, target: &[String]) -> Result<Plan> {
        let mut command = CommandSpec::new(self.core.argv(target)?);
        command.env = self.env_vars();
        Ok(Plan {
            profiler: self.name().into(),
            target: target.to_vec(),
            steps: vec![Step::new(
                "profile",
                command,
                self.end_marker(),
                self.graces(),
            )],
        })
    }

    fn env_vars(&self) -> BTreeMap<String, String> {
        self.core.env_vars()
    }

    fn end_marker(&self) -> EndMarker {
        self.core.end_marker.clone().unwrap_or(EndMarker::Pytest)
    }

    fn graces(&self) -> Graces {
        self.core.graces()
    }

    async fn prepare(&self, host_output_dir: &Path) -> Result<()> {
        ensure_fresh(self.name(), host_output_dir, is_unitrace_output).await
    }

    async fn read_output(&self) -> Result<ProfilerOutput> {
        self.core.read_output().await
    }

    fn preflight(&self) -> Preflight {
        unitrace_preflight(self.name()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Vec<String> {
        ["python", "-m", "pytest", "--template_params=(16, 32)"]
            .map(String::from)
            .to_vec()
    }

    fn settings(group: &str) -> ProfilerSettings {
        ProfilerSettings {
            metric_group: Some(group.into()),
            ..Default::default()
        }
    }

    #[test]
    fn wraps_level_zero_command_line() {
        let u = Unitrace::new(PathBuf::from("/out"), &settings("MemoryProfile"));
        let plan = u.wrap(&target()).unwrap();
        assert_eq!(plan.profiler, "unitrace");
        assert_eq!(plan.target, target());
        assert_eq!(plan.steps.len(), 1);
        let argv = &plan.steps[0].command.argv;
        let session = argv[5].clone();
        let expected: Vec<String> = [
            "unitrace",
            "--chrome-kernel-logging",
            "--chrome-itt-logging",
            "--start-paused",
            "--session",
            &session,
            "--teardown-on-signal",
            "15",
            "--group",
            "MemoryProfile",
            "--metric-query",
            "--output-dir-path",
            "/out",
            "-o",
            "/out/trace",
            "python",
            "-m",
            "pytest",
            "--template_params=(16, 32)",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(argv, &expected);
        assert!(plan.steps[0].retry.is_none());
        assert_eq!(plan.steps[0].end_marker, EndMarker::Pytest);
        assert_eq!(
            plan.steps[0].command.env["KERNELFOUNDRY_unitrace_cmd"],
            "unitrace"
        );
        assert!(
            !plan.steps[0]
                .command
                .env
                .contains_key("PTI_ENABLE_COLLECTION")
        );
    }

    #[test]
    fn each_wrap_gets_a_new_session_and_default_group() {
        let u = Unitrace::new(PathBuf::from("/out"), &ProfilerSettings::default());
        assert_eq!(u.metric_group(), "ComputeBasic");
        let a = u.wrap(&target()).unwrap().steps[0].command.argv[5].clone();
        let b = u.wrap(&target()).unwrap().steps[0].command.argv[5].clone();
        assert_ne!(a, b);
    }

    #[test]
    fn extra_args_go_before_the_target_and_overrides_apply() {
        let s = ProfilerSettings {
            extra_args: vec!["--demangle".into()],
            end_marker: Some(EndMarker::None),
            ..Default::default()
        };
        let plan = Unitrace::new(PathBuf::from("/o"), &s)
            .wrap(&target())
            .unwrap();
        let argv = &plan.steps[0].command.argv;
        let at = argv.iter().position(|a| a == "--demangle").unwrap();
        assert_eq!(argv[at + 1], "python");
        assert_eq!(plan.steps[0].end_marker, EndMarker::None);
    }

    #[test]
    fn empty_target_is_refused() {
        let u = Unitrace::new(PathBuf::from("/o"), &ProfilerSettings::default());
        assert!(u.wrap(&[]).is_err());
    }

    #[test]
    fn timeline_names_follow_unitrace_naming() {
        assert!(is_timeline("python3.1234.json"));
        assert!(is_timeline("my.app.99.0.json"));
        assert!(!is_timeline("run.json"));
        assert!(!is_timeline("ninja.json.bak"));
        assert!(is_unitrace_output("trace.metrics.77"));
        assert!(!is_unitrace_output("stdout.log"));
    }

    #[tokio::test]
    async fn read_output_collects_raw_files_and_flags_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let u = Unitrace::new(dir.path().to_path_buf(), &ProfilerSettings::default());
        let err = u.read_output().await.unwrap_err().to_string();
        assert!(
            err.contains("no data") || err.contains("produced no data"),
            "{err}"
        );

        std::fs::write(dir.path().join("trace.12"), "summary").unwrap();
        std::fs::write(dir.path().join("run.json"), "{}").unwrap();
        let out = u.read_output().await.unwrap();
        let names: Vec<&str> = out.raw.artifacts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, vec!["trace.12"]);
        let kinds: Vec<&str> = out
            .parsed
            .diagnostics
            .iter()
            .map(|d| d.kind.as_str())
            .collect();
        assert_eq!(kinds, vec!["no_timeline", "no_metrics"]);

        std::fs::write(dir.path().join("trace.metrics.12"), "a\nb\n").unwrap();
        std::fs::write(dir.path().join("python.12.json"), "{\"traceEvents\":[]}").unwrap();
        let out = u.read_output().await.unwrap();
        assert_eq!(out.raw.artifacts.len(), 3);
        assert!(out.parsed.diagnostics.is_empty());
        assert_eq!(
            out.raw.get("python.12.json").unwrap().content,
            b"{\"traceEvents\":[]}"
        );
    }

    #[tokio::test]
    async fn prepare_refuses_a_previous_runs_files() {
        let dir = tempfile::tempdir().unwrap();
        let u = Unitrace::new(dir.path().to_path_buf(), &ProfilerSettings::default());
        u.prepare(dir.path()).await.unwrap();
        std::fs::write(dir.path().join("python.5.json"), "{}").unwrap();
        assert!(u.prepare(dir.path()).await.is_err());
    }

    #[test]
    fn preflight_reports_missing_binary_with_fix() {
        // This machine has no unitrace; the reason must say how to get it.
        if preflight::find_binary("unitrace").is_some() {
            return;
        }
        let p = Unitrace::new(PathBuf::from("/o"), &ProfilerSettings::default()).preflight();
        assert!(!p.available);
        let reason = p.reason.unwrap();
        assert!(reason.contains("`unitrace` is not on PATH"), "{reason}");
        assert!(reason.contains("intel/pti-gpu"), "{reason}");
    }
}
