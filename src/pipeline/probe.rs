//! The one runner for short commands (version probes, `ncu --query-metrics`, `nvcc` in the demo):
//! its own process group, stdin from /dev/null, `LC_ALL=C`, stdout and stderr drained by threads
//! while it runs (a 1 MB metric list cannot fill a pipe and block it), a timeout and a
//! cancellation token that both stop the whole group and reap it; the child also dies with
//! polyprof (Linux's parent-death signal), however polyprof dies.
//!
//! [`HostProbe`] answers a backend's [`Probe`] questions on this machine with it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::model::probe::{NodeAccess, Probe, ProbeError, ProbeOutput, ProbeRequest};

/// How often the runner looks at the child, the clock and the token.
const POLL: Duration = Duration::from_millis(5);

/// [`run_probe`] from async code, on a blocking thread. A task that failed (a panic in it) is
/// the probe's `Wait` error.
pub async fn run_probe_async(
    command: ProbeRequest,
    cancel: &CancellationToken,
) -> Result<ProbeOutput, ProbeError> {
    let shown = command.shown();
    let cancel = cancel.clone();
    tokio::task::spawn_blocking(move || run_probe(&command, &cancel))
        .await
        .unwrap_or_else(|e| {
            Err(ProbeError::Wait {
                command: shown,
                message: format!("its task failed: {e}"),
            })
        })
}

/// Run `command` to completion, its timeout, or cancellation. Blocking; call it from
/// `spawn_blocking` in async code (or use [`run_probe_async`]).
pub fn run_probe(
    command: &ProbeRequest,
    cancel: &CancellationToken,
) -> Result<ProbeOutput, ProbeError> {
    let shown = command.shown();
    tracing::debug!(command = %shown, timeout_s = command.timeout.as_secs_f64(), "probe");
    let mut cmd = Command::new(&command.program);
    cmd.args(&command.args)
        .env("LC_ALL", "C")
        .envs(&command.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // The thread that forks waits for the child below, so the signal cannot fire early.
    crate::pipeline::runner::spawn::bare_command_dies_with_parent(&mut cmd, true);
    let mut child = cmd.spawn().map_err(|e| ProbeError::Spawn {
        command: shown.clone(),
        message: e.to_string(),
    })?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {}
            Err(e) => {
                break Err(ProbeError::Wait {
                    command: shown.clone(),
                    message: e.to_string(),
                });
            }
        }
        if cancel.is_cancelled() {
            break Err(ProbeError::Cancelled {
                command: shown.clone(),
            });
        }
        if started.elapsed() >= command.timeout {
            break Err(ProbeError::TimedOut {
                command: shown.clone(),
                timeout: command.timeout,
            });
        }
        std::thread::sleep(POLL);
    };
    let status = match ended {
        Ok(status) => status,
        Err(error) => {
            tracing::debug!(command = %shown, %error, "probe stopped");
            stop_group(&mut child);
            // The group is gone, so the pipes close and the drain threads end.
            let _ = (join(stdout), join(stderr));
            return Err(error);
        }
    };
    let output = ProbeOutput {
        code: status.code(),
        stdout: join(stdout),
        stderr: join(stderr),
    };
    tracing::debug!(
        command = %shown,
        code = ?output.code,
        stdout = %first_line(&output.stdout),
        stdout_bytes = output.stdout.len(),
        stderr_bytes = output.stderr.len(),
        "probe answered"
    );
    Ok(output)
}

/// A probe's first output line, for the log (a metric list is a megabyte).
fn first_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

