//! Starting the child: argv (never a shell string), stdin from /dev/null, its own process group,
//! the parent-death signal on Linux, and the group signalling used by every stop path.

use std::collections::BTreeMap;
use std::io;
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::mpsc as std_mpsc;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::model::plan::CommandSpec;

/// Build the command. `env` is the child's complete environment.
pub fn build_command(
    spec: &CommandSpec,
    env: &BTreeMap<String, String>,
    parent_death_signal: bool,
) -> io::Result<Command> {
    let (program, args) = spec
        .argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the command is empty"))?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    #[cfg(target_os = "linux")]
    if parent_death_signal {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs between fork and exec and only makes async-signal-safe calls
        // (prctl, getppid); it allocates nothing.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // polyprof died between fork and prctl: the signal will never come.
                if libc::getppid() != parent {
                    return Err(io::Error::other("polyprof exited while starting the child"));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent_death_signal;
    let mut cmd = Command::from(cmd);
    cmd.kill_on_drop(true);
    Ok(cmd)
}

struct SpawnRequest {
    cmd: Command,
    handle: tokio::runtime::Handle,
    reply: oneshot::Sender<io::Result<Child>>,
}

/// The parent-death signal fires when the *thread* that forked the child exits, not the
/// process. Runtime threads come and go (blocking pools, per-test runtimes), so every child is
/// forked from one thread that lives as long as polyprof.
fn spawner() -> Option<&'static std_mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Option<std_mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = std_mpsc::channel::<SpawnRequest>();
            std::thread::Builder::new()
                .name("polyprof-spawner".into())
                .spawn(move || {
                    for mut request in rx {
                        let result = {
                            let _context = request.handle.enter();
                            request.cmd.spawn()
                        };
                        if let Err(Ok(child)) = request.reply.send(result) {
                            // The caller gave up meanwhile: do not leave the process running.
                            if let Some(pid) = child.id() {
                                signal_group(pid as i32, Signal::SIGKILL);
                            }
                        }
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Start the command from the long-lived spawner thread (plain spawn if that thread is gone).
pub async fn spawn(mut cmd: Command) -> io::Result<Child> {
    if let Some(tx) = spawner() {
        let (reply, rx) = oneshot::channel();
        let request = SpawnRequest {
            cmd,
            handle: tokio::runtime::Handle::current(),
            reply,
        };
        match tx.send(request) {
            Ok(()) => {
                return rx
                    .await
                    .unwrap_or_else(|_| Err(io::Error::other("the spawner thread stopped")));
            }
            Err(returned) => cmd = returned.0.cmd,
        }
    }
    cmd.spawn()
}

/// Send `signal` to the process group; false when there is no such group (any more).
pub fn signal_group(pgid: i32, signal: Signal) -> bool {
    pgid > 0 && killpg(Pid::from_raw(pgid), signal).is_ok()
}

/// Live (non-zombie) members of the group. Linux reads /proc; elsewhere a member that exists at
/// all counts.
pub fn live_members(pgid: i32) -> Vec<i32> {
    if pgid <= 0 || killpg(Pid::from_raw(pgid), None).is_err() {
        return Vec::new();
    }
    #[cfg(target_os = "linux")]
    {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return vec![pgid];
        };
        let mut members = Vec::new();
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // Fields after the parenthesized command name: state ppid pgrp ...
            let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
                continue;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if fields.len() > 2 && fields[0] != "Z" && fields[2].parse() == Ok(pgid) {
                members.push(pid);
            }
        }
        members
    }
    #[cfg(not(target_os = "linux"))]
    vec![pgid]
}

/// Raise the pipe's buffer so a fast writer needs fewer wake-ups (Linux; best effort).
pub fn enlarge_pipe(fd: std::os::fd::RawFd) {
    #[cfg(target_os = "linux")]
    // SAFETY: fcntl on a file descriptor we own; failure is harmless.
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

/// Kills the group with SIGKILL and stops the readers if a run is abandoned midway (its future
/// dropped). Disarmed once the run has cleaned up by itself.
pub struct GroupGuard {
    pub pgid: i32,
    pub readers: CancellationToken,
    armed: bool,
}

impl GroupGuard {
    pub fn new(pgid: i32, readers: CancellationToken) -> Self {
        GroupGuard {
            pgid,
            readers,
            armed: true,
        }
    }

    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            signal_group(self.pgid, Signal::SIGKILL);
            self.readers.cancel();
        }
    }
}
