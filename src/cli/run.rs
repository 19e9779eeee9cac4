//! `polyprof run`: run a command, optionally under a profiler, supervised.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use polyprof::model::outcome::{Outcome, StreamCapture};
use polyprof::pipeline::config::Config;
use polyprof::pipeline::job::pass_label;
use polyprof::pipeline::job::profile_claimed;
use polyprof::pipeline::runner::Tracking;
use polyprof::pipeline::runner::echo::{self, Echo};
use polyprof::pipeline::{EnvPolicy, Job, RunOptions, rundir};
use polyprof::profilers::{self, EndMarker, Graces, ProfilerSettings};
use polyprof::results::ProfileRun;
use tokio_util::sync::CancellationToken;

/// Exit code when polyprof itself could not do the pass (profiler unavailable, unreadable
/// profiler output, …) although the command did not fail.
pub const EXIT_POLYPROF_FAILED: u8 = 3;
pub const EXIT_TIMEOUT: u8 = 124;
pub const EXIT_INACTIVE: u8 = 125;
pub const EXIT_SPAWN_FAILED: u8 = 127;
/// The command exists but cannot be executed (as POSIX shells, `timeout(1)` and `docker run`).
pub const EXIT_NOT_EXECUTABLE: u8 = 126;
/// Under `--exit-code polyprof`: the command ran and failed (any non-zero status or signal).
pub const EXIT_COMMAND_FAILED: u8 = 1;

/// What polyprof's exit status reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ExitCodeMode {
    /// The command's own code passes through; polyprof's codes for what it did (see docs).
    #[default]
    Command,
    /// Only polyprof's codes: 0 the command succeeded, 1 it failed (any code or signal),
    /// 3 polyprof failed, 124/125 timeouts, 126/127 not executable/not found, 130 cancelled.
    Polyprof,
}

/// How the command's descendants are tracked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TrackingMode {
    /// A supervising subreaper finds and kills every descendant, also when polyprof is killed.
    #[default]
    Supervisor,
    /// The process group only (a descendant that calls setsid escapes).
    Group,
    /// The supervisor, with the command in a cgroup v2 of its own where one can be created
    /// (`polyprof doctor` says); `cgroup.kill` ends the tree at once. About 0.3 ms per run.
    Cgroup,
}
pub const EXIT_CANCELLED: u8 = 130;

impl TrackingMode {
    /// The runner's tracking for this mode (the supervisor found beside polyprof).
    pub fn tracking(self) -> anyhow::Result<Tracking> {
        Ok(match self {
            TrackingMode::Group => Tracking::Group,
            TrackingMode::Supervisor => Tracking::Supervisor {
                exe: supervisor_exe()?,
            },
            TrackingMode::Cgroup => Tracking::Cgroup {
                exe: supervisor_exe()?,
            },
        })
    }
}

/// Arguments of `polyprof run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Profiler to run the command under (`none`: run it as is).
    #[arg(long, default_value = "none", value_parser = super::values::profilers())]
    pub profiler: String,
    /// Where logs, profiler output and run.json go [default: ./polyprof-runs/<profiler>.<NNN>].
    #[arg(long, help_heading = "Output")]
    pub output_dir: Option<PathBuf>,
    /// Replace a run already in the output directory (its files are removed first).
    #[arg(long, help_heading = "Output")]
    pub force: bool,
    /// Label of the run [default: the output directory's name].
    #[arg(long, help_heading = "Output")]
    pub label: Option<String>,
    /// What the exit status reports: command (its code passes through) or polyprof.
    #[arg(
        long,
        value_enum,
        default_value_t,
        value_name = "MODE",
        help_heading = "Output"
    )]
    pub exit_code: ExitCodeMode,
    #[command(flatten, next_help_heading = "Profile cache (--profiler ncu)")]
    pub profile_cache: super::profile_cache_args::ProfileCacheArgs,
    #[command(flatten, next_help_heading = "Supervision")]
    pub supervision: Box<SupervisionArgs>,
    /// Nsight Compute options (used with `--profiler ncu`).
    #[command(flatten, next_help_heading = "Nsight Compute (--profiler ncu)")]
    pub ncu: Box<super::ncu_args::NcuArgs>,
    #[command(flatten, next_help_heading = "Containers (--container IMAGE)")]
    pub container: Box<super::container_args::ContainerArgs>,
    /// Print the full run document (run.json's schema) on stdout instead of the summary on
    /// stderr; the command's output is then echoed to stderr.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Do not echo the command's output while it runs (its stdout to stdout, its stderr to
    /// stderr).
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,
    /// The command and its arguments, after `--` (bytes, passed on unchanged).
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

