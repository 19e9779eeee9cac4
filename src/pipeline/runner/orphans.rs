//! What a killed supervisor leaves behind. A command that SIGKILLs its own supervisor
//! (`kill -9 $PPID`), or the OOM killer, orphans everything below it; the kernel hands the
//! orphans to the nearest ancestor that is a child subreaper, else to init, where nothing links
//! them to the run any more. `polyprof` (the CLI) makes itself a subreaper
//! ([`become_subreaper`]), so they come to it: when the runner sees its supervisor end without
//! a report, it ends them ([`kill_adopted`]).
//!
//! Which of polyprof's children are such orphans: polyprof never starts a process in another
//! session, and never one in a supervisor's process group, so a child of polyprof that is in
//! another session (a `setsid` daemon) or in the dead supervisor's group (the command itself)
//! was adopted. Its own descendants go with it.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::tree::{self, ProcInfo};
use crate::model::outcome::KilledProcess;

/// Bound on the kill-and-reap loop (a fork bomb must not keep polyprof forever).
const KILL_LOOP_LIMIT: Duration = Duration::from_secs(2);

/// Make this process the reaper of its orphaned descendants (Linux; false elsewhere or when
/// refused). For a program that runs commands with `Tracking::Supervisor`: with it, what a
/// killed supervisor leaves behind can still be found and ended. It changes the whole
/// process, so the library never sets it by itself.
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: a plain prctl on this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// Whether orphaned descendants come to this process.
pub fn is_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        let mut flag: libc::c_int = 0;
        // SAFETY: prctl writes one int through the pointer.
        let ok = unsafe {
            libc::prctl(
                libc::PR_GET_CHILD_SUBREAPER,
                &mut flag as *mut libc::c_int as libc::c_ulong,
                0,
                0,
                0,
            )
        } == 0;
        ok && flag != 0
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// The orphans of the dead supervisor `supervisor` (its pid, also its group's id) that came to
/// this process, and everything below them.
fn adopted(procs: &[ProcInfo], me: i32, session: i32, supervisor: i32) -> Vec<ProcInfo> {
    let mut found = Vec::new();
    for proc in procs {
        if proc.ppid == me && (proc.sid != session || proc.pgid == supervisor) {
            found.push(proc.clone());
            found.extend(tree::descendants(procs, proc.pid));
        }
    }
    found
}

/// SIGKILL what the dead supervisor `supervisor` left to this process, reap it, and list it.
/// Empty when this process is not a subreaper (the orphans went to init: out of reach).
pub fn kill_adopted(supervisor: i32) -> Vec<KilledProcess> {
    if !is_subreaper() {
        return Vec::new();
    }
    // SAFETY: getpid/getsid on this process.
    let (me, session) = unsafe { (libc::getpid(), libc::getsid(0)) };
    let started = Instant::now();
    let mut listed = BTreeSet::new();
    let mut killed = Vec::new();
    loop {
        let found = adopted(&tree::snapshot(), me, session, supervisor);
        for proc in found.iter().filter(|p| p.zombie && p.ppid == me) {
            // SAFETY: waitpid on a child of this process that has exited.
            unsafe {
                libc::waitpid(proc.pid, std::ptr::null_mut(), libc::WNOHANG);
            }
        }
        let live: Vec<&ProcInfo> = found.iter().filter(|p| !p.zombie).collect();
        if found.is_empty() || started.elapsed() > KILL_LOOP_LIMIT {
            break;
        }
        for proc in live {
            if listed.insert(proc.pid) {
                let escaped = tree::classify(proc, supervisor, session, supervisor);
                killed.push(tree::describe(proc, escaped));
            }
            // SAFETY: kill on a pid just read below this process.
            unsafe {
                libc::kill(proc.pid, libc::SIGKILL);
            }
        }
        // Killed processes' children come here next; zombies wait to be reaped.
        std::thread::sleep(Duration::from_millis(1));
    }
    killed
}

/// Whether a live process is left in group `pgid`. Members of it that exited after their
/// parent did were adopted by this process when it is a subreaper; they are reaped here, or they
/// would stay as zombies (and keep the group in existence) until polyprof exits. polyprof never
/// starts a process into a run's group other than its leader, which is reaped already, so every
/// zombie child of polyprof in that group is such an orphan.
pub fn group_alive_reaping_adopted(pgid: i32) -> bool {
    if pgid <= 0 || nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), None).is_err() {
        return false;
    }
    // SAFETY: getpid on this process.
    let me = unsafe { libc::getpid() };
    let mut alive = false;
    for proc in tree::snapshot().iter().filter(|p| p.pgid == pgid) {
        if !proc.zombie {
            alive = true;
        } else if proc.ppid == me {
            // SAFETY: waitpid on a child of this process that has exited.
            unsafe {
                libc::waitpid(proc.pid, std::ptr::null_mut(), libc::WNOHANG);
            }
        }
    }
    alive
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32, pgid: i32, sid: i32) -> ProcInfo {
        ProcInfo::live(pid, ppid, pgid, sid)
    }

    #[test]
    fn only_orphans_of_the_dead_supervisor_and_their_descendants_are_taken() {
        // polyprof is 100 in session 50, group 100; the dead supervisor was 200.
        let procs = [
            p(201, 100, 200, 50),  // the command, still in the supervisor's group
            p(300, 100, 300, 300), // a setsid daemon
            p(301, 300, 300, 300), // its child
            p(400, 100, 400, 50),  // another run's supervisor or a probe: polyprof's own child
            p(401, 100, 100, 50),  // a plain child of polyprof
            p(500, 1, 500, 500),   // someone else's daemon
        ];
        let pids: Vec<i32> = adopted(&procs, 100, 50, 200)
            .iter()
            .map(|p| p.pid)
            .collect();
        assert_eq!(pids, [201, 300, 301]);
    }
}
