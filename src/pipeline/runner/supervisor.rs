//! The tiny supervising process: polyprof re-executes itself in a hidden mode as the direct child
//! of the runner, and that process starts the command. It is a child subreaper, so whatever the
//! command forks and orphans (double forks, daemons that call setsid and close their fds) comes
//! back to it; when the command exits it gives the rest the leak timeout, kills what is left,
//! and reports to the runner on fd 3 what it killed and how each process escaped. It gets a
//! parent-death signal, so a polyprof killed with SIGKILL still takes the whole tree with it.
//!
//! Synchronous and small on purpose: no async runtime, started and gone in about a millisecond.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::cgroup::{self, RunCgroup};
use super::tree;
use crate::model::outcome::{Escape, KilledProcess};

/// `argv[1]` that selects the hidden mode.
pub const HIDDEN_MODE: &str = "__polyprof-supervise";
/// The signal that tells the supervisor to kill everything now; also its parent-death signal.
pub const KILL_NOW: libc::c_int = libc::SIGUSR1;
/// At most this many killed processes are listed.
const KILLED_LISTED: usize = 200;
/// Bound on the final kill-and-reap loop (a fork bomb must not keep the supervisor forever).
const KILL_LOOP_LIMIT: Duration = Duration::from_secs(5);

/// How the command ended, as the supervisor saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildStatus {
    Exited(i32),
    Signalled(i32),
}

/// What the supervisor tells the runner when it is done.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// None: the command was killed by the supervisor before it exited (a forced stop), or
    /// could not be started.
    pub status: Option<ChildStatus>,
    /// The command could not be started: the message and the OS error number.
    pub spawn_error: Option<(String, Option<i32>)>,
    pub killed: Vec<KilledProcess>,
    /// More processes were killed than are listed.
    pub killed_unlisted: u64,
    /// The run's cgroup, when the command was placed in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<std::path::PathBuf>,
    /// The cgroup could not be removed (something in it would not die).
    #[serde(default)]
    pub cgroup_left: bool,
}

/// How the supervisor is set up: its parent, its waits, its report pipe, the cgroup.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub parent: i32,
    /// After the command exited by itself: how long the rest may take before SIGKILL.
    pub leak_timeout: Duration,
    /// After a stop signal (SIGTERM, SIGINT, SIGHUP): how long the whole tree may take to exit
    /// before SIGKILL. A profiler writes its results after SIGTERM, often from a process below
    /// a launcher script that dies at once (`ncu` is a shell script that runs the real binary
    /// as its child), so the grace is for every descendant, not only the command.
    pub kill_grace: Duration,
    pub report_fd: i32,
    pub cgroup: bool,
}

/// Whether supervisors are forked from this process instead of executed (see [`fork_in_process`]).
static IN_PROCESS: AtomicBool = AtomicBool::new(false);

/// From now on, start each supervisor as a fork of this process that runs the supervising code
/// and never executes anything itself, instead of executing `polyprof-supervise`. The exec, the
/// dynamic loader and the C library's start cost as much as the command's own start (about
/// 1.5 ms per run on the development machine, issue 37); the fork costs what `--tracking
/// group`'s fork costs. The forked supervisor runs only code that takes no lock another thread
/// of this process may hold (its own syscalls, `/proc` reads, the allocator, which glibc's
/// `fork` leaves usable, and `std::process::Command`, which takes the environment's read lock:
/// the program must never call `std::env::set_var` while runs start), closes every descriptor
/// it inherited but the report pipe and the standard streams, and ends with `_exit`. The CLI
/// calls it first thing in `main`; a library host (Python, any program with threads of its own)
/// keeps the executed supervisor by default.
pub fn fork_in_process() {
    IN_PROCESS.store(true, Ordering::Relaxed);
}

/// Whether [`fork_in_process`] was called.
pub fn in_process() -> bool {
    IN_PROCESS.load(Ordering::Relaxed)
}