/// How the command is supervised (shared by every profiler).
#[derive(Debug, Clone, clap::Args)]
pub struct SupervisionArgs {
    /// What says the work is done: pytest, none, literal:TEXT, regex:RE [default: the profiler's].
    #[arg(long)]
    pub end_marker: Option<EndMarker>,
    /// Overall wall-clock limit (`30s`, `1m`, `1h30m`; a bare number is seconds).
    #[arg(long, value_parser = super::duration::seconds, value_name = "DURATION")]
    pub timeout: Option<Duration>,
    /// Stop after this long without output (`30s`, `1m`; a bare number is seconds).
    #[arg(long, value_parser = super::duration::seconds, value_name = "DURATION")]
    pub inactivity_timeout: Option<Duration>,
    /// After the end marker: how long the process may take to exit by itself (`5s`, `500ms`; a
    /// bare number is seconds) [default: the profiler's].
    #[arg(long, value_parser = super::duration::seconds, value_name = "DURATION")]
    pub marker_grace: Option<Duration>,
    /// After SIGTERM: how long before SIGKILL (`5s`, `500ms`; a bare number is seconds)
    /// [default: the profiler's].
    #[arg(long, value_parser = super::duration::seconds, value_name = "DURATION")]
    pub kill_grace: Option<Duration>,
    /// What the command sees of polyprof's environment: inherit, clean, untrusted
    /// [default: `env_policy` of the configuration (`polyprof config`), else inherit].
    #[arg(long, value_name = "POLICY")]
    pub env_policy: Option<EnvPolicy>,
    /// Also pass this variable from polyprof's environment (clean/untrusted; `NAME*` is a prefix).
    #[arg(long, value_name = "NAME")]
    pub env_allow: Vec<String>,
    /// Set a variable for the command (repeatable).
    #[arg(long = "env", value_parser = EnvPair, value_name = "K=V")]
    pub env: Vec<(String, std::ffi::OsString)>,
    /// Cap of each stream's log file, MiB (head and tail are kept beyond it).
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    pub log_cap_mib: u64,
    /// Lines longer than this many bytes are cut into pieces.
    #[arg(long, value_name = "BYTES", default_value_t = polyprof::pipeline::runner::options::DEFAULT_LINE_LIMIT)]
    pub line_limit: usize,
    /// How descendants are found and ended: supervisor (every one), group, or cgroup.
    #[arg(long, value_enum, default_value_t, value_name = "MODE")]
    pub tracking: TrackingMode,
}

/// `--env NAME=VALUE`: the name is text, the value any bytes (it reaches the command as given).
#[derive(Debug, Clone, Copy)]
struct EnvPair;

impl clap::builder::TypedValueParser for EnvPair {
    type Value = (String, std::ffi::OsString);

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = value.as_bytes();
        let invalid = |why: String| {
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{why}\n"))
                .with_cmd(cmd)
        };
        let Some(eq) = bytes.iter().position(|&b| b == b'=') else {
            return Err(invalid(format!(
                "`{}` is not NAME=VALUE",
                value.to_string_lossy()
            )));
        };
        let name = std::str::from_utf8(&bytes[..eq])
            .ok()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                invalid(format!(
                    "`{}`: the variable's name must be non-empty text (its value may be any bytes)",
                    value.to_string_lossy()
                ))
            })?;
        Ok((
            name.to_string(),
            std::ffi::OsStr::from_bytes(&bytes[eq + 1..]).to_os_string(),
        ))
    }
}

