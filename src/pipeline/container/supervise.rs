//! One command in one container, supervised like a local process: the output frames go
//! through the same line splitter, capture and end-marker detector as local pipes; the marker
//! grace, the timeouts and cancellation stop the container (SIGTERM, kill grace, SIGKILL);
//! the container is removed on every path.

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::container::LogOutput;
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, KillContainerOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use futures_util::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::copy_out::copy_outputs;
use super::engine::{Engine, new_job_id, owner_labels};
use super::error::classify;
use super::job::{ContainerJob, OutputTransfer};
use super::spec::{container_env, create_body};
use super::watchdog;
use crate::model::outcome::{Outcome, RunResult, StreamCapture};
use crate::model::plan::CommandSpec;
use crate::model::run::ContainerInfo;
use crate::pipeline::runner::RunOptions;
use crate::pipeline::runner::capture::{Shared, StreamSetup, StreamState};
use crate::pipeline::runner::logfile::CopyWriter;
use crate::pipeline::runner::marker::Detector;
use crate::pipeline::runner::options::StreamKind;
use crate::pipeline::runner::supervise::{
    Stop, new_result, open_logs, spawn_failed, stop_warning, stopped_outcome,
};

/// After the container exited: how much longer its output connection may take to close.
const AFTER_EXIT_WAIT: Duration = Duration::from_millis(500);

/// A supervised container run: the same result as a local run, plus which container it was.
#[derive(Debug, Clone)]
pub struct ContainerRun {
    pub result: RunResult,
    pub container: ContainerInfo,
}

type Captures = ((StreamCapture, Vec<String>), (StreamCapture, Vec<String>));
type Frames = Pin<Box<dyn Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>;

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Removes the container if the run is abandoned half-way (the future dropped, a panic): no
/// container outlives its run on any path polyprof survives. Should the runtime end before that
/// removal runs, the container is still on the watchdog's list.
struct RemoveGuard {
    engine: Option<Engine>,
    id: String,
    name: String,
}

impl RemoveGuard {
    fn disarm(&mut self) {
        self.engine = None;
    }
}

impl Drop for RemoveGuard {
    fn drop(&mut self) {
        let Some(engine) = self.engine.take() else {
            return;
        };
        let id = std::mem::take(&mut self.id);
        let name = std::mem::take(&mut self.name);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let force = RemoveContainerOptionsBuilder::default().force(true).build();
                if gone(&engine.docker().remove_container(&id, Some(force)).await) {
                    watchdog::release(&name);
                }
            });
        }
    }
}

/// Feed the attach stream's frames into the two stream states (a frame is a chunk of bytes,
/// not a line: the splitter finds the lines).
async fn read_frames(
    mut frames: Frames,
    mut out: StreamState,
    mut err: StreamState,
    stop: CancellationToken,
) -> Captures {
    loop {
        tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            frame = frames.next() => match frame {
                Some(Ok(LogOutput::StdOut { message } | LogOutput::Console { message })) => out.feed(&message),
                Some(Ok(LogOutput::StdErr { message })) => err.feed(&message),
                Some(Ok(LogOutput::StdIn { .. })) => {}
                Some(Err(e)) => {
                    out.warn(format!("reading the container's output failed: {e}"));
                    break;
                }
                None => break,
            },
        }
    }
    (out.finish(), err.finish())
}

/// The container's exit status from the engine (a non-zero status arrives as an error
/// variant in bollard).
async fn wait_exit(engine: Engine, id: String) -> Result<i64, String> {
    let mut waits = engine.docker().wait_container(&id, None);
    match waits.next().await {
        Some(Ok(r)) => Ok(r.status_code),
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => Ok(code),
        Some(Err(e)) => Err(e.to_string()),
        None => Err("the engine closed the wait without a status".to_string()),
    }
}

async fn kill(engine: &Engine, id: &str, signal: &str) {
    let options = KillContainerOptionsBuilder::default()
        .signal(signal)
        .build();
    // A container that already stopped answers 409; nothing to do then.
    let _ = engine.docker().kill_container(id, Some(options)).await;
}

