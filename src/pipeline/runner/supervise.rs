//! The supervision of one run, in named phases: prepare (environment, logs, the command),
//! spawn (the child and its readers), supervise (wait for exit while both streams drain, watch
//! the end marker, the timeouts and cancellation), terminate (SIGTERM, grace, SIGKILL), drain
//! and detect leaks (a typed [`LeakInfo`]), assemble the result.

use std::os::fd::{AsRawFd, OwnedFd};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, trace};

use super::capture::{Shared, StreamSetup, StreamState};
use super::env::build_env;
use super::logfile::{CopyWriter, LogWriter};
use super::marker::Detector;
use super::options::{RunOptions, StreamKind, Tracking};
use super::reader::read_stream;
use super::spawn::{GroupGuard, Launch, build_command, enlarge_pipe, signal_group, spawn};
use super::supervisor::{self, ChildStatus, Report};
use super::tree;
use crate::model::outcome::{
    Escape, KilledProcess, MarkerSeen, Outcome, RunResult, StreamCapture, Timings,
};
use crate::model::plan::CommandSpec;

/// After the group got SIGKILL because of a leak: how long the pipes may still take to close.
const AFTER_KILL_WAIT: Duration = Duration::from_millis(500);
/// After the supervisor was told to kill everything: how long it may take before the group
/// gets SIGKILL directly.
const SUPERVISOR_KILL_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Timeout,
    Inactive,
    Marker,
    Cancel,
}