impl SupervisionArgs {
    /// Apply the marker and grace overrides to the profiler settings, on top of the profiler's
    /// own defaults.
    pub fn apply_to_settings(&self, profiler: &str, dir: &Path, settings: &mut ProfilerSettings) {
        if let Some(marker) = &self.end_marker {
            settings.end_marker = Some(marker.clone());
        }
        if self.marker_grace.is_some() || self.kill_grace.is_some() {
            let defaults = settings.graces.unwrap_or_else(|| {
                profilers::create(profiler, dir, settings)
                    .map_or_else(|_| Graces::default(), |p| p.graces())
            });
            settings.graces = Some(Graces {
                marker_grace: self.marker_grace.unwrap_or(defaults.marker_grace),
                kill_grace: self.kill_grace.unwrap_or(defaults.kill_grace),
            });
        }
    }

    /// The run options, `config` giving what the flags leave out.
    pub fn run_options(&self, config: &Config) -> anyhow::Result<RunOptions> {
        let env_policy = match &self.env_policy {
            Some(policy) => policy.clone(),
            None => config.env_policy.value.parse()?,
        }
        .with_allow(self.env_allow.clone());
        let tracking = self.tracking.tracking()?;
        Ok(RunOptions {
            timeout: self.timeout,
            tracking,
            inactivity_timeout: self.inactivity_timeout,
            env_policy,
            // Text values go with the profiler's variables; others stay bytes to the child.
            extra_env: self
                .env
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.to_str()?.to_string())))
                .collect(),
            extra_env_bytes: self
                .env
                .iter()
                .filter(|(_, v)| v.to_str().is_none())
                .cloned()
                .collect(),
            log_cap: self.log_cap_mib.saturating_mul(1 << 20),
            line_limit: self.line_limit.max(1),
            ..RunOptions::default()
        })
    }
}

/// The supervising executable: the small `polyprof-supervise` next to this binary (it starts
/// fast), else this binary itself in its hidden mode.
pub fn supervisor_exe() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe().context(
        "cannot find polyprof's own executable to supervise the command (try --tracking group)",
    )?;
    let small = me.with_file_name("polyprof-supervise");
    Ok(if small.is_file() { small } else { me })
}

/// `ROOT/<profiler>.<NNN>` (ROOT: the configured output root, `./polyprof-runs` by default),
/// claimed atomically (concurrent runs get distinct ones).
fn default_output_dir(root: &Path, profiler: &str) -> anyhow::Result<PathBuf> {
    let root = root.to_path_buf();
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let prefix = format!("{profiler}.");
    let mut next = std::fs::read_dir(&root)
        .with_context(|| format!("cannot list {}", root.display()))?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix(&prefix)?
                .parse::<u32>()
                .ok()
        })
        .max()
        .map_or(0, |n| n + 1);
    loop {
        let dir = root.join(pass_label(profiler, next));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => next += 1,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
        }
    }
}

/// The profiled program's own exit code, when the profiler reported it.
fn application_exit_code(run: &ProfileRun) -> Option<i32> {
    run.diagnostics
        .iter()
        .filter(|d| d.kind == "application_error")
        .find_map(|d| profilers::ncu::diagnostics::application_exit_code(&d.message))
}

/// The exit code for a run (see docs/runner.md).
pub fn exit_code(run: &ProfileRun) -> u8 {
    exit_code_as(run, ExitCodeMode::Command)
}

