//! Each side timed alone: while one side's timing block runs, the other side's worker and every
//! process it started are stopped (SIGSTOP) and continued (SIGCONT) after, so a background
//! thread or child of the candidate cannot load the machine while the reference is timed (nor
//! the trusted worker while the candidate is). The tree is read from `/proc` (each thread's
//! `children`), outside the stopped processes.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// `root` and its descendants, parents first, as `/proc/<pid>/task/<tid>/children` lists them.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut tree = vec![root];
    let mut next = 0;
    while next < tree.len() {
        let pid = tree[next];
        next += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let path = task.path().join("children");
            let Ok(text) = std::fs::read_to_string(path) else {
                continue;
            };
            for child in text
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                if !tree.contains(&child) {
                    tree.push(child);
                }
            }
        }
    }
    tree
}

/// Processes held stopped until this is dropped (then continued, whatever happened between).
#[derive(Debug, Default)]
pub struct Frozen {
    pids: Vec<u32>,
}

impl Frozen {
    /// Stop `root`'s process tree. Stopping a parent first keeps it from starting children
    /// while the tree is walked; the walk is repeated once to catch any started meanwhile.
    pub fn stop(root: u32) -> Frozen {
        let mut frozen = Frozen::default();
        for _ in 0..2 {
            for pid in process_tree(root) {
                if !frozen.pids.contains(&pid) && signal(pid, Signal::SIGSTOP) {
                    frozen.pids.push(pid);
                }
            }
        }
        frozen
    }

    /// Whether anything was stopped.
    pub fn stopped_any(&self) -> bool {
        !self.pids.is_empty()
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        for &pid in self.pids.iter().rev() {
            signal(pid, Signal::SIGCONT);
        }
    }
}

/// The fields of `/proc/PID/stat` that follow the command's closing parenthesis: the state
/// (field 3) first.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Process `pid`'s state letter (`R`, `S`, `T` stopped, `t` stopped by a tracer, ...).
pub fn process_state(pid: u32) -> Option<char> {
    stat_fields(pid)?.first()?.chars().next()
}

/// When process `pid` started (field 22 of `/proc/PID/stat`, clock ticks since boot): with
/// its pid, what names one process even after the pid is reused.
pub fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

fn signal(pid: u32, signal: Signal) -> bool {
    i32::try_from(pid).is_ok_and(|p| p > 1 && kill(Pid::from_raw(p), signal).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn state(pid: u32) -> char {
        process_state(pid).unwrap_or('?')
    }

    #[test]
    fn a_process_and_its_child_are_stopped_then_continued() {
        let mut parent = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let root = parent.id();
        let mut tree = Vec::new();
        for _ in 0..100 {
            tree = process_tree(root);
            if tree.len() >= 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(tree.len(), 2, "sh and its sleep: {tree:?}");
        {
            let frozen = Frozen::stop(root);
            assert!(frozen.stopped_any());
            std::thread::sleep(Duration::from_millis(50));
            assert!(
                tree.iter().all(|&p| state(p) == 'T'),
                "{:?}",
                tree.iter().map(|&p| state(p)).collect::<Vec<_>>()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(tree.iter().all(|&p| state(p) != 'T'));
        for &pid in tree.iter().rev() {
            signal(pid, Signal::SIGKILL);
        }
        parent.wait().unwrap();
    }
}