/// What the leak check found after the command's leader was gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeakInfo {
    /// Nothing outlived the command.
    NoLeak,
    /// Processes outlived it (they were killed) or something held the output pipes.
    Leaked {
        killed: Vec<KilledProcess>,
        /// More were killed than listed.
        unlisted: u64,
        /// The pipes were still open when the leak timeout ran out.
        held_pipes: bool,
        /// Still open after the kill: a process out of polyprof's reach holds them.
        pipes_outside_reach: bool,
    },
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// `at + d`, or None (never) when that is past what the clock can hold.
fn later(at: Instant, d: Duration) -> Option<Instant> {
    at.checked_add(d)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

type Reader = JoinHandle<(StreamCapture, Vec<String>)>;

/// Everything needed to start the child.
struct Prepared {
    cmd: tokio::process::Command,
    detector: Arc<Detector>,
    logs: (Option<LogWriter>, Option<LogWriter>),
    copy: Option<CopyWriter>,
    /// Read end of the supervisor's report pipe.
    report: Option<OwnedFd>,
    /// Write end, closed in polyprof once the child has it.
    report_write: Option<OwnedFd>,
}

/// A started child and what watches it.
struct Running {
    child: tokio::process::Child,
    pgid: i32,
    supervised: bool,
    report: Option<OwnedFd>,
    stop_readers: CancellationToken,
    guard: GroupGuard,
    readers: (Option<Reader>, Option<Reader>),
    shared: Arc<Shared>,
    marker_rx: mpsc::UnboundedReceiver<MarkerSeen>,
}

pub(crate) fn new_result(spec: &CommandSpec) -> RunResult {
    RunResult {
        argv: spec.argv.clone(),
        outcome: Outcome::Cancelled,
        pid: None,
        marker: None,
        timings: Timings::default(),
        leaked: false,
        killed: Vec::new(),
        stdout: StreamCapture::default(),
        stderr: StreamCapture::default(),
        warnings: Vec::new(),
    }
}

pub(crate) fn spawn_failed(
    mut result: RunResult,
    start: Instant,
    error: String,
    errno: Option<i32>,
) -> RunResult {
    result.outcome = Outcome::SpawnFailed { error, errno };
    result.timings.spawn_s = secs(start.elapsed());
    result.timings.end_s = result.timings.spawn_s;
    result
}

/// Run one command under supervision. Never panics and never loses what was captured: every
/// path ends with the group stopped, the leader reaped, and the result filled.
pub async fn run_command(spec: &CommandSpec, opts: &RunOptions) -> RunResult {
    let start = Instant::now();
    let mut result = new_result(spec);
    let prepared = match prepare(spec, opts, &mut result.warnings) {
        Ok(prepared) => prepared,
        Err((error, errno)) => return spawn_failed(result, start, error, errno),
    };
    let mut running = match spawn_child(prepared, opts, start).await {
        Ok(running) => running,
        Err(e) => {
            let program = spec
                .argv
                .first()
                .map(|a| a.to_string_lossy())
                .unwrap_or_default();
            let errno = e.raw_os_error();
            return spawn_failed(
                result,
                start,
                format!("cannot start `{program}`: {e}"),
                errno,
            );
        }
    };
    result.pid = running.child.id();
    result.timings.spawn_s = secs(start.elapsed());
    debug!(
        argv = %crate::model::arg::lossy(&spec.argv).join(" "),
        pid = running.pgid,
        cwd = ?spec.cwd,
        tracking = tracking_name(&opts.tracking),
        timeout_s = opts.timeout.map(secs),
        inactivity_timeout_s = opts.inactivity_timeout.map(secs),
        "spawned the command"
    );

    let waited = supervise(&mut running, opts, start, &mut result).await;
    let (status, stopped) = match waited {
        Ok(status) => (status, false),
        Err(stop) => {
            debug!(pid = running.pgid, reason = ?stop, "stopping the run");
            result.outcome = stopped_outcome(stop, opts, result.marker.as_ref());
            result
                .warnings
                .extend(stop_warning(stop, opts, result.marker.as_ref()));
            let status = terminate(&mut running, stop, opts, &mut result.warnings).await;
            (status, true)
        }
    };
    result.timings.exit_s = Some(secs(start.elapsed()));
    let report = running.report.take().and_then(supervisor::read_report);
    if running.supervised && report.is_none() && status.is_ok() {
        result.warnings.push(
            "the supervising process sent no report; its own exit status is used".to_string(),
        );
    }
    if let Some(Report {
        cgroup: Some(dir),
        cgroup_left: true,
        ..
    }) = &report
    {
        result.warnings.push(format!(
            "the run's cgroup {} could not be removed: something in it did not die",
            dir.display()
        ));
    }
    let supervisor_lost = running.supervised && report.is_none();
    settle_outcome(&mut result, spec, status, stopped, report.as_ref());
    if supervisor_lost && let Outcome::Signalled { signal } = result.outcome {
        // What ended was the supervisor, not (as far as anyone knows) the command.
        debug!(
            supervisor = running.pgid,
            signal, "the supervisor was killed"
        );
        result.outcome = Outcome::SupervisorKilled { signal };
        result
            .warnings
            .retain(|w| !w.starts_with("the supervising process sent no report"));
        result.warnings.push(format!(
            "the supervising process (pid {}) was killed by signal {signal} that polyprof did not send (a command that kills its parent, the OOM killer); the command's own status is unknown, and what was left of its processes was killed",
            running.pgid
        ));
    }
    let (leak, captures) = drain_and_detect_leaks(&mut running, opts, report).await;
    let result = assemble(result, running, opts, leak, captures, start);
    debug!(
        outcome = %result.outcome,
        leaked = result.leaked,
        killed = result.killed.len(),
        end_s = result.timings.end_s,
        "the run ended"
    );
    result
}

fn tracking_name(tracking: &Tracking) -> &'static str {
    match tracking {
        Tracking::Group => "group",
        Tracking::Supervisor { .. } => "supervisor",
        Tracking::Cgroup { .. } => "cgroup",
    }
}

