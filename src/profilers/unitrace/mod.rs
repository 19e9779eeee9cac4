//! Intel Unitrace for Level Zero (SYCL, and PyTorch/Triton on Intel GPUs).
//!
//! One pass per metric group. The plan is KernelFoundry's command line with its defects fixed:
//! argv instead of a concatenated string, `--teardown-on-signal 15` so a forced stop still
//! writes data, a post-marker grace sized for unitrace's flush, stale output refused before the
//! run, and timeline files found by unitrace's own naming rule instead of "first `*.json`".
//! The OpenCL variant (`ocl-unitrace`) is the same backend with [`UnitraceApi::OpenCl`]; what
//! differs (sampling, collection off at start, the retry policy, the ICD check) is in [`opencl`].

pub mod opencl;

pub mod chrome;
pub mod lines;
pub mod metrics;
pub mod names;
pub mod outputs;
pub mod records;
pub mod samples;
pub mod tables;
pub mod timeline;

use crate::model::arg::Arg;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;

use super::preflight::{self, Preflight};
use super::staging::{path_arg, require_target, session_id};
use super::{
    Backend, CommandSpec, Diagnostic, EndMarker, Graces, Plan, ProfilerOutput, ProfilerSettings,
    RawOutput, RetryPolicy, Severity, Step,
};
use crate::model::error::{Error, Result};
use crate::model::plan::{DeclaredOutputs, FilePattern};
use crate::model::probe::Probe;

/// The metric group used when none is given (unitrace's own default).
pub const DEFAULT_METRIC_GROUP: &str = "ComputeBasic";
/// Prefix of every text file unitrace writes (`-o <OUT>/trace`): `trace.<pid>`,
/// `trace.metrics.<pid>`.
pub const TRACE_PREFIX: &str = "trace.";
/// SIGTERM: unitrace tears down and writes its files when the runner stops the target.
pub const TEARDOWN_SIGNAL: &str = "15";
/// The session id of a paused start, exported to the target.
pub const SESSION_ENV: &str = "POLYPROF_UNITRACE_SESSION";

/// Unitrace's timeline naming: `<appname>.<pid>.json` or `<appname>.<pid>.<rank>.json`.
pub const TIMELINE_PATTERN: &str = r"^.+\.[0-9]+(\.[0-9]+)?\.json$";
static TIMELINE_NAME: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(TIMELINE_PATTERN).ok());

/// Whether `name` is a file unitrace writes into the output directory.
pub fn is_unitrace_output(name: &str) -> bool {
    name.starts_with(TRACE_PREFIX) || is_timeline(name)
}

/// Whether `name` follows unitrace's timeline naming.
pub fn is_timeline(name: &str) -> bool {
    TIMELINE_NAME.as_ref().is_some_and(|re| re.is_match(name))
}

/// Unitrace's own settings (both APIs); selection's `metric_group` fills them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UnitraceSettings {
    /// The metric group of this pass (`ComputeBasic`, `MemoryProfile`, …); default
    /// [`DEFAULT_METRIC_GROUP`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_group: Option<String>,
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
    /// `--chrome-kernel-logging --chrome-itt-logging` (the Chrome timeline with ITT tasks).
    pub timeline: bool,
    /// `--start-paused --session <id>`: the harness resumes collection for the timed loop.
    pub start_paused: bool,
}

impl UnitraceCore {
    pub fn new(output_dir: PathBuf, settings: &ProfilerSettings, opencl: bool) -> Self {
        UnitraceCore {
            output_dir,
            metric_group: settings
                .unitrace
                .metric_group
                .clone()
                .unwrap_or_else(|| DEFAULT_METRIC_GROUP.to_string()),
            extra_args: settings.extra_args.clone(),
            end_marker: settings.end_marker.clone(),
            graces: settings.graces,
            opencl,
            timeline: true,
            start_paused: true,
        }
    }