/// Run `spec` in a container of `job`, with `output_dir` bound at its own path.
pub async fn run_in_container(
    engine: &Engine,
    job: &ContainerJob,
    spec: &CommandSpec,
    opts: &RunOptions,
    output_dir: &std::path::Path,
) -> ContainerRun {
    let start = Instant::now();
    let mut container = ContainerInfo {
        image: job.image.clone(),
        id: None,
    };
    let mut result = new_result(spec);
    let failed = |result: RunResult, container: ContainerInfo, error: String| ContainerRun {
        result: spawn_failed(result, start, error, None),
        container,
    };

    let detector = match Detector::new(&opts.end_marker) {
        Ok(d) => Arc::new(d),
        Err(e) => return failed(result, container, e.to_string()),
    };
    if let Some(name) = opts.extra_env_bytes.keys().next() {
        return failed(
            result,
            container,
            format!(
                "the value of `{name}` is not UTF-8: containers take text values only; run without --container to pass its bytes"
            ),
        );
    }
    let mut extra = opts.extra_env.clone();
    extra.extend(spec.env.clone());
    let host = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    let env = container_env(&opts.env_policy, host, &extra);
    if !env.dropped_credentials.is_empty() {
        result.warnings.push(format!(
            "environment policy `{}` withheld credential-like variables: {}",
            opts.env_policy,
            env.dropped_credentials.join(", ")
        ));
    }
    let job_id = new_job_id();
    let body = match create_body(job, spec, &env.vars, output_dir, owner_labels(&job_id)) {
        Ok(body) => body,
        Err(e) => return failed(result, container, e.to_string()),
    };
    let name = format!("polyprof-{job_id}");
    // Named to the watchdog before the engine hears of it: a polyprof killed at any moment
    // from here on leaves nothing running.
    let watchdog_exe = job.watchdog.clone().or_else(|| {
        opts.tracking
            .supervisor_exe()
            .map(std::path::Path::to_path_buf)
    });
    if let Some(exe) = &watchdog_exe
        && let Err(warning) = watchdog::guard(exe, &name)
    {
        result.warnings.push(warning);
    }
    let options = CreateContainerOptionsBuilder::default().name(&name).build();
    let id = match engine.docker().create_container(Some(options), body).await {
        Ok(created) => created.id,
        Err(e) => {
            watchdog::release(&name);
            let e = classify("create the container", &job.image, e);
            return failed(result, container, e.to_string());
        }
    };
    container.id = Some(id.clone());
    let mut guard = RemoveGuard {
        engine: Some(engine.clone()),
        id: id.clone(),
        name: name.clone(),
    };

    // Attach before start: every byte from the first one on comes over this connection.
    let attach = AttachContainerOptionsBuilder::default()
        .stream(true)
        .stdout(true)
        .stderr(true)
        .build();
    let frames = match engine.docker().attach_container(&id, Some(attach)).await {
        Ok(attached) => attached.output,
        Err(e) => {
            let e = classify("attach to the container", &job.image, e);
            remove(engine, &id, &name, &mut result.warnings).await;
            guard.disarm();
            return failed(result, container, e.to_string());
        }
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
    let (marker_tx, mut marker_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared::new(start, marker_tx));
    let setup = |kind, log, copy| StreamSetup::for_run(opts, kind, &shared, &detector, log, copy);
    let stop_reading = CancellationToken::new();
    let reader: JoinHandle<Captures> = tokio::spawn(read_frames(
        frames,
        StreamState::new(setup(StreamKind::Stdout, stdout_log, copy)),
        StreamState::new(setup(StreamKind::Stderr, stderr_log, None)),
        stop_reading.clone(),
    ));

    if let Err(e) = engine.docker().start_container(&id, None).await {
        let e = classify("start the container", &job.image, e);
        stop_reading.cancel();
        let _ = reader.await;
        remove(engine, &id, &name, &mut result.warnings).await;
        guard.disarm();
        return failed(result, container, e.to_string());
    }
    result.timings.spawn_s = secs(start.elapsed());

    let mut exited = Box::pin(wait_exit(engine.clone(), id.clone()));
    let deadline = opts.timeout.map(|t| start + t);
    let mut marker_deadline: Option<Instant> = None;
    let mut inactivity_deadline = opts.inactivity_timeout.map(|t| start + t);
    let waited = loop {
        tokio::select! {
            biased;
            status = &mut exited => break Ok(status),
            Some(seen) = marker_rx.recv(), if result.marker.is_none() => {
                marker_deadline = Some(start + Duration::from_secs_f64(seen.at_s) + opts.graces.marker_grace);
                result.timings.marker_s = Some(seen.at_s);
                result.marker = Some(seen);
            }
            _ = opts.cancel.cancelled() => break Err(Stop::Cancel),
            _ = opts.kill_now.cancelled() => break Err(Stop::Cancel),
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
    let status = match waited {
        Ok(status) => {
            match &status {
                Ok(code) => {
                    result.outcome = Outcome::Exited {
                        code: i32::try_from(*code).unwrap_or(-1),
                    }
                }
                Err(e) => {
                    result.outcome = Outcome::Exited { code: -1 };
                    result
                        .warnings
                        .push(format!("waiting for the container failed: {e}"));
                }
            }
            status
        }
        Err(stop) => {
            result.outcome = stopped_outcome(stop, opts, result.marker.as_ref());
            result
                .warnings
                .extend(stop_warning(stop, opts, result.marker.as_ref()));
            let status =
                terminate(engine, &id, &mut exited, stop, opts, &mut result.warnings).await;
            // 143 and 137 are the stop signals themselves; anything else is worth saying.
            if let Ok(code) = &status
                && ![137, 143].contains(code)
            {
                result.warnings.push(format!(
                    "after being stopped the container exited with code {code}"
                ));
            }
            status
        }
    };
    drop(status);
    result.timings.exit_s = Some(secs(start.elapsed()));

    // The container is gone; its output connection closes right after.
    let mut reader = reader;
    let captures =
        match tokio::time::timeout(opts.leak_timeout + AFTER_EXIT_WAIT, &mut reader).await {
            Ok(done) => done.ok(),
            Err(_) => {
                result.warnings.push(
                "the container's output connection stayed open after it exited; reading stopped"
                    .to_string(),
            );
                stop_reading.cancel();
                reader.await.ok()
            }
        };
    if oom_killed(engine, &id).await {
        result.warnings.push(
            "the container was killed for going over its memory limit (OOMKilled)".to_string(),
        );
    }
    if job.output == OutputTransfer::Copy {
        copy_outputs(
            engine,
            &id,
            &absolute_dir(output_dir),
            &job.copy_patterns,
            &mut result.warnings,
        )
        .await;
    }
    remove(engine, &id, &name, &mut result.warnings).await;
    guard.disarm();

    if result.marker.is_none()
        && let Ok(seen) = marker_rx.try_recv()
    {
        result.timings.marker_s = Some(seen.at_s);
        result.marker = Some(seen);
    }
    match captures {
        Some(((out, out_warnings), (err, err_warnings))) => {
            result.stdout = out;
            result.stderr = err;
            result.warnings.extend(out_warnings);
            result.warnings.extend(err_warnings);
        }
        None => result
            .warnings
            .push("the container's output was not captured".to_string()),
    }
    result.timings.first_output_s = shared.first_output_s();
    result.timings.end_s = secs(start.elapsed());
    ContainerRun { result, container }
}

/// SIGTERM (to the init process, which passes it on), the kill grace, then SIGKILL. A second
/// stop request (`kill_now`) does not wait for the grace.
async fn terminate(
    engine: &Engine,
    id: &str,
    exited: &mut Pin<Box<impl Future<Output = Result<i64, String>>>>,
    stop: Stop,
    opts: &RunOptions,
    warnings: &mut Vec<String>,
) -> Result<i64, String> {
    if opts.kill_now.is_cancelled() {
        warnings.push("stopped at once (second stop request): killed with SIGKILL".to_string());
        kill(engine, id, "SIGKILL").await;
        return exited.await;
    }
    kill(engine, id, "SIGTERM").await;
    let grace = opts.graces.kill_grace;
    tokio::select! {
        biased;
        status = &mut *exited => return status,
        _ = tokio::time::sleep(grace) => {
            warnings.push(format!("the container did not exit within {:.3} s of SIGTERM and was killed with SIGKILL", secs(grace)));
        }
        _ = opts.kill_now.cancelled() => {
            warnings.push("a second stop request during the kill grace: killed with SIGKILL".to_string());
        }
        _ = opts.cancel.cancelled(), if stop != Stop::Cancel => {
            warnings.push("cancelled during the kill grace: killed with SIGKILL".to_string());
        }
    }
    kill(engine, id, "SIGKILL").await;
    exited.await
}

async fn oom_killed(engine: &Engine, id: &str) -> bool {
    engine
        .docker()
        .inspect_container(id, None)
        .await
        .ok()
        .and_then(|c| c.state)
        .and_then(|s| s.oom_killed)
        .unwrap_or(false)
}

/// The output directory as the create request named it (its canonical path).
fn absolute_dir(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// The container is no longer on the engine after a removal that answered this.
fn gone(removal: &Result<(), bollard::errors::Error>) -> bool {
    matches!(
        removal,
        Ok(())
            | Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404,
                ..
            })
    )
}

/// Remove the container; once it is gone the watchdog forgets it. One that could not be
/// removed stays on the watchdog's list, which tries again when polyprof ends.
async fn remove(engine: &Engine, id: &str, name: &str, warnings: &mut Vec<String>) {
    let force = RemoveContainerOptionsBuilder::default().force(true).build();
    match engine.docker().remove_container(id, Some(force)).await {
        removal if gone(&removal) => watchdog::release(name),
        Ok(()) => {}
        Err(e) => warnings.push(format!(
            "container {id} could not be removed ({e}); `polyprof containers prune` removes it"
        )),
    }
}