/// The exit code for a run under `mode`.
pub fn exit_code_as(run: &ProfileRun, mode: ExitCodeMode) -> u8 {
    let Some(outcome) = &run.outcome else {
        return EXIT_POLYPROF_FAILED;
    };
    if mode == ExitCodeMode::Polyprof {
        match outcome {
            Outcome::Exited { code } if *code != 0 => return EXIT_COMMAND_FAILED,
            Outcome::Signalled { .. } | Outcome::SupervisorKilled { .. } => {
                return EXIT_COMMAND_FAILED;
            }
            _ => {}
        }
    }
    match outcome {
        Outcome::Exited { code: 0 } | Outcome::HungAfterMarker { passed: true, .. } => {
            if run.errors.is_empty() {
                0
            } else {
                EXIT_POLYPROF_FAILED
            }
        }
        // ncu exits with its own status when the program fails (9 after an illegal memory
        // access); its `The application returned an error code (N).` line has the program's.
        Outcome::Exited { code } => application_exit_code(run)
            .filter(|c| *c != 0)
            .unwrap_or(*code)
            .clamp(1, 255) as u8,
        Outcome::HungAfterMarker { passed: false, .. } => 1,
        // A signal polyprof did not send ended the run (the command's or its supervisor's).
        Outcome::Signalled { signal } | Outcome::SupervisorKilled { signal } => {
            (128 + *signal).clamp(129, 255) as u8
        }
        Outcome::TimedOut { .. } => EXIT_TIMEOUT,
        Outcome::Inactive { .. } => EXIT_INACTIVE,
        Outcome::Cancelled => EXIT_CANCELLED,
        Outcome::SpawnFailed { errno, .. } => match *errno {
            Some(libc::ENOENT) | Some(libc::ENOTDIR) | None => EXIT_SPAWN_FAILED,
            Some(_) => EXIT_NOT_EXECUTABLE,
        },
    }
}

/// The first Ctrl-C, SIGTERM or SIGHUP stops the run the way a timeout does (SIGTERM to the
/// group, grace, SIGKILL); the second kills at once, whatever the run is doing.
pub fn cancel_on_signals(cancel: CancellationToken, kill_now: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut streams: Vec<_> = [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ]
    .into_iter()
    .filter_map(|kind| signal(kind).ok())
    .collect();
    tokio::spawn(async move {
        if streams.is_empty() {
            return;
        }
        for token in [cancel, kill_now] {
            let any = futures_any(&mut streams);
            any.await;
            token.cancel();
        }
    });
}

