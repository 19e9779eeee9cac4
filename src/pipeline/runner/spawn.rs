//! Starting the child: argv (never a shell string), stdin from /dev/null, its own process group,
//! the parent-death signal on Linux, and the group signalling used by every stop path.

use std::collections::BTreeMap;
use std::io;
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::mpsc as std_mpsc;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::model::plan::CommandSpec;

/// Running the command under the supervising process (see [`super::supervisor`]).
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    pub exe: &'a std::path::Path,
    pub leak_timeout: std::time::Duration,
    /// After SIGTERM: how long every descendant may take to exit.
    pub kill_grace: std::time::Duration,
    /// Write end of the report pipe; its number is on the supervisor's command line.
    pub report_fd: std::os::fd::RawFd,
    /// Put the command in a cgroup of its own where one can be created.
    pub cgroup: bool,
}

/// Build the command. `env` and `raw_env` (variables that are not UTF-8) are the child's
/// complete environment. With `launch`, the process
/// started is the supervisor, which starts the command.
pub fn build_command(
    spec: &CommandSpec,
    env: &BTreeMap<String, String>,
    raw_env: &[(std::ffi::OsString, std::ffi::OsString)],
    parent_death_signal: bool,
    launch: Option<Launch<'_>>,
) -> io::Result<Command> {
    if spec.argv.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the command is empty",
        ));
    }
    if let Some(launch) = launch
        && super::supervisor::in_process()
    {
        return Ok(forked_supervisor(spec, env, raw_env, &launch));
    }
    let argv: Vec<std::ffi::OsString> = match launch {
        Some(launch) => {
            let command: Vec<std::ffi::OsString> = spec.argv.iter().map(Into::into).collect();
            let settings = super::supervisor::Settings {
                parent: std::process::id() as i32,
                leak_timeout: launch.leak_timeout,
                kill_grace: launch.kill_grace,
                report_fd: launch.report_fd,
                cgroup: launch.cgroup,
            };
            super::supervisor::wrap_argv(launch.exe, &settings, &command)
        }
        None => spec.argv.iter().map(Into::into).collect(),
    };
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env_clear()
        .envs(env)
        .envs(raw_env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    match launch {
        // The supervisor sets its own parent-death signal (and checks its parent) first thing,
        // and is told its report descriptor on the command line. With no code to run between
        // fork and exec, std starts it with posix_spawn (a vfork): no copy of polyprof's page
        // tables and no copy-on-write faults afterwards. The report descriptor is made
        // inheritable by `spawn` on the spawner thread, just for this one spawn.
        Some(_) => {}
        None => bare_command_dies_with_parent(&mut cmd, parent_death_signal),
    }
    let mut cmd = Command::from(cmd);
    // A dropped run's guard asks the supervisor to kill the tree; SIGKILL to the supervisor
    // itself would orphan what left the group.
    cmd.kill_on_drop(launch.is_none());
    Ok(cmd)
}

/// The supervisor as a fork of this process (see `supervisor::fork_in_process`): std forks,
/// sets up the pipes and the process group, and the `pre_exec` hook runs the supervisor and
/// exits, so the program named is never executed.
fn forked_supervisor(
    spec: &CommandSpec,
    env: &BTreeMap<String, String>,
    raw_env: &[(std::ffi::OsString, std::ffi::OsString)],
    launch: &Launch<'_>,
) -> Command {
    let command: Vec<std::ffi::OsString> = spec.argv.iter().map(Into::into).collect();
    let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = env
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .chain(raw_env.iter().cloned())
        .collect();
    let settings = super::supervisor::Settings {
        parent: std::process::id() as i32,
        leak_timeout: launch.leak_timeout,
        kill_grace: launch.kill_grace,
        report_fd: launch.report_fd,
        cgroup: launch.cgroup,
    };
    let mut cmd = std::process::Command::new(launch.exe);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // SAFETY: runs in the forked child; see `supervisor::run_in_fork` for what it may touch.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            super::supervisor::run_in_fork(&settings, &command, &env)
        });
    }
    let mut cmd = Command::from(cmd);
    // As for the executed supervisor: a dropped run asks it to kill the tree.
    cmd.kill_on_drop(false);
    cmd
}

struct SpawnRequest {
    cmd: Command,
    inherit: Option<std::os::fd::RawFd>,
    handle: tokio::runtime::Handle,
    reply: oneshot::Sender<io::Result<Child>>,
}

