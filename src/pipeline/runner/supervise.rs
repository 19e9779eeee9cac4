//! The supervision loop of one run: wait for exit while both streams drain, watch the end
//! marker, the timeouts and cancellation, stop the group, detect leaks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::capture::{Shared, StreamSetup, StreamState};
use super::env::build_env;
use super::logfile::{CopyWriter, LogWriter};
use super::marker::Detector;
use super::options::{RunOptions, StreamKind};
use super::reader::read_stream;
use super::spawn::{GroupGuard, build_command, enlarge_pipe, live_members, signal_group, spawn};
use crate::pipeline::outcome::{MarkerSeen, Outcome, RunResult, StreamCapture, Timings};
use crate::profilers::CommandSpec;

/// After the group got SIGKILL because of a leak: how long the pipes may still take to close.
const AFTER_KILL_WAIT: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Timeout,
    Inactive,
    Marker,
    Cancel,
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

type Reader = JoinHandle<(StreamCapture, Vec<String>)>;

/// Run one command under supervision. Never panics and never loses what was captured: every
/// path ends with the group stopped, the leader reaped, and the result filled.
pub async fn run_command(spec: &CommandSpec, opts: &RunOptions) -> RunResult {
    let start = Instant::now();
    let mut result = RunResult {
        argv: spec.argv.clone(),
        outcome: Outcome::Cancelled,
        pid: None,
        marker: None,
        timings: Timings::default(),
        leaked: false,
        stdout: StreamCapture::default(),
        stderr: StreamCapture::default(),
        warnings: Vec::new(),
    };
    let spawn_failed = |mut result: RunResult, error: String| {
        result.outcome = Outcome::SpawnFailed { error };
        result.timings.spawn_s = secs(start.elapsed());
        result.timings.end_s = result.timings.spawn_s;
        result
    };

    let detector = match Detector::new(&opts.end_marker) {
        Ok(d) => Arc::new(d),
        Err(e) => return spawn_failed(result, e.to_string()),
    };
    let mut extra = opts.extra_env.clone();
    extra.extend(spec.env.clone());
    let parent = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    let env = build_env(&opts.env_policy, parent, &extra);
    if !env.dropped_credentials.is_empty() {
        result.warnings.push(format!(
            "environment policy `{}` withheld credential-like variables: {}",
            opts.env_policy,
            env.dropped_credentials.join(", ")
        ));
    }
    let cmd = match build_command(spec, &env.vars, opts.parent_death_signal) {
        Ok(cmd) => cmd,
        Err(e) => return spawn_failed(result, e.to_string()),
    };
    let (stdout_log, stderr_log) = open_logs(opts, &mut result.warnings);
    let copy = opts
        .stdout_file
        .as_ref()
        .and_then(|path| match CopyWriter::create(path) {
            Ok(copy) => Some(copy),
            Err(e) => {
                result.warnings.push(format!(
                    "cannot create {}: {e}; stdout is still in the log",
                    path.display()
                ));
                None
            }
        });

    let mut child = match spawn(cmd).await {
        Ok(child) => child,
        Err(e) => {
            let program = spec.argv.first().map(String::as_str).unwrap_or_default();
            return spawn_failed(result, format!("cannot start `{program}`: {e}"));
        }
    };
    let pid = child.id().unwrap_or_default();
    result.pid = child.id();
    result.timings.spawn_s = secs(start.elapsed());
    let pgid = pid as i32;
    let stop_readers = CancellationToken::new();
    let mut guard = GroupGuard::new(pgid, stop_readers.clone());

    let (marker_tx, mut marker_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared::new(start, marker_tx));
    let setup = |kind, log, copy| StreamSetup {
        kind,
        shared: shared.clone(),
        detector: detector.clone(),
        line_limit: opts.line_limit,
        head_lines: opts.head_lines,
        tail_lines: opts.tail_lines,
        log,
        copy,
        sink: opts.line_sink.clone(),
    };
    let stdout_reader: Option<Reader> = child.stdout.take().map(|pipe| {
        enlarge_pipe(std::os::fd::AsRawFd::as_raw_fd(&pipe));
        let state = StreamState::new(setup(StreamKind::Stdout, stdout_log, copy));
        tokio::spawn(read_stream(pipe, state, stop_readers.clone(), "stdout"))
    });
    let stderr_reader: Option<Reader> = child.stderr.take().map(|pipe| {
        enlarge_pipe(std::os::fd::AsRawFd::as_raw_fd(&pipe));
        let state = StreamState::new(setup(StreamKind::Stderr, stderr_log, None));
        tokio::spawn(read_stream(pipe, state, stop_readers.clone(), "stderr"))
    });

    // Wait for the leader while the readers drain both pipes.
    let deadline = opts.timeout.map(|t| start + t);
    let mut marker_deadline: Option<Instant> = None;
    let mut inactivity_deadline = opts.inactivity_timeout.map(|t| start + t);
    let waited = loop {
        tokio::select! {
            biased;
            status = child.wait() => break Ok(status),
            Some(seen) = marker_rx.recv(), if result.marker.is_none() => {
                marker_deadline = Some(start + Duration::from_secs_f64(seen.at_s) + opts.graces.marker_grace);
                result.timings.marker_s = Some(seen.at_s);
                result.marker = Some(seen);
            }
            _ = opts.cancel.cancelled() => break Err(Stop::Cancel),
            _ = sleep_until_opt(deadline) => break Err(Stop::Timeout),
            _ = sleep_until_opt(marker_deadline) => break Err(Stop::Marker),
            _ = sleep_until_opt(inactivity_deadline), if result.marker.is_none() => {
                let limit = opts.inactivity_timeout.unwrap_or_default();
                let due = shared.last_output() + limit;
                if Instant::now() >= due {
                    break Err(Stop::Inactive);
                }
                inactivity_deadline = Some(due);
            }
        }
    };

    let (status, stopped) = match waited {
        Ok(status) => (status, false),
        Err(stop) => {
            result.outcome = stopped_outcome(stop, opts, result.marker.as_ref());
            result
                .warnings
                .extend(stop_warning(stop, opts, result.marker.as_ref()));
            let status = terminate(&mut child, pgid, stop, opts, &mut result.warnings).await;
            (status, true)
        }
    };
    result.timings.exit_s = Some(secs(start.elapsed()));
    match (&status, stopped) {
        (Ok(status), false) => {
            use std::os::unix::process::ExitStatusExt;
            result.outcome = match (status.code(), status.signal()) {
                (Some(code), _) => Outcome::Exited { code },
                (None, Some(signal)) => Outcome::Signalled { signal },
                (None, None) => Outcome::Exited { code: -1 },
            };
        }
        (Err(e), _) => result
            .warnings
            .push(format!("waiting for the process failed: {e}")),
        (Ok(status), true) => {
            if let Some(code) = status.code() {
                result.warnings.push(format!(
                    "after being stopped the process exited with code {code}"
                ));
            }
        }
    }

    // The leader is gone; its group and the pipes may not be.
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
    let leak_deadline = Instant::now() + opts.leak_timeout;
    let drained = tokio::time::timeout_at(leak_deadline.into(), &mut readers)
        .await
        .ok();
    let mut leftovers = live_members(pgid);
    while !leftovers.is_empty() && Instant::now() < leak_deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
        leftovers = live_members(pgid);
    }
    if drained.is_none() || !leftovers.is_empty() {
        result.leaked = true;
        signal_group(pgid, Signal::SIGKILL);
        result.warnings.push(format!(
            "processes of the group outlived the leader by {:.3} s{}{}; the group was killed",
            secs(opts.leak_timeout),
            if leftovers.is_empty() {
                String::new()
            } else {
                format!(" (pids {leftovers:?})")
            },
            if drained.is_none() {
                " and held the output pipes open"
            } else {
                ""
            },
        ));
    }
    let (out, err) = match drained {
        Some(done) => done,
        None => match tokio::time::timeout(AFTER_KILL_WAIT, &mut readers).await {
            Ok(done) => done,
            Err(_) => {
                // Something outside the group holds the pipes: keep what was read, let go.
                result.warnings.push("the output pipes stayed open after the group was killed (a process left the group); reading stopped".to_string());
                stop_readers.cancel();
                readers.await
            }
        },
    };
    guard.disarm();
    // A marker found while the leader was exiting (or in the last bytes) still counts.
    if result.marker.is_none()
        && let Ok(seen) = marker_rx.try_recv()
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
    result.timings.first_output_s = shared.first_output_s();
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

/// SIGTERM to the group, the kill grace while the readers keep draining, then SIGKILL; always
/// reaps the leader.
async fn terminate(
    child: &mut tokio::process::Child,
    pgid: i32,
    stop: Stop,
    opts: &RunOptions,
    warnings: &mut Vec<String>,
) -> std::io::Result<std::process::ExitStatus> {
    signal_group(pgid, Signal::SIGTERM);
    let grace = opts.graces.kill_grace;
    tokio::select! {
        biased;
        status = child.wait() => return status,
        _ = tokio::time::sleep(grace) => {
            warnings.push(format!("the process group did not exit within {:.3} s of SIGTERM and was killed with SIGKILL", secs(grace)));
        }
        // A second request (e.g. Ctrl-C during the grace) does not wait.
        _ = opts.cancel.cancelled(), if stop != Stop::Cancel => {
            warnings.push("cancelled during the kill grace: killed with SIGKILL".to_string());
        }
    }
    signal_group(pgid, Signal::SIGKILL);
    child.wait().await
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