/// The next signal on any of `streams`.
async fn futures_any(streams: &mut [tokio::signal::unix::Signal]) {
    std::future::poll_fn(|cx| {
        for stream in streams.iter_mut() {
            if stream.poll_recv(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Claim the output directory for this run (another live run holding it is an error), then
/// refuse it if it holds a run, unless `--force`, which removes the old run's files first.
fn claim_output_dir(dir: &Path, force: bool) -> anyhow::Result<rundir::ClaimedDir> {
    let claimed = rundir::claim(dir)?;
    if !rundir::holds_run(dir) {
        return Ok(claimed);
    }
    if !force {
        anyhow::bail!(
            "{} already holds a run; pass --force to replace it, or choose another --output-dir",
            dir.display()
        );
    }
    let removed = rundir::clear_run(dir)
        .with_context(|| format!("cannot clear the old run in {}", dir.display()))?;
    for path in removed {
        tracing::debug!(path = %path.display(), "--force: removed the old run's file");
    }
    Ok(claimed)
}

/// `--json` when the run cannot start (unknown profiler, bad configuration, the run directory
/// cannot be claimed): stdout still gets one JSON document, `errors` typed with run.json's
/// kinds, and the message goes to stderr as without `--json`.
pub fn print_start_failure(
    target: &[std::ffi::OsString],
    output_dir: Option<&Path>,
    error: &anyhow::Error,
    default_kind: polyprof::model::run_error::ErrorKind,
) -> anyhow::Result<u8> {
    use polyprof::model::run_error::ErrorKind;
    let kind = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<polyprof::Error>())
        .map_or(default_kind, ErrorKind::of);
    let mut message = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if !message.contains(&part) {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(&part);
        }
    }
    let document = serde_json::json!({
        "schema_version": polyprof::model::run::SCHEMA_VERSION,
        "polyprof_version": env!("CARGO_PKG_VERSION"),
        "started": false,
        "target": polyprof::model::arg::args(target),
        "output_dir": output_dir.map(|d| d.display().to_string()),
        "outcome": null,
        "errors": [{"kind": kind, "message": message}],
    });
    super::report_error(error);
    super::output::println(&serde_json::to_string_pretty(&document)?)?;
    Ok(super::EXIT_USAGE)
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    use polyprof::model::run_error::ErrorKind;
    let not_started = |error: anyhow::Error, kind: ErrorKind| -> anyhow::Result<u8> {
        if args.json {
            print_start_failure(&args.command, args.output_dir.as_deref(), &error, kind)
        } else {
            Err(error)
        }
    };
    let profiler = args.profiler.trim().to_ascii_lowercase();
    if profiler != "none" && !profilers::PROFILER_NAMES.contains(&profiler.as_str()) {
        return not_started(
            anyhow::anyhow!(
                "unknown profiler `{profiler}`; valid: none, {} (`polyprof doctor` lists them)",
                profilers::PROFILER_NAMES.join(", ")
            ),
            ErrorKind::Usage,
        );
    }
    let config = match Config::load() {
        Ok(config) => config,
        Err(error) => return not_started(error.into(), ErrorKind::Config),
    };
    let mut run_options = match args.supervision.run_options(&config) {
        Ok(options) => options,
        Err(error) => return not_started(error, ErrorKind::Usage),
    };
    let claimed = match &args.output_dir {
        Some(dir) => claim_output_dir(dir, args.force),
        None => default_output_dir(&config.output_root.value, &profiler)
            .and_then(|dir| Ok(rundir::claim(&dir)?)),
    };
    let claimed = match claimed {
        Ok(claimed) => claimed,
        Err(error) => return not_started(error, ErrorKind::Io),
    };
    let output_dir = claimed.dir.clone();
    let mut ncu = args.ncu.clone();
    ncu.clock_control
        .get_or_insert_with(|| config.clock_control.value.clone());
    let mut settings = ProfilerSettings {
        ncu: ncu.to_options(),
        ..ProfilerSettings::default()
    };
    args.supervision
        .apply_to_settings(&profiler, &output_dir, &mut settings);
    if !args.quiet {
        // As `time(1)` and `ncu`: the command's stdout on stdout, its stderr on stderr. With
        // `--json` stdout is the document's alone, so both streams are echoed to stderr. On a
        // terminal a status line (elapsed time, the profiler, the last line) sits under the
        // echo on stderr; never in a pipe or a file.
        let status = std::io::IsTerminal::is_terminal(&std::io::stderr())
            .then(|| format!("polyprof run [{profiler}]"));
        let stdout = (!args.json).then(std::io::stdout);
        run_options.echo =
            Echo::spawn_split(stdout, std::io::stderr(), echo::DEFAULT_QUEUE_BYTES, status).ok();
        if let Some(echo) = &run_options.echo
            && !args.json
        {
            // `polyprof run -- ./app | head`: once the reader is gone the run is stopped as a
            // shell pipeline's SIGPIPE would stop the app (SIGTERM, kill grace, run.json).
            echo.cancel_when_stdout_closes(run_options.cancel.clone());
        }
    }
    cancel_on_signals(run_options.cancel.clone(), run_options.kill_now.clone());
    let echo = run_options.echo.clone();
    let job = Job {
        target: args
            .command
            .iter()
            .map(polyprof::model::Arg::from)
            .collect(),
        profiler,
        settings,
        output_dir,
        label: args.label.clone(),
        run: run_options,
        call_path: Vec::new(),
        profile_cache: args.profile_cache.options()?,
    };
    // Whatever the tracking mode: a container must not outlive a polyprof killed hard.
    let target = args.container.target(supervisor_exe().ok()).await?;
    let run = profile_claimed(&job, &target, &claimed).await;
    if let Some(echo) = &echo {
        echo.end_status();
        echo.flush(Duration::from_secs(1));
        let dropped = echo.dropped_bytes();
        if dropped > 0 {
            // Through the echo's own queue: stderr may be the very pipe nobody reads.
            echo.offer(format!(
                "polyprof: the echo fell behind its reader; {dropped} bytes were not echoed (every byte is in the logs)\n"
            ).as_bytes());
            echo.flush(Duration::from_millis(200));
        }
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &run).context("cannot print the run document")?;
        writeln!(out)?;
        out.flush()?;
    } else {
        // polyprof's own lines go to stderr, so stdout carries only the command's output. In
        // one write: stderr is unbuffered, and a write per piece cost ~0.1 ms (issue 37).
        let mut summary = Vec::new();
        let _ = print_summary(&mut summary, &run);
        let _ = std::io::stderr().lock().write_all(&summary);
    }
    if echo.is_some_and(|echo| echo.stdout_broken_pipe()) {
        // The reader of stdout (`… | head`) is gone; run.json is written.
        return Ok(super::EXIT_BROKEN_PIPE);
    }
    Ok(exit_code_as(&run, args.exit_code))
}

fn stream_line(name: &str, capture: &StreamCapture) -> String {
    let mut text = format!(
        "{name}: {} lines, {} bytes",
        capture.lines, capture.total_bytes
    );
    if let Some(path) = &capture.log_path {
        text.push_str(&format!(" → {}", path.display()));
    }
    if capture.log_truncated {
        text.push_str(" (log capped: head and tail kept)");
    }
    if capture.long_lines_split {
        text.push_str(" (long lines split)");
    }
    text
}

/// The summary on `out`: its names, paths, the end marker's line and the messages (a tool's or
/// the workload's text) shown, never sent to the terminal.
fn print_summary(out: &mut impl Write, run: &ProfileRun) -> std::io::Result<()> {
    out.write_all(polyprof::results::escape::terminal::text(&summary(run)).as_bytes())
}

fn summary(run: &ProfileRun) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let outcome = run
        .outcome
        .as_ref()
        .map_or_else(|| "did not run".to_string(), |o| o.to_string());
    let attempt = run.steps.iter().rev().find_map(|s| s.attempts.last());
    let elapsed = attempt.map_or(0.0, |a| a.timings.end_s);
    let _ = writeln!(
        out,
        "polyprof run [{}]: {outcome} (wall {elapsed:.3} s)",
        run.profiler.name
    );
    let _ = writeln!(out, "  run directory: {}", run.output_dir.display());
    if let Some(attempt) = attempt {
        let _ = writeln!(out, "  {}", stream_line("stdout", &attempt.stdout));
        let _ = writeln!(out, "  {}", stream_line("stderr", &attempt.stderr));
        if let Some(marker) = &attempt.marker {
            let _ = writeln!(out, "  end marker at {:.3} s: {}", marker.at_s, marker.line);
        }
    }
    if !run.kernels.is_empty() {
        let _ = writeln!(out, "  kernels: {}", run.kernels.len());
    }
    for warning in &run.warnings {
        let _ = writeln!(out, "  warning: {warning}");
    }
    for error in &run.errors {
        let _ = writeln!(out, "  error: {error}");
    }
    out
}

#[cfg(test)]
mod verdict_tests {
    use super::*;
    use polyprof::model::parsed::{Diagnostic, Severity};

    fn run_with(outcome: Outcome, diagnostic: Option<&str>) -> ProfileRun {
        let mut run = ProfileRun::new("ncu.000", "ncu", &[], Path::new("x"));
        run.outcome = Some(outcome);
        if let Some(message) = diagnostic {
            run.diagnostics.push(Diagnostic {
                severity: Severity::Error,
                kind: "application_error".to_string(),
                message: message.to_string(),
                hint: None,
                metric: None,
            });
            run.fail(
                polyprof::model::ErrorKind::Diagnostic,
                format!("application_error: {message}"),
            );
        }
        run
    }

    #[test]
    fn the_programs_own_exit_code_wins_over_ncus() {
        // tests/fixtures/ncu-h200/app_exit_3.stdout's line, with ncu exiting 9.
        let run = run_with(
            Outcome::Exited { code: 9 },
            Some("The application returned an error code (3)."),
        );
        assert_eq!(exit_code(&run), 3);
        assert_eq!(exit_code(&run_with(Outcome::Exited { code: 9 }, None)), 9);
        // An error diagnostic with exit 0 is still a failed run.
        let run = run_with(
            Outcome::Exited { code: 0 },
            Some("The application returned an error code (0)."),
        );
        assert_eq!(exit_code(&run), EXIT_POLYPROF_FAILED);
    }
}