fn prepare(
    spec: &CommandSpec,
    opts: &RunOptions,
    warnings: &mut Vec<String>,
) -> Result<Prepared, (String, Option<i32>)> {
    let detector = Detector::new(&opts.end_marker).map_err(|e| (e.to_string(), None))?;
    let mut extra = opts.extra_env.clone();
    extra.extend(spec.env.clone());
    let (parent, not_utf8): (Vec<_>, Vec<_>) =
        std::env::vars_os().partition(|(k, v)| k.to_str().is_some() && v.to_str().is_some());
    let parent = parent
        .into_iter()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    let env = build_env(&opts.env_policy, parent, &extra);
    // Bytes stay bytes: a variable that is not UTF-8 passes exactly when the policy would pass
    // its name (and nothing set for the command replaces it).
    let mut raw_env: Vec<_> = not_utf8
        .into_iter()
        .filter(|(name, _)| match name.to_str() {
            Some(name) => !env.vars.contains_key(name) && opts.env_policy.passes_inherited(name),
            None => matches!(opts.env_policy, super::env::EnvPolicy::Inherit),
        })
        .collect();
    let mut env = env;
    for (name, value) in &opts.extra_env_bytes {
        // The command's own variables win; the policy withholds credential-like names here too.
        if spec.env.contains_key(name) || !opts.env_policy.passes_explicit(name) {
            continue;
        }
        env.vars.remove(name);
        raw_env.retain(|(k, _)| k.to_str() != Some(name.as_str()));
        raw_env.push((name.into(), value.clone()));
    }
    if !env.dropped_credentials.is_empty() {
        warnings.push(format!(
            "environment policy `{}` withheld credential-like variables: {}",
            opts.env_policy,
            env.dropped_credentials.join(", ")
        ));
    }
    let (report, report_write) = match &opts.tracking {
        Tracking::Group => (None, None),
        Tracking::Supervisor { .. } | Tracking::Cgroup { .. } => {
            let (read, write) = report_pipe().map_err(|e| {
                (
                    format!("cannot create the supervisor's report pipe: {e}"),
                    None,
                )
            })?;
            let _ = nix::fcntl::fcntl(
                &read,
                nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
            );
            enlarge_pipe(read.as_raw_fd());
            (Some(read), Some(write))
        }
    };
    let launch = match (opts.tracking.supervisor_exe(), &report_write) {
        (Some(exe), Some(write)) => Some(Launch {
            exe,
            leak_timeout: opts.leak_timeout,
            kill_grace: opts.graces.kill_grace,
            report_fd: write.as_raw_fd(),
            cgroup: matches!(opts.tracking, Tracking::Cgroup { .. }),
        }),
        _ => None,
    };
    let cmd = build_command(spec, &env.vars, &raw_env, opts.parent_death_signal, launch)
        .map_err(|e| (e.to_string(), None))?;
    let logs = open_logs(opts, warnings);
    let copy = opts
        .stdout_file
        .as_ref()
        .and_then(|path| match CopyWriter::create(path) {
            Ok(copy) => Some(copy),
            Err(e) => {
                warnings.push(format!(
                    "cannot create {}: {e}; stdout is still in the log",
                    path.display()
                ));
                None
            }
        });
    Ok(Prepared {
        cmd,
        detector: Arc::new(detector),
        logs,
        copy,
        report,
        report_write,
    })
}

async fn spawn_child(
    prepared: Prepared,
    opts: &RunOptions,
    start: Instant,
) -> std::io::Result<Running> {
    let Prepared {
        cmd,
        detector,
        logs: (stdout_log, stderr_log),
        copy,
        report,
        report_write,
    } = prepared;
    let mut child = spawn(cmd, report_write.as_ref().map(|fd| fd.as_raw_fd())).await?;
    // Only the supervisor may hold the write end, so the report ends at its exit.
    drop(report_write);
    let supervised = report.is_some();
    let pgid = child.id().unwrap_or_default() as i32;
    let stop_readers = CancellationToken::new();
    let guard = GroupGuard::new(pgid, stop_readers.clone(), supervised);

    let (marker_tx, marker_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared::new(start, marker_tx));
    let setup = |kind, log, copy| StreamSetup::for_run(opts, kind, &shared, &detector, log, copy);
    let stdout_reader: Option<Reader> = child.stdout.take().map(|pipe| {
        enlarge_pipe(pipe.as_raw_fd());
        let state = StreamState::new(setup(StreamKind::Stdout, stdout_log, copy));
        tokio::spawn(read_stream(pipe, state, stop_readers.clone(), "stdout"))
    });
    let stderr_reader: Option<Reader> = child.stderr.take().map(|pipe| {
        enlarge_pipe(pipe.as_raw_fd());
        let state = StreamState::new(setup(StreamKind::Stderr, stderr_log, None));
        tokio::spawn(read_stream(pipe, state, stop_readers.clone(), "stderr"))
    });
    Ok(Running {
        child,
        pgid,
        supervised,
        report,
        stop_readers,
        guard,
        readers: (stdout_reader, stderr_reader),
        shared,
        marker_rx,
    })
}