/// The body of a forked supervisor (see [`fork_in_process`]); runs in the child between fork and
/// the exec that never comes, after std set up the standard streams and the process group.
/// `env` is the command's complete environment. Never returns.
pub fn run_in_fork(settings: &Settings, command: &[OsString], env: &[(OsString, OsString)]) -> ! {
    // First of all: the runner's signal handlers (tokio's) were copied into this process, and
    // must never run here; these signals are taken with sigtimedwait from now on.
    let set = signal_set();
    // SAFETY: plain syscalls on this single-threaded child.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    // The runner's descriptors (its pipes and logs, the run directory's lock, other runs' pipes
    // in a batch) must not be held here; closing std's exec-status pipe also tells the runner
    // that the start succeeded.
    close_descriptors_except(settings.report_fd);
    let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        supervise(settings, command, Some(env))
    }))
    .unwrap_or(101);
    // SAFETY: _exit ends this child without running the runner's exit handlers or flushing
    // buffers copied from it.
    unsafe { libc::_exit(code) }
}

/// Close every descriptor above the standard streams but `keep`.
fn close_descriptors_except(keep: i32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: close_range on this process's own descriptor table.
        let close_range = |first: i32, last: u32| unsafe {
            libc::syscall(libc::SYS_close_range, first as u32, last, 0u32) == 0
        };
        let below = keep <= 3 || close_range(3, (keep - 1) as u32);
        let above = close_range(keep.max(2) + 1, u32::MAX);
        if below && above {
            return;
        }
    }
    // No close_range (Linux before 5.9, other systems): every number up to the limit.
    // SAFETY: sysconf and close on this process's own descriptors.
    let limit = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(256, 1 << 16) as i32;
    for fd in 3..limit {
        if fd != keep {
            // SAFETY: as above.
            unsafe {
                libc::close(fd);
            }
        }
    }
}

/// The argv that runs `command` under the supervisor.
pub fn wrap_argv(
    exe: &std::path::Path,
    settings: &Settings,
    command: &[OsString],
) -> Vec<OsString> {
    let Settings {
        parent,
        leak_timeout,
        kill_grace,
        report_fd,
        cgroup,
    } = *settings;
    let mut argv = vec![
        exe.as_os_str().to_owned(),
        HIDDEN_MODE.into(),
        parent.to_string().into(),
        leak_timeout.as_millis().to_string().into(),
        kill_grace.as_millis().to_string().into(),
        report_fd.to_string().into(),
        if cgroup { "cgroup" } else { "-" }.into(),
        "--".into(),
    ];
    argv.extend(command.iter().cloned());
    argv
}

/// If this process was started as a supervisor, act as one and exit; otherwise return. Call it
/// first thing in `main` of any binary that runs commands with [`super::options::Tracking`]'s
/// supervisor mode.
pub fn run_if_requested() {
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() != Some(std::ffi::OsStr::new(HIDDEN_MODE)) {
        return;
    }
    let rest: Vec<OsString> = args.collect();
    std::process::exit(main(&rest));
}

fn main(args: &[OsString]) -> i32 {
    let parse = |i: usize| args.get(i).and_then(|a| a.to_str()?.parse::<u64>().ok());
    let text = |i: usize| args.get(i).and_then(|a| a.to_str());
    let (
        Some(parent),
        Some(leak_ms),
        Some(grace_ms),
        Some(report_fd),
        Some(cgroup @ ("cgroup" | "-")),
        Some("--"),
    ) = (parse(0), parse(1), parse(2), parse(3), text(4), text(5))
    else {
        let _ = writeln!(
            std::io::stderr(),
            "polyprof: {HIDDEN_MODE} is internal: PARENT_PID LEAK_MS KILL_GRACE_MS REPORT_FD cgroup|- -- CMD…"
        );
        return 2;
    };
    let settings = Settings {
        parent: parent as i32,
        leak_timeout: Duration::from_millis(leak_ms),
        kill_grace: Duration::from_millis(grace_ms),
        report_fd: report_fd as i32,
        cgroup: cgroup == "cgroup",
    };
    supervise(&settings, &args[6..], None)
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in HANDLED {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// The signals the supervisor handles (blocked, then waited for).
const HANDLED: [libc::c_int; 5] = [
    libc::SIGCHLD,
    KILL_NOW,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
];

/// The next blocked signal, or None after `timeout`.
#[cfg(target_os = "linux")]
fn wait_signal(set: &libc::sigset_t, timeout: Duration) -> Option<libc::c_int> {
    let spec = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: the set is initialised; info is written by the kernel.
    let sig = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::sigtimedwait(set, &mut info, &spec)
    };
    (sig > 0).then_some(sig)
}

/// The next blocked signal, or None after `timeout`. Systems without `sigtimedwait` (macOS)
/// poll the pending set and take a pending signal with `sigwait`, which then returns at once.
#[cfg(not(target_os = "linux"))]
fn wait_signal(set: &libc::sigset_t, timeout: Duration) -> Option<libc::c_int> {
    let deadline = Instant::now() + timeout;
    loop {
        // SAFETY: sigpending fills a local set; sigwait takes a signal that is pending.
        unsafe {
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            if HANDLED
                .iter()
                .any(|&sig| libc::sigismember(&pending, sig) == 1)
            {
                let mut sig = 0;
                if libc::sigwait(set, &mut sig) == 0 {
                    return Some(sig);
                }
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(5)));
    }
}

/// Become the reaper of orphaned descendants and die with the parent (Linux); elsewhere the
/// process group and the pipe to polyprof are all there is.
fn adopt_orphans_and_follow_parent() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain prctl calls on this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, KILL_NOW, 0, 0, 0);
    }
}

