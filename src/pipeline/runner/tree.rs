//! The process tree below a process, read from /proc: who descends from whom, which session and
//! group each one is in, and its command line. Used to find what a command left behind and to
//! say how it escaped the process group.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::outcome::{Escape, KilledProcess};

/// Bytes of a command line kept in a report (a runaway argv must not bloat run.json).
const CMDLINE_KEEP: usize = 1024;

/// One process as /proc describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub sid: i32,
    pub zombie: bool,
}

impl ProcInfo {
    /// A live process with these ids (tests describe process tables with it).
    #[cfg(test)]
    pub fn live(pid: i32, ppid: i32, pgid: i32, sid: i32) -> Self {
        ProcInfo {
            pid,
            ppid,
            pgid,
            sid,
            zombie: false,
        }
    }
}

/// Parse `/proc/<pid>/stat`. The command name is in parentheses and may hold spaces and `)`,
/// so the fields are taken after the last `)`.
pub fn parse_stat(pid: i32, stat: &str) -> Option<ProcInfo> {
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    let sid = fields.next()?.parse().ok()?;
    Some(ProcInfo {
        pid,
        ppid,
        pgid,
        sid,
        zombie: state == "Z" || state == "X",
    })
}

/// One process from `/proc/<pid>/stat`; None when it is gone.
pub fn read_proc(pid: i32) -> Option<ProcInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &stat)
}

/// Every process visible in /proc (empty where there is no /proc).
pub fn snapshot() -> Vec<ProcInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// The processes below `root` (not `root` itself), zombies included, parents before children.
pub fn descendants(procs: &[ProcInfo], root: i32) -> Vec<ProcInfo> {
    let mut children: BTreeMap<i32, Vec<&ProcInfo>> = BTreeMap::new();
    for proc in procs {
        children.entry(proc.ppid).or_default().push(proc);
    }
    let mut found = Vec::new();
    let mut seen = BTreeSet::from([root]);
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        for child in children.get(&parent).into_iter().flatten() {
            if seen.insert(child.pid) {
                found.push((*child).clone());
                queue.push(child.pid);
            }
        }
    }
    found
}

/// The children of `pid` from `/proc/<pid>/task/*/children` (one file per thread); None when
/// the kernel does not offer those files (then a full scan is needed).
fn children_of(pid: i32) -> Option<Vec<i32>> {
    // A process of one thread (the supervisor, most commands) has one children file: read it
    // without listing the task directory (an opendir's 32 KiB buffer made the forked
    // supervisor's allocator consolidate, a copy-on-write fault per heap page it touched).
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        && threads(pid) == Some(1)
    {
        return Some(parse_pids(&text));
    }
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut children = Vec::new();
    let mut any = false;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        any = true;
        children.extend(parse_pids(&text));
    }
    any.then_some(children)
}

fn parse_pids(text: &str) -> Vec<i32> {
    text.split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
        .collect()
}

/// The number of threads of `pid` (field 20 of /proc/PID/stat).
fn threads(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    // After the command name: state is field 3, num_threads field 20.
    rest.split_whitespace().nth(17)?.parse().ok()
}

/// The processes below `root`, walking down from it: cost grows with the tree, not with
/// every process on the machine. Falls back to a full scan of /proc.
pub fn descendants_of(root: i32) -> Vec<ProcInfo> {
    let Some(first) = children_of(root) else {
        return descendants(&snapshot(), root);
    };
    let mut found = Vec::new();
    let mut seen = BTreeSet::from([root]);
    let mut queue = first;
    while let Some(pid) = queue.pop() {
        if !seen.insert(pid) {
            continue;
        }
        let Some(info) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| parse_stat(pid, &stat))
        else {
            continue;
        };
        found.push(info);
        queue.extend(children_of(pid).unwrap_or_default());
    }
    found
}

/// Live (non-zombie) members of process group `pgid`.
pub fn group_members(procs: &[ProcInfo], pgid: i32) -> Vec<ProcInfo> {
    procs
        .iter()
        .filter(|p| p.pgid == pgid && !p.zombie)
        .cloned()
        .collect()
}