    pub fn name(&self) -> &'static str {
        if self.opencl {
            "ocl-unitrace"
        } else {
            "unitrace"
        }
    }

    /// The unitrace argv for one pass: the options, then the target directly (unitrace 2.3.0
    /// has no `--`: its `ParseArgs` starts the application at the first argument it does not
    /// know, so a `--` would be run as the program). `session` is given when started paused.
    pub fn argv(&self, target: &[Arg], session: Option<&str>) -> Result<Vec<Arg>> {
        require_target(self.name(), target)?;
        let out = path_arg(&self.output_dir)?;
        let prefix = path_arg(&self.output_dir.join("trace"))?;
        let mut argv: Vec<String> = vec!["unitrace".into()];
        if self.opencl {
            argv.push("--opencl".into());
        }
        if self.timeline {
            argv.extend(["--chrome-kernel-logging", "--chrome-itt-logging"].map(String::from));
        }
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
        if let Some(session) = session {
            argv.extend(["--start-paused", "--session", session].map(String::from));
        }
        argv.extend(["--teardown-on-signal".to_string(), TEARDOWN_SIGNAL.into()]);
        argv.extend(self.extra_args.iter().cloned());
        let mut argv = crate::model::arg::args(argv);
        argv.extend(target.iter().cloned());
        Ok(argv)
    }

    /// The command of one pass: a fresh session id when started paused, in the argv and in the
    /// target's environment, so its harness can run `unitrace --resume|--pause|--stop <id>`
    /// around the timed loop.
    pub fn command(&self, target: &[Arg]) -> Result<CommandSpec> {
        let session = self.start_paused.then(session_id);
        let mut command = CommandSpec::new(self.argv(target, session.as_deref())?);
        command.env = self.env_vars();
        if let Some(session) = session {
            command.env.insert(SESSION_ENV.into(), session.clone());
            // What unitrace itself exports and KernelFoundry's harness reads.
            command.env.insert("UNITRACE_Session".into(), session);
        }
        Ok(command)
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
    /// Every `trace.*` and timeline file, by name (one pattern, so one sorted order).
    pub fn collect_pattern() -> FilePattern {
        FilePattern::Regex(format!(
            "^{}|{TIMELINE_PATTERN}",
            regex::escape(TRACE_PREFIX)
        ))
    }

    /// Parse the collected files (`outputs::parse_outputs`): none is no data; a missing
    /// timeline or metrics file is a warning with its likely cause.
    pub fn parse(&self, raw: RawOutput) -> Result<ProfilerOutput> {
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
        let files: Vec<(&str, &[u8])> = raw
            .artifacts
            .iter()
            .map(|a| (a.name.as_str(), a.content.as_slice()))
            .collect();
        let parsed = outputs::parse_outputs(&files, self.name());
        let mut output = ProfilerOutput {
            parsed,
            ..Default::default()
        };
        let names = || raw.artifacts.iter().map(|a| a.name.as_str());
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
                metric: None,
            });
        }
        // The older layout carries metrics in the text file itself; only their absence counts.
        let has_metrics = output
            .parsed
            .kernels
            .iter()
            .any(|k| k.metrics.contains_key("GpuTime"));
        if !has_metrics && !names().any(|n| n.starts_with("trace.metrics.")) {
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
                metric: None,
            });
        }
        output.raw = raw;
        Ok(output)
    }
}

/// Shared preflight of both unitrace variants: binary, version, Intel GPU, counter access.
pub(crate) fn unitrace_preflight(probe: &dyn Probe, name: &str) -> Preflight {
    preflight::intel_preflight(
        probe,
        name,
        "unitrace",
        "build it from intel/pti-gpu (tools/unitrace) or source oneAPI's `setvars.sh`, then put \
         it on PATH",
    )
}

/// Which runtime API unitrace traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitraceApi {
    /// SYCL, and PyTorch/Triton on Intel GPUs (`unitrace`).
    LevelZero,
    /// OpenCL (`ocl-unitrace`).
    OpenCl,
}

/// Unitrace, one metric group per pass, on Level Zero or OpenCL.
#[derive(Debug, Clone)]
pub struct Unitrace {
    core: UnitraceCore,
}

impl Unitrace {
    /// Level Zero.
    pub fn new(output_dir: PathBuf, settings: &ProfilerSettings) -> Self {
        Self::with_api(output_dir, settings, UnitraceApi::LevelZero)
    }

    /// OpenCL.
    pub fn opencl(output_dir: PathBuf, settings: &ProfilerSettings) -> Self {
        Self::with_api(output_dir, settings, UnitraceApi::OpenCl)
    }

    pub fn with_api(output_dir: PathBuf, settings: &ProfilerSettings, api: UnitraceApi) -> Self {
        Unitrace {
            core: UnitraceCore::new(output_dir, settings, api == UnitraceApi::OpenCl),
        }
    }

    pub fn api(&self) -> UnitraceApi {
        if self.core.opencl {
            UnitraceApi::OpenCl
        } else {
            UnitraceApi::LevelZero
        }
    }

    /// The metric group of this pass.
    pub fn metric_group(&self) -> &str {
        &self.core.metric_group
    }

    /// With or without the Chrome timeline (on by default).
    pub fn with_timeline(mut self, on: bool) -> Self {
        self.core.timeline = on;
        self
    }