/// The parent-death signal fires when the *thread* that forked the child exits, not the
/// process. Runtime threads come and go (blocking pools, per-test runtimes), so every child is
/// forked from one thread that lives as long as polyprof. After a `fork()` that thread does not
/// exist in the child process (only the forking thread is copied), so the spawner is keyed by
/// process id and started again in a child (Python's multiprocessing and Celery's prefork pool
/// fork after polyprof was used).
fn spawner() -> Option<std_mpsc::Sender<SpawnRequest>> {
    static SPAWNER: Mutex<Option<(u32, std_mpsc::Sender<SpawnRequest>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = SPAWNER.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, tx)) = slot.as_ref()
        && *owner == pid
    {
        return Some(tx.clone());
    }
    let (tx, rx) = std_mpsc::channel::<SpawnRequest>();
    std::thread::Builder::new()
        .name("polyprof-spawner".into())
        .spawn(move || {
            for mut request in rx {
                let result = {
                    let _context = request.handle.enter();
                    spawn_inheriting(&mut request.cmd, request.inherit)
                };
                if let Err(Ok(child)) = request.reply.send(result) {
                    // The caller gave up meanwhile: do not leave the process running.
                    if let Some(pid) = child.id() {
                        signal_group(pid as i32, Signal::SIGKILL);
                    }
                }
            }
        })
        .ok()?;
    *slot = Some((pid, tx.clone()));
    Some(tx)
}

/// Whether this is the CLI's main thread, which lives as long as polyprof: a child forked here
/// needs no spawner thread for its parent-death signal. Starting that thread, its allocator
/// arena and the hand-over to it cost a few hundred microseconds of a short run (issue 37).
/// Only where the program said so (`supervisor::fork_in_process`, the CLI, whose async code
/// runs on the main thread): a library host's main thread may end before its runs do.
fn on_lasting_main_thread() -> bool {
    #[cfg(target_os = "linux")]
    {
        // nix's gettid is the raw system call: glibc's wrapper is 2.30's, newer than the
        // wheel's glibc 2.17.
        super::supervisor::in_process() && nix::unistd::gettid() == nix::unistd::getpid()
    }
    #[cfg(not(target_os = "linux"))]
    super::supervisor::in_process()
}

/// Spawn `cmd`; `inherit` (the report pipe's write end, close-on-exec) is inheritable during
/// this spawn only. Spawns are serialised on the spawner thread, so two runs started at once
/// do not pass each other's report pipes on.
fn spawn_inheriting(cmd: &mut Command, inherit: Option<std::os::fd::RawFd>) -> io::Result<Child> {
    let Some(fd) = inherit else {
        return cmd.spawn();
    };
    set_cloexec(fd, false)?;
    let child = cmd.spawn();
    let _ = set_cloexec(fd, true);
    child
}

fn set_cloexec(fd: std::os::fd::RawFd, on: bool) -> io::Result<()> {
    let flags = if on { libc::FD_CLOEXEC } else { 0 };
    // SAFETY: fcntl on a descriptor the caller owns.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Start the command from the long-lived spawner thread (plain spawn if that thread is gone).
/// `inherit`: a close-on-exec descriptor the child must inherit (see `spawn_inheriting`).
pub async fn spawn(mut cmd: Command, inherit: Option<std::os::fd::RawFd>) -> io::Result<Child> {
    if on_lasting_main_thread() {
        return spawn_inheriting(&mut cmd, inherit);
    }
    if let Some(tx) = spawner() {
        let (reply, rx) = oneshot::channel();
        let request = SpawnRequest {
            cmd,
            inherit,
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
    spawn_inheriting(&mut cmd, inherit)
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
    /// The leader is the supervisor: ask it to kill the tree (SIGKILL to it would orphan the
    /// processes that left the group).
    supervised: bool,
    armed: bool,
}

impl GroupGuard {
    pub fn new(pgid: i32, readers: CancellationToken, supervised: bool) -> Self {
        GroupGuard {
            pgid,
            readers,
            supervised,
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
            if self.supervised && self.pgid > 0 {
                // SAFETY: kill on the supervisor's pid; it has not been reaped (armed guard).
                unsafe {
                    libc::kill(self.pgid, super::supervisor::KILL_NOW);
                }
                return self.readers.cancel();
            }
            signal_group(self.pgid, Signal::SIGKILL);
            self.readers.cancel();
        }
    }
}

/// A command started without the supervisor gets SIGKILL when polyprof dies (Linux). Also
/// used by the short-command runner (`pipeline::probe`): a hung Slurm command dies with its
/// driver even when the driver is SIGKILLed.
pub(crate) fn bare_command_dies_with_parent(
    cmd: &mut std::process::Command,
    parent_death_signal: bool,
) {
    #[cfg(target_os = "linux")]
    if parent_death_signal {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs between fork and exec and only makes async-signal-safe calls
        // (prctl, getppid); it allocates nothing.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(cmd, move || {
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
    let _ = (cmd, parent_death_signal);
}