/// Wait for the leader while the readers drain both pipes; Err says why it must be stopped.
async fn supervise(
    running: &mut Running,
    opts: &RunOptions,
    start: Instant,
    result: &mut RunResult,
) -> Result<std::io::Result<ExitStatus>, Stop> {
    let deadline = opts.timeout.and_then(|t| later(start, t));
    let mut marker_deadline: Option<Instant> = None;
    let mut inactivity_deadline = opts.inactivity_timeout.and_then(|t| later(start, t));
    loop {
        tokio::select! {
            biased;
            status = running.child.wait() => return Ok(status),
            Some(seen) = running.marker_rx.recv(), if result.marker.is_none() => {
                debug!(line = %seen.line, passed = seen.passed, at_s = seen.at_s, grace_s = secs(opts.graces.marker_grace), "end marker seen; the marker grace starts");
                marker_deadline = Duration::try_from_secs_f64(seen.at_s)
                    .ok()
                    .and_then(|at| later(start, at))
                    .and_then(|at| later(at, opts.graces.marker_grace));
                result.timings.marker_s = Some(seen.at_s);
                result.marker = Some(seen);
            }
            _ = opts.cancel.cancelled() => {
                debug!("the run was cancelled");
                return Err(Stop::Cancel);
            }
            _ = opts.kill_now.cancelled() => {
                debug!("the run was told to stop at once");
                return Err(Stop::Cancel);
            }
            _ = sleep_until_opt(deadline) => {
                debug!(after_s = opts.timeout.map(secs), "the overall timeout fired");
                return Err(Stop::Timeout);
            }
            _ = sleep_until_opt(marker_deadline) => {
                debug!(grace_s = secs(opts.graces.marker_grace), "the process did not exit within the marker grace");
                return Err(Stop::Marker);
            }
            _ = sleep_until_opt(inactivity_deadline), if result.marker.is_none() => {
                let limit = opts.inactivity_timeout.unwrap_or_default();
                match later(running.shared.last_output(), limit) {
                    Some(due) if Instant::now() < due => inactivity_deadline = Some(due),
                    Some(_) => {
                        debug!(after_s = secs(limit), "the inactivity timeout fired");
                        return Err(Stop::Inactive);
                    }
                    None => inactivity_deadline = None,
                }
            }
        }
    }
}

/// SIGKILL for everything the run started: through the supervisor when there is one (it knows
/// the processes that left the group), then the group itself.
async fn kill_everything(running: &mut Running) -> std::io::Result<ExitStatus> {
    if running.supervised {
        debug!(
            supervisor = running.pgid,
            "asking the supervisor to SIGKILL the whole tree"
        );
        // SAFETY: kill on the supervisor's pid, which is not reaped yet (we are its parent).
        unsafe {
            libc::kill(running.pgid, supervisor::KILL_NOW);
        }
        if let Ok(status) = tokio::time::timeout(SUPERVISOR_KILL_WAIT, running.child.wait()).await {
            signal_group(running.pgid, Signal::SIGKILL);
            return status;
        }
        debug!(
            supervisor = running.pgid,
            wait_s = secs(SUPERVISOR_KILL_WAIT),
            "the supervisor did not end in time"
        );
    }
    debug!(pgid = running.pgid, "SIGKILL to the process group");
    signal_group(running.pgid, Signal::SIGKILL);
    running.child.wait().await
}

/// SIGTERM to the group, the kill grace while the readers keep draining, then SIGKILL; always
/// reaps the leader. A second stop request (or `kill_now`) does not wait for the grace.
async fn terminate(
    running: &mut Running,
    stop: Stop,
    opts: &RunOptions,
    warnings: &mut Vec<String>,
) -> std::io::Result<ExitStatus> {
    if opts.kill_now.is_cancelled() {
        warnings.push("stopped at once (second stop request): killed with SIGKILL".to_string());
        return kill_everything(running).await;
    }
    let grace = opts.graces.kill_grace;
    debug!(pgid = running.pgid, reason = ?stop, grace_s = secs(grace), "SIGTERM to the process group; the kill grace starts");
    signal_group(running.pgid, Signal::SIGTERM);
    let deadline = later(Instant::now(), grace);
    tokio::select! {
        biased;
        status = running.child.wait() => {
            // The supervisor waits for the whole tree itself. Without it, the leader may be a
            // launcher that died at once while the profiler below it is still writing its
            // results: the grace is for the whole group.
            if running.supervised || group_exited_within(running.pgid, deadline, opts).await {
                debug!(pgid = running.pgid, "the process tree exited within the kill grace");
                return status;
            }
            debug!(pgid = running.pgid, grace_s = secs(grace), "the group outlived its leader past the kill grace: SIGKILL");
            warnings.push(format!("the process group did not exit within {:.3} s of SIGTERM and was killed with SIGKILL", secs(grace)));
            signal_group(running.pgid, Signal::SIGKILL);
            return status;
        }
        _ = sleep_until_opt(deadline) => {
            debug!(pgid = running.pgid, grace_s = secs(grace), "the kill grace ran out");
            warnings.push(format!("the process group did not exit within {:.3} s of SIGTERM and was killed with SIGKILL", secs(grace)));
        }
        _ = opts.kill_now.cancelled() => {
            warnings.push("a second stop request during the kill grace: killed with SIGKILL".to_string());
        }
        _ = opts.cancel.cancelled(), if stop != Stop::Cancel => {
            warnings.push("cancelled during the kill grace: killed with SIGKILL".to_string());
        }
    }
    kill_everything(running).await
}