    /// Started paused with a session (the default), or collecting from the start.
    pub fn with_start_paused(mut self, on: bool) -> Self {
        self.core.start_paused = on;
        self
    }

    /// The retry policy of the profiling step (OpenCL only).
    pub fn retry_policy(&self) -> Option<RetryPolicy> {
        (self.api() == UnitraceApi::OpenCl).then(|| opencl::retry_policy(&self.core.output_dir))
    }
}

impl Backend for Unitrace {
    fn name(&self) -> &str {
        self.core.name()
    }

    fn output_dir(&self) -> &Path {
        &self.core.output_dir
    }

    fn build_plan(&self, target: &[Arg]) -> Result<Plan> {
        let command = self.core.command(target)?;
        let mut step = Step::new("profile", command, self.end_marker(), self.graces());
        step.retry = self.retry_policy();
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

    /// OpenCL has no marker: each attempt runs to its exit so the validator sees complete files.
    fn end_marker(&self) -> EndMarker {
        self.core.end_marker.clone().unwrap_or(match self.api() {
            UnitraceApi::LevelZero => EndMarker::Pytest,
            UnitraceApi::OpenCl => EndMarker::None,
        })
    }

    fn graces(&self) -> Graces {
        self.core.graces()
    }

    /// Every unitrace file is collected, and none may be left from an earlier run. On OpenCL
    /// the retry policy removes stale `trace.*` files before every attempt; a previous run's
    /// timeline would still be mistaken for this one's.
    fn outputs(&self) -> DeclaredOutputs {
        let fresh = match self.api() {
            UnitraceApi::LevelZero => UnitraceCore::collect_pattern(),
            UnitraceApi::OpenCl => FilePattern::Regex(TIMELINE_PATTERN.to_string()),
        };
        DeclaredOutputs {
            collect: vec![UnitraceCore::collect_pattern()],
            fresh: vec![fresh],
            ..Default::default()
        }
    }

    fn parse(&self, raw: RawOutput) -> Result<ProfilerOutput> {
        self.core.parse(raw)
    }

    fn check_availability(&self, probe: &dyn Probe) -> Preflight {
        let mut p = unitrace_preflight(probe, self.name());
        if self.api() == UnitraceApi::OpenCl {
            let icds = probe.list_dir(Path::new("/etc/OpenCL/vendors"));
            let verdict = opencl::opencl_icd_verdict(&icds);
            p.advise("opencl-icd", verdict.ok, verdict.detail);
        }
        p.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Vec<Arg> {
        crate::model::arg::args(["python", "-m", "pytest", "--template_params=(16, 32)"])
    }

    fn settings(group: &str) -> ProfilerSettings {
        ProfilerSettings {
            unitrace: UnitraceSettings {
                metric_group: Some(group.into()),
            },
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
        let session = argv[12].to_string();
        let expected: Vec<String> = [
            "unitrace",
            "--chrome-kernel-logging",
            "--chrome-itt-logging",
            "--group",
            "MemoryProfile",
            "--metric-query",
            "--output-dir-path",
            "/out",
            "-o",
            "/out/trace",
            "--start-paused",
            "--session",
            &session,
            "--teardown-on-signal",
            "15",
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
        // The session reaches the target so its harness can resume and pause collection.
        assert_eq!(plan.steps[0].command.env[SESSION_ENV], session);
        assert_eq!(plan.steps[0].command.env["UNITRACE_Session"], session);
    }

    #[test]
    fn timeline_and_paused_start_are_optional() {
        let u = Unitrace::new(PathBuf::from("/out"), &ProfilerSettings::default())
            .with_timeline(false)
            .with_start_paused(false);
        let command = &u.wrap(&target()).unwrap().steps[0].command;
        let expected: Vec<String> = [
            "unitrace",
            "--group",
            "ComputeBasic",
            "--metric-query",
            "--output-dir-path",
            "/out",
            "-o",
            "/out/trace",
            "--teardown-on-signal",
            "15",
            "python",
            "-m",
            "pytest",
            "--template_params=(16, 32)",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(command.argv, expected);
        assert!(!command.env.contains_key(SESSION_ENV));
    }

    #[test]
    fn each_wrap_gets_a_new_session_and_default_group() {
        let u = Unitrace::new(PathBuf::from("/out"), &ProfilerSettings::default());
        assert_eq!(u.metric_group(), "ComputeBasic");
        let a = u.wrap(&target()).unwrap().steps[0].command.argv[12].clone();
        let b = u.wrap(&target()).unwrap().steps[0].command.argv[12].clone();
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
}