/// The command line of `pid`, lossy, cut to a bounded size; empty when it cannot be read.
pub fn cmdline(pid: i32) -> Vec<String> {
    let Ok(mut bytes) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return Vec::new();
    };
    bytes.truncate(CMDLINE_KEEP);
    bytes
        .strip_suffix(b"\0")
        .unwrap_or(&bytes)
        .split(|&b| b == 0)
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect()
}

/// How `proc` got out of reach of a signal to the command's group.
pub fn classify(proc: &ProcInfo, group: i32, session: i32, supervisor: i32) -> Escape {
    if proc.sid != session {
        Escape::NewSession
    } else if proc.pgid != group {
        Escape::NewProcessGroup
    } else if proc.ppid == supervisor {
        Escape::Reparented
    } else {
        Escape::InGroup
    }
}

/// The record of a process about to be killed.
pub fn describe(proc: &ProcInfo, escaped: Escape) -> KilledProcess {
    KilledProcess {
        pid: proc.pid,
        argv: cmdline(proc.pid),
        escaped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32, pgid: i32, sid: i32) -> ProcInfo {
        ProcInfo::live(pid, ppid, pgid, sid)
    }

    #[test]
    fn stat_with_spaces_and_parens_in_the_name_parses() {
        let info = parse_stat(42, "42 (a) b (c)) S 7 9 11 0 -1 4194560").unwrap();
        assert_eq!(info, p(42, 7, 9, 11));
        assert!(parse_stat(1, "garbage").is_none());
        let zombie = parse_stat(5, "5 (x) Z 1 5 5 0").unwrap();
        assert!(zombie.zombie);
    }

    #[test]
    fn descendants_follow_parents_and_skip_other_trees() {
        let procs = [
            p(10, 1, 10, 10),
            p(11, 10, 10, 10),
            p(12, 11, 12, 12),
            p(13, 12, 12, 12),
            p(20, 1, 20, 20),
        ];
        let pids: Vec<i32> = descendants(&procs, 10).iter().map(|p| p.pid).collect();
        assert_eq!(pids.len(), 3);
        for pid in [11, 12, 13] {
            assert!(pids.contains(&pid));
        }
        assert!(descendants(&procs, 20).is_empty());
    }

    #[test]
    fn escapes_are_told_apart() {
        let (group, session, sup) = (10, 5, 10);
        assert_eq!(
            classify(&p(1, 10, 1, 1), group, session, sup),
            Escape::NewSession
        );
        assert_eq!(
            classify(&p(1, 10, 1, 5), group, session, sup),
            Escape::NewProcessGroup
        );
        assert_eq!(
            classify(&p(1, 10, 10, 5), group, session, sup),
            Escape::Reparented
        );
        assert_eq!(
            classify(&p(1, 11, 10, 5), group, session, sup),
            Escape::InGroup
        );
    }

    #[test]
    fn walking_down_finds_a_real_grandchild() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let me = std::process::id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let found = loop {
            let found = descendants_of(me);
            if found.len() >= 2 || std::time::Instant::now() > deadline {
                break found;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        for p in found.iter().filter(|p| p.ppid == child.id() as i32) {
            // SAFETY: kill on the sleep this test started.
            unsafe {
                libc::kill(p.pid, libc::SIGKILL);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            found.iter().any(|p| p.pid == child.id() as i32),
            "{found:?}"
        );
        assert!(
            found.iter().any(|p| p.ppid == child.id() as i32),
            "{found:?}"
        );
    }

    #[test]
    fn a_child_of_another_thread_is_found_and_one_thread_is_counted_as_one() {
        // Forked from a second thread: it is in that thread's children file, not the main one's.
        let mut child = std::thread::spawn(|| {
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap()
        })
        .join()
        .unwrap();
        let me = std::process::id() as i32;
        let children = children_of(me).unwrap_or_default();
        let _ = child.kill();
        let _ = child.wait();
        assert!(children.contains(&(child.id() as i32)), "{children:?}");
        let mut single = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let counted = threads(single.id() as i32);
        let _ = single.kill();
        let _ = single.wait();
        assert_eq!(counted, Some(1));
    }

    #[test]
    fn own_command_line_is_read() {
        let me = cmdline(std::process::id() as i32);
        assert!(!me.is_empty());
    }
}