/// Reap every child that has exited; remember the command's status.
fn reap(command: i32, status: &mut Option<ChildStatus>) {
    loop {
        let mut raw = 0;
        // SAFETY: waitpid with a valid out-pointer.
        let pid = unsafe { libc::waitpid(-1, &mut raw, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        if pid == command {
            *status = Some(if libc::WIFEXITED(raw) {
                ChildStatus::Exited(libc::WEXITSTATUS(raw))
            } else {
                ChildStatus::Signalled(libc::WTERMSIG(raw))
            });
        }
    }
}

struct Me {
    pid: i32,
    group: i32,
    session: i32,
}

/// `env`: the command's environment, when it is not this process's own (a forked supervisor).
fn supervise(
    settings: &Settings,
    command: &[OsString],
    env: Option<&[(OsString, OsString)]>,
) -> i32 {
    let Settings {
        parent,
        leak_timeout,
        kill_grace,
        report_fd,
        ..
    } = *settings;
    let set = signal_set();
    // SAFETY: plain syscalls on this single-threaded process.
    let me = unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        adopt_orphans_and_follow_parent();
        Me {
            pid: libc::getpid(),
            group: libc::getpgrp(),
            session: libc::getsid(0),
        }
    };
    // The command must not inherit the report pipe.
    // SAFETY: fcntl on a descriptor number; failure only means there is no report channel.
    let report_fd = unsafe {
        (report_fd > 2 && libc::fcntl(report_fd, libc::F_SETFD, libc::FD_CLOEXEC) == 0)
            .then(|| std::fs::File::from_raw_fd(report_fd))
    };
    let parent_alive = || unsafe { libc::getppid() } == parent;
    let mut report = Report::default();
    let Some((program, rest)) = command.split_first() else {
        report.spawn_error = Some(("the command is empty".into(), None));
        return finish(report_fd, &report, 127);
    };
    if !parent_alive() {
        return 1;
    }
    let cgroup = settings
        .cgroup
        .then(|| RunCgroup::create(me.pid as u32))
        .flatten();
    report.cgroup = cgroup.as_ref().map(|c| c.dir().to_path_buf());
    let command_pid = match start_command(program, rest, env, cgroup.as_ref()) {
        Ok(pid) => pid,
        Err(e) => {
            let errno = e.raw_os_error();
            report.spawn_error = Some((e.to_string(), errno));
            let code = if errno == Some(libc::ENOENT) {
                127
            } else {
                126
            };
            return finish(report_fd, &report, code);
        }
    };

    let mut kill_now = false;
    // When a stop signal came: from then on every descendant has the kill grace to exit.
    let mut stopping_since: Option<Instant> = None;
    while report.status.is_none() && !kill_now {
        match wait_signal(&set, Duration::from_secs(1)) {
            Some(libc::SIGCHLD) => reap(command_pid, &mut report.status),
            Some(KILL_NOW) => kill_now = true,
            // The runner signals the whole group, which includes the command; only a command
            // that moved out of the group needs the signal passed on.
            Some(sig) => {
                stopping_since.get_or_insert_with(Instant::now);
                forward(command_pid, &me, sig);
            }
            None => {
                reap(command_pid, &mut report.status);
                kill_now = !parent_alive();
            }
        }
    }
    if !kill_now {
        // The command is gone. Left alone, the rest get the leak timeout; after a stop signal
        // they get what is left of the kill grace (a profiler below a launcher that died at
        // once is still writing its results), and the runner's own SIGKILL request
        // (`KILL_NOW`) ends it as the grace runs out.
        let leak_deadline = Instant::now() + leak_timeout;
        let deadline = |stopping: Option<Instant>| match stopping {
            Some(at) => (at + kill_grace).max(leak_deadline),
            None => leak_deadline,
        };
        loop {
            reap(command_pid, &mut report.status);
            let live = tree::descendants_of(me.pid).iter().any(|p| !p.zombie);
            let left = deadline(stopping_since).saturating_duration_since(Instant::now());
            if !live || left.is_zero() {
                break;
            }
            match wait_signal(&set, left.min(Duration::from_millis(5))) {
                Some(KILL_NOW) => break,
                Some(libc::SIGCHLD) | None => {}
                Some(sig) => {
                    stopping_since.get_or_insert_with(Instant::now);
                    forward_to_descendants(&me, sig);
                }
            }
        }
    }
    kill_all(&me, command_pid, &mut report, cgroup.as_ref());
    if let Some(cgroup) = cgroup
        && !cgroup.kill_and_remove(KILL_LOOP_LIMIT)
    {
        report.cgroup_left = true;
    }
    let code = match report.status {
        Some(ChildStatus::Exited(code)) => code,
        Some(ChildStatus::Signalled(sig)) => 128 + sig,
        None => 128 + libc::SIGKILL,
    };
    finish(report_fd, &report, code)
}

/// Start the command: inside the run's cgroup with `clone3` where it can be (no move into the
/// cgroup, which waits for an RCU grace period), else forked and moved in before exec; without
/// a cgroup, with `posix_spawn`.
fn start_command(
    program: &OsString,
    rest: &[OsString],
    env: Option<&[(OsString, OsString)]>,
    cgroup: Option<&RunCgroup>,
) -> std::io::Result<i32> {
    #[cfg(target_os = "linux")]
    if let Some(dir) = cgroup.and_then(|c| c.open_dir().ok()) {
        use super::clone_into::{Started, spawn_in_cgroup};
        match spawn_in_cgroup(program, rest, env, &dir)? {
            Started::Running(pid) => return Ok(pid),
            Started::ExecFailed(e) => return Err(e),
            Started::Unsupported => {}
        }
    }
    let joiner = cgroup.and_then(RunCgroup::joiner);
    let Some(joiner) = joiner else {
        // Nothing to do in the child before exec: no copy of this address space (see
        // `spawn_exec`).
        return super::spawn_exec::spawn_command(program, rest, env);
    };
    let mut command = std::process::Command::new(program);
    command.args(rest);
    if let Some(env) = env {
        command.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    // The command joins the run's cgroup before it execs, so everything it starts is in it;
    // the signals this process blocks must not stay blocked in it (std keeps the mask it
    // inherits).
    // SAFETY: only sigemptyset, pthread_sigmask and join_now's raw open/write/close
    // (async-signal-safe) between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            // Not joined: the subreaper still finds every descendant.
            let _ = cgroup::join_now(&joiner);
            Ok(())
        });
    }
    Ok(command.spawn()?.id() as i32)
}