/// After the leader is gone: wait until no process is left in group `pgid` (true), or until
/// `deadline`, a second stop request or a cancellation (false).
async fn group_exited_within(pgid: i32, deadline: Option<Instant>, opts: &RunOptions) -> bool {
    let poll = async {
        while super::orphans::group_alive_reaping_adopted(pgid) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::select! {
        biased;
        () = poll => true,
        _ = sleep_until_opt(deadline) => false,
        _ = opts.kill_now.cancelled() => false,
    }
}

/// The outcome from the leader's status (or the supervisor's report of the command's status).
fn settle_outcome(
    result: &mut RunResult,
    spec: &CommandSpec,
    status: std::io::Result<ExitStatus>,
    stopped: bool,
    report: Option<&Report>,
) {
    use std::os::unix::process::ExitStatusExt;
    if let Some((message, errno)) = report.and_then(|r| r.spawn_error.clone()) {
        let program = spec
            .argv
            .first()
            .map(|a| a.to_string_lossy())
            .unwrap_or_default();
        result.outcome = Outcome::SpawnFailed {
            error: format!("cannot start `{program}`: {message}"),
            errno,
        };
        return;
    }
    let reported = report.and_then(|r| r.status);
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            result
                .warnings
                .push(format!("waiting for the process failed: {e}"));
            return;
        }
    };
    let status = reported.unwrap_or(match (status.code(), status.signal()) {
        (Some(code), _) => ChildStatus::Exited(code),
        (None, Some(signal)) => ChildStatus::Signalled(signal),
        (None, None) => ChildStatus::Exited(-1),
    });
    match (status, stopped) {
        (ChildStatus::Exited(code), false) => result.outcome = Outcome::Exited { code },
        (ChildStatus::Signalled(signal), false) => result.outcome = Outcome::Signalled { signal },
        (ChildStatus::Exited(code), true) => result.warnings.push(format!(
            "after being stopped the process exited with code {code}"
        )),
        (ChildStatus::Signalled(_), true) => {}
    }
}