/// SIGKILL to the probe's process group (it has its own), then reap the child.
fn stop_group(child: &mut Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> Option<JoinHandle<Vec<u8>>> {
    let mut pipe = pipe?;
    Some(std::thread::spawn(move || {
        let mut bytes = Vec::new();
        // A read error ends the capture; what was read so far is kept.
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    }))
}

fn join(handle: Option<JoinHandle<Vec<u8>>>) -> Vec<u8> {
    handle.and_then(|h| h.join().ok()).unwrap_or_default()
}

/// Answers [`Probe`] questions on this machine: commands through [`run_probe`], files and
/// directories read directly.
#[derive(Debug, Clone, Default)]
pub struct HostProbe {
    cancel: CancellationToken,
}

impl HostProbe {
    pub fn new() -> Self {
        HostProbe::default()
    }

    /// Probes stop (and their process groups are killed) when `cancel` fires.
    pub fn with_cancel(cancel: CancellationToken) -> Self {
        HostProbe { cancel }
    }
}

impl Probe for HostProbe {
    fn find_binary(&self, name: &str) -> Option<PathBuf> {
        let found = which::which(name).ok();
        tracing::debug!(binary = name, found = ?found, "probe: looked up a binary on PATH");
        found
    }

    fn run(&self, command: &ProbeRequest) -> Result<ProbeOutput, ProbeError> {
        run_probe(command, &self.cancel)
    }

    fn read_text(&self, path: &Path) -> Option<String> {
        let text = std::fs::read_to_string(path).ok();
        tracing::trace!(path = %path.display(), found = text.is_some(), "probe: read a file");
        text
    }

    fn write_text(&self, path: &Path, text: &str) -> bool {
        let Some(dir) = path.parent() else {
            return false;
        };
        if std::fs::create_dir_all(dir).is_err() {
            return false;
        }
        let written = crate::model::atomic_file::write_atomic(path, text.as_bytes()).is_ok();
        tracing::debug!(path = %path.display(), written, "probe: wrote a cache file");
        written
    }

    fn list_dir(&self, path: &Path) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(path) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn read_link(&self, path: &Path) -> Option<PathBuf> {
        std::fs::read_link(path).ok()
    }

    fn env_var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn is_root(&self) -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    fn host_os(&self) -> &str {
        std::env::consts::OS
    }

    fn node_access(&self, path: &Path) -> NodeAccess {
        use nix::unistd::{AccessFlags, access};
        if !path.exists() {
            return NodeAccess::Missing;
        }
        match access(path, AccessFlags::R_OK | AccessFlags::W_OK) {
            Ok(()) => NodeAccess::ReadWrite,
            Err(_) => NodeAccess::Denied,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout: Duration) -> ProbeRequest {
        ProbeRequest::new("/bin/sh", &["-c", script], timeout)
    }

    #[test]
    fn output_larger_than_a_pipe_is_drained_while_waiting() {
        // `ncu --query-metrics` prints ~1 MB; reading only after exit would deadlock.
        let out = run_probe(
            &sh("yes abcdefg | head -c 2000000", Duration::from_secs(30)),
            &CancellationToken::new(),
        )
        .unwrap();
        assert_eq!(out.stdout.len(), 2_000_000);
        assert!(out.success());
    }

    #[test]
    fn timeout_stops_the_whole_group_quickly() {
        let started = Instant::now();
        // The grandchild `sleep` holds stdout; only a group kill lets the drain end.
        let err = run_probe(
            &sh("sleep 30 & sleep 30", Duration::from_millis(200)),
            &CancellationToken::new(),
        )
        .unwrap_err();
        assert!(matches!(err, ProbeError::TimedOut { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn cancellation_is_honoured() {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            trigger.cancel();
        });
        let started = Instant::now();
        let err = run_probe(&sh("sleep 30", Duration::from_secs(60)), &cancel).unwrap_err();
        assert!(matches!(err, ProbeError::Cancelled { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn exit_code_stderr_and_missing_programs() {
        let out = run_probe(
            &sh("echo oops >&2; exit 3", Duration::from_secs(10)),
            &CancellationToken::new(),
        )
        .unwrap();
        assert_eq!((out.code, out.stderr.as_slice()), (Some(3), &b"oops\n"[..]));
        let err = run_probe(
            &ProbeRequest::new("/nonexistent/polyprof-probe", &[], Duration::from_secs(1)),
            &CancellationToken::new(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("cannot start"), "{err}");
    }

    #[test]
    fn read_version_takes_first_line_and_reports_failures() {
        use crate::profilers::preflight::{VERSION_TIMEOUT, read_version};
        let probe = HostProbe::new();
        let sh = probe.find_binary("sh").unwrap();
        let got = read_version(
            &probe,
            &sh,
            &["-c", "echo; echo ' v1.2 '; echo x"],
            VERSION_TIMEOUT,
        );
        assert_eq!(got.as_deref(), Ok("v1.2"));
        let err = read_version(
            &probe,
            &sh,
            &["-c", "echo boom >&2; exit 3"],
            VERSION_TIMEOUT,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("boom") && err.contains('3'), "{err}");
        let err = read_version(&probe, &sh, &["-c", "true"], VERSION_TIMEOUT)
            .unwrap_err()
            .to_string();
        assert!(err.contains("printed nothing"), "{err}");
        let err = read_version(
            &probe,
            &sh,
            &["-c", "exec sleep 30"],
            Duration::from_millis(200),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("did not answer"), "{err}");
    }

    #[test]
    fn sysctl_reads_trim_and_tolerate_missing_files() {
        use crate::profilers::preflight::read_sysctl;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("paranoid");
        std::fs::write(&file, "1\n").unwrap();
        let probe = HostProbe::new();
        assert_eq!(read_sysctl(&probe, &file).as_deref(), Some("1"));
        assert_eq!(read_sysctl(&probe, &dir.path().join("missing")), None);
    }

    #[test]
    fn ncu_metric_cache_is_written_once_and_reused() {
        use crate::profilers::ncu::query::catalog_cached;
        let sample = "Chip gh100\n---- ----\nMetric Name  Metric Type  Metric Unit  Metric Description\n---- ----\ndram__bytes_read   Counter  byte  # of bytes read from DRAM\ngpu__time_duration Counter ns  duration\n";
        let probe = HostProbe::new();
        let dir = tempfile::tempdir().unwrap();
        let first = catalog_cached(
            &probe,
            Some(dir.path()),
            "2025.3.1.0",
            "NVIDIA H200",
            || Some(sample.to_string()),
        )
        .unwrap();
        assert!(dir.path().join("2025.3.1.0-NVIDIA_H200.txt").exists());
        // The second lookup must not query again.
        let second = catalog_cached(
            &probe,
            Some(dir.path()),
            "2025.3.1.0",
            "NVIDIA H200",
            || panic!("queried despite the cache"),
        )
        .unwrap();
        assert_eq!(first, second);
        // A failed query without cache gives no catalog rather than an empty one.
        assert!(catalog_cached(&probe, None, "v", "c", || None).is_none());
    }
}