fn forward(command: i32, me: &Me, sig: libc::c_int) {
    // SAFETY: getpgid/kill on the command's pid, which this process has not reaped yet.
    unsafe {
        if libc::getpgid(command) != me.group {
            libc::kill(command, sig);
        }
    }
}

/// A stop signal that came after the command exited: the descendants that left the group
/// get it too (the group itself already has it from the runner).
fn forward_to_descendants(me: &Me, sig: libc::c_int) {
    for proc in tree::descendants_of(me.pid) {
        if !proc.zombie && proc.pgid != me.group {
            // SAFETY: kill on a pid just read below this process.
            unsafe {
                libc::kill(proc.pid, sig);
            }
        }
    }
}

/// SIGKILL every descendant, list the ones other than the command, and reap until none is left.
/// With a cgroup, whatever is in it is listed and killed at once first.
fn kill_all(me: &Me, command: i32, report: &mut Report, cgroup: Option<&RunCgroup>) {
    let started = Instant::now();
    let mut listed = std::collections::BTreeSet::new();
    if let Some(cgroup) = cgroup {
        let pids = cgroup.pids();
        for pid in pids {
            if pid != command
                && listed.insert(pid)
                && let Some(proc) = tree::read_proc(pid)
            {
                list_killed(me, report, &proc);
            }
        }
        cgroup.kill();
    }
    loop {
        reap(command, &mut report.status);
        let below = tree::descendants_of(me.pid);
        let live: Vec<_> = below.iter().filter(|p| !p.zombie).collect();
        if live.is_empty() {
            if below.is_empty() || started.elapsed() > KILL_LOOP_LIMIT {
                return;
            }
            // Zombies whose parents are still being killed: wait for them to come back here.
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        for proc in &live {
            if proc.pid != command && listed.insert(proc.pid) {
                list_killed(me, report, proc);
            }
            // SAFETY: kill on a pid just read below this process.
            unsafe {
                libc::kill(proc.pid, libc::SIGKILL);
            }
        }
        if started.elapsed() > KILL_LOOP_LIMIT {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn list_killed(me: &Me, report: &mut Report, proc: &tree::ProcInfo) {
    if report.killed.len() < KILLED_LISTED {
        let escaped = tree::classify(proc, me.group, me.session, me.pid);
        report.killed.push(tree::describe(proc, escaped));
    } else {
        report.killed_unlisted += 1;
    }
}

fn finish(report_fd: Option<std::fs::File>, report: &Report, code: i32) -> i32 {
    if let Some(mut fd) = report_fd
        && let Ok(bytes) = serde_json::to_vec(report)
    {
        let _ = fd.write_all(&bytes);
    }
    code
}

/// Read the supervisor's report from the read end of its pipe after it exited.
pub fn read_report(fd: std::os::fd::OwnedFd) -> Option<Report> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let mut file = std::fs::File::from(fd);
    // The writer has exited, so this ends at EOF unless a stray process kept the write end: the
    // descriptor is non-blocking, so that case ends at "would block" instead of hanging (with
    // what was read kept). Read straight into the vector: a report is about 100 bytes, and a
    // zeroed 64 KiB buffer on the stack cost page faults on every run.
    let _ = file.read_to_end(&mut bytes);
    serde_json::from_slice(&bytes).ok()
}

/// The description of a killed process for a warning: `pid 123 (sleep 100): left the session`.
pub fn describe_killed(killed: &[KilledProcess]) -> String {
    killed
        .iter()
        .map(|k| {
            let argv = k.argv.join(" ");
            let argv = if argv.is_empty() { "?".into() } else { argv };
            format!("pid {} ({argv}): {}", k.pid, k.escaped)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// An escape counts as a leak of the group (for `leaked`) only if the process was not simply
/// still in the group; all of them were killed either way.
pub fn any_escaped(killed: &[KilledProcess]) -> bool {
    killed.iter().any(|k| k.escaped != Escape::InGroup)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_argv_keeps_the_command_verbatim() {
        use std::os::unix::ffi::OsStringExt;
        let odd = OsString::from_vec(vec![b'a', 0xff, b'b']);
        let settings = Settings {
            parent: 7,
            leak_timeout: Duration::from_millis(250),
            kill_grace: Duration::from_millis(2000),
            report_fd: 9,
            cgroup: false,
        };
        let argv = wrap_argv(
            std::path::Path::new("/bin/polyprof"),
            &settings,
            &["prog".into(), odd.clone()],
        );
        assert_eq!(argv[1], HIDDEN_MODE);
        assert_eq!(argv[2], "7");
        assert_eq!(argv[3], "250");
        assert_eq!(argv[4], "2000");
        assert_eq!(argv[5], "9");
        assert_eq!(argv[6], "-");
        assert_eq!(argv[7], "--");
        assert_eq!(argv[9], odd);
    }

    #[test]
    fn report_round_trips() {
        let report = Report {
            status: Some(ChildStatus::Signalled(9)),
            spawn_error: None,
            killed: vec![KilledProcess {
                pid: 5,
                argv: vec!["sleep".into(), "9".into()],
                escaped: Escape::NewSession,
            }],
            killed_unlisted: 0,
            ..Report::default()
        };
        let bytes = serde_json::to_vec(&report).unwrap();
        assert_eq!(serde_json::from_slice::<Report>(&bytes).unwrap(), report);
        assert!(any_escaped(&report.killed));
        assert_eq!(
            describe_killed(&report.killed),
            "pid 5 (sleep 9): left the session (setsid)"
        );
    }
}