/// The leader is gone; its group, the processes that left it, and the pipes may not be.
async fn drain_and_detect_leaks(
    running: &mut Running,
    opts: &RunOptions,
    report: Option<Report>,
) -> (LeakInfo, (Option<ReaderOutput>, Option<ReaderOutput>)) {
    let (stdout_reader, stderr_reader) = (running.readers.0.take(), running.readers.1.take());
    let readers = async move {
        let out = match stdout_reader {
            Some(h) => h.await.ok(),
            None => None,
        };
        let err = match stderr_reader {
            Some(h) => h.await.ok(),
            None => None,
        };
        (out, err)
    };
    let mut readers = Box::pin(readers);
    let supervisor_died = running.supervised && report.is_none();
    let (mut killed, mut unlisted) = report
        .map(|r| (r.killed, r.killed_unlisted))
        .unwrap_or_default();
    if supervisor_died {
        debug!(
            supervisor = running.pgid,
            "the supervisor ended without a report"
        );
        // The supervisor was killed before it could end the tree; what it put in a cgroup can
        // still be found and ended here (the rest is re-parented to init, out of reach).
        killed.extend(kill_orphaned_cgroup(running.pgid));
        // The rest came to polyprof when it is a subreaper (the CLI is).
        for orphan in super::orphans::kill_adopted(running.pgid) {
            if !killed.iter().any(|k| k.pid == orphan.pid) {
                killed.push(orphan);
            }
        }
    }
    let leak_deadline = later(Instant::now(), opts.leak_timeout);
    trace!(
        pgid = running.pgid,
        leak_timeout_s = secs(opts.leak_timeout),
        reported_killed = killed.len(),
        "draining the pipes; the leak sweep starts"
    );
    let kill_now = opts.kill_now.clone();
    let drained = tokio::select! {
        done = &mut readers => Some(done),
        _ = sleep_until_opt(leak_deadline) => None,
        _ = kill_now.cancelled() => None,
    };
    let members = |pgid| {
        // Probe first: reading all of /proc is only worth it when the group still exists.
        if signal_group_exists(pgid) {
            tree::group_members(&tree::snapshot(), pgid)
        } else {
            Vec::new()
        }
    };
    let mut leftovers = members(running.pgid);
    while !leftovers.is_empty()
        && !kill_now.is_cancelled()
        && leak_deadline.is_none_or(|at| Instant::now() < at)
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
        leftovers = members(running.pgid);
    }
    for proc in &leftovers {
        killed.push(tree::describe(proc, Escape::InGroup));
    }
    if drained.is_none() || !leftovers.is_empty() {
        debug!(
            pgid = running.pgid,
            left_in_group = leftovers.len(),
            pipes_open = drained.is_none(),
            "leak sweep: SIGKILL to the process group"
        );
        signal_group(running.pgid, Signal::SIGKILL);
    }
    let mut pipes_outside_reach = false;
    let held_pipes = drained.is_none();
    let captures = match drained {
        Some(done) => done,
        None => match tokio::time::timeout(AFTER_KILL_WAIT, &mut readers).await {
            Ok(done) => done,
            Err(_) => {
                debug!("the output pipes are held by a process out of reach; reading stops");
                // Something out of reach holds the pipes: keep what was read, let go.
                pipes_outside_reach = true;
                running.stop_readers.cancel();
                readers.await
            }
        },
    };
    running.guard.disarm();
    // Members that polyprof adopted (it is a subreaper) and that have exited are reaped.
    super::orphans::group_alive_reaping_adopted(running.pgid);
    for k in &killed {
        debug!(pid = k.pid, argv = %k.argv.join(" "), escaped = %k.escaped, "killed a process the command left behind");
    }
    let leak = if killed.is_empty() && unlisted == 0 && !held_pipes {
        LeakInfo::NoLeak
    } else {
        killed.dedup_by_key(|k| k.pid);
        LeakInfo::Leaked {
            killed: std::mem::take(&mut killed),
            unlisted: std::mem::take(&mut unlisted),
            held_pipes,
            pipes_outside_reach,
        }
    };
    (leak, captures)
}

/// Kill and remove the cgroup of a supervisor (pid `supervisor`) that died without doing so.
fn kill_orphaned_cgroup(supervisor: i32) -> Vec<KilledProcess> {
    let Some(cgroup) = super::cgroup::RunCgroup::of_supervisor(supervisor as u32) else {
        return Vec::new();
    };
    // SAFETY: getsid on this process.
    let session = unsafe { libc::getsid(0) };
    let killed = cgroup
        .pids()
        .into_iter()
        .filter_map(tree::read_proc)
        .map(|proc| {
            let escaped = tree::classify(&proc, supervisor, session, supervisor);
            tree::describe(&proc, escaped)
        })
        .collect();
    cgroup.kill_and_remove(Duration::from_secs(1));
    killed
}

fn signal_group_exists(pgid: i32) -> bool {
    pgid > 0 && nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), None).is_ok()
}

type ReaderOutput = (StreamCapture, Vec<String>);

fn leak_warnings(leak: &LeakInfo, opts: &RunOptions) -> Vec<String> {
    let LeakInfo::Leaked {
        killed,
        unlisted,
        held_pipes,
        pipes_outside_reach,
    } = leak
    else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    if !killed.is_empty() {
        let more = if *unlisted > 0 {
            format!(" and {unlisted} more")
        } else {
            String::new()
        };
        warnings.push(format!(
            "{} process(es){more} outlived the leader by {:.3} s and were killed: {}",
            killed.len() as u64 + unlisted,
            secs(opts.leak_timeout),
            supervisor::describe_killed(killed)
        ));
    }
    if *held_pipes && killed.is_empty() {
        warnings.push(format!(
            "the output pipes stayed open {:.3} s after the command exited; the group was killed",
            secs(opts.leak_timeout)
        ));
    }
    if *pipes_outside_reach {
        warnings.push("the output pipes stayed open after the group was killed (a process out of reach holds them); reading stopped".to_string());
    }
    warnings
}

fn assemble(
    mut result: RunResult,
    mut running: Running,
    opts: &RunOptions,
    leak: LeakInfo,
    (out, err): (Option<ReaderOutput>, Option<ReaderOutput>),
    start: Instant,
) -> RunResult {
    result.warnings.extend(leak_warnings(&leak, opts));
    if let LeakInfo::Leaked { killed, .. } = leak {
        result.leaked = true;
        result.killed = killed;
    }
    // A marker found while the leader was exiting (or in the last bytes) still counts.
    if result.marker.is_none()
        && let Ok(seen) = running.marker_rx.try_recv()
    {
        result.timings.marker_s = Some(seen.at_s);
        result.marker = Some(seen);
    }
    for (slot, got, name) in [
        (&mut result.stdout, out, "stdout"),
        (&mut result.stderr, err, "stderr"),
    ] {
        match got {
            Some((capture, warnings)) => {
                *slot = capture;
                result.warnings.extend(warnings);
            }
            None => result.warnings.push(format!("{name} was not captured")),
        }
    }
    result.timings.first_output_s = running.shared.first_output_s();
    result.timings.end_s = secs(start.elapsed());
    result
}

pub(crate) fn open_logs(
    opts: &RunOptions,
    warnings: &mut Vec<String>,
) -> (Option<LogWriter>, Option<LogWriter>) {
    let Some(dir) = &opts.log_dir else {
        return (None, None);
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        warnings.push(format!(
            "cannot create log directory {}: {e}; output is kept in memory only",
            dir.display()
        ));
        return (None, None);
    }
    let mut open = |stream: &str| {
        let path = dir.join(format!("{}.{stream}.log", opts.log_name));
        match LogWriter::create(&path, opts.log_cap) {
            Ok(log) => Some(log),
            Err(e) => {
                warnings.push(format!("cannot create {}: {e}", path.display()));
                None
            }
        }
    };
    (open("stdout"), open("stderr"))
}

pub(crate) fn stopped_outcome(
    stop: Stop,
    opts: &RunOptions,
    marker: Option<&MarkerSeen>,
) -> Outcome {
    match (stop, marker) {
        (Stop::Timeout, _) => Outcome::TimedOut {
            after_s: opts.timeout.map(secs).unwrap_or_default(),
        },
        (Stop::Inactive, _) => Outcome::Inactive {
            after_s: opts.inactivity_timeout.map(secs).unwrap_or_default(),
        },
        (Stop::Marker, Some(seen)) => Outcome::HungAfterMarker {
            marker_line: seen.line.clone(),
            passed: seen.passed,
        },
        (Stop::Marker, None) | (Stop::Cancel, _) => Outcome::Cancelled,
    }
}

pub(crate) fn stop_warning(
    stop: Stop,
    opts: &RunOptions,
    marker: Option<&MarkerSeen>,
) -> Option<String> {
    Some(match (stop, marker) {
        (Stop::Marker, Some(seen)) if seen.passed => format!(
            "passed, then hung: the end marker said the work passed but the process did not exit within the {:.3} s marker grace and was stopped",
            secs(opts.graces.marker_grace)
        ),
        (Stop::Marker, _) => format!(
            "the end marker was seen (not a pass) and the process did not exit within the {:.3} s marker grace; it was stopped",
            secs(opts.graces.marker_grace)
        ),
        (Stop::Timeout, _) => format!(
            "timed out after {:.3} s; the output captured so far is kept",
            opts.timeout.map(secs).unwrap_or_default()
        ),
        (Stop::Inactive, _) => format!(
            "no output for {:.3} s; the process was stopped and the output so far is kept",
            opts.inactivity_timeout.map(secs).unwrap_or_default()
        ),
        (Stop::Cancel, _) => return None,
    })
}

/// A close-on-exec pipe (`pipe2` on Linux; `pipe` + `fcntl` where there is no `pipe2`).
fn report_pipe() -> nix::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    #[cfg(target_os = "linux")]
    {
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let (read, write) = nix::unistd::pipe()?;
        for fd in [&read, &write] {
            nix::fcntl::fcntl(
                fd,
                nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
            )?;
        }
        Ok((read, write))
    }
}
