//! A cgroup v2 per run, where one can be created: the supervisor puts the command in
//! `<its own cgroup>/polyprof-run-<supervisor pid>`, so every descendant is in it whatever it
//! does (no fork is fast enough to escape `cgroup.kill`), and the runner can still end them if
//! the supervisor itself is killed. Where none can be created (cgroup v1 only, no delegation,
//! no `cgroup.kill` before Linux 5.14) the subreaper and the process group are all there is.
//! `probe` answers `doctor`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The name of a run's cgroup, beside the supervisor in the supervisor's own cgroup.
pub fn run_cgroup_name(supervisor_pid: u32) -> String {
    format!("polyprof-run-{supervisor_pid}")
}

/// A run's cgroup, removed on drop once it is empty.
#[derive(Debug)]
pub struct RunCgroup {
    dir: PathBuf,
}

impl RunCgroup {
    /// Create the cgroup for the run supervised by this process; None where that is not
    /// possible here (the reason is what `probe` reports).
    pub fn create(supervisor_pid: u32) -> Option<RunCgroup> {
        let dir = own_cgroup_dir().ok()?.join(run_cgroup_name(supervisor_pid));
        std::fs::create_dir(&dir).ok()?;
        let cgroup = RunCgroup { dir };
        cgroup.dir.join("cgroup.kill").exists().then_some(cgroup)
    }

    /// The run's cgroup that a supervisor (a child of this process, so in the same cgroup)
    /// created, if it is still there.
    pub fn of_supervisor(supervisor_pid: u32) -> Option<RunCgroup> {
        let dir = own_cgroup_dir().ok()?.join(run_cgroup_name(supervisor_pid));
        dir.is_dir().then_some(RunCgroup { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cgroup's directory, open (for `clone3(CLONE_INTO_CGROUP)`).
    pub fn open_dir(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        std::fs::File::open(&self.dir).map(Into::into)
    }

    /// `cgroup.procs` of the cgroup.
    pub fn procs_path(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// What a child needs to join the cgroup between fork and exec ([`join_now`]).
    pub fn joiner(&self) -> Option<std::ffi::CString> {
        use std::os::unix::ffi::OsStrExt;
        std::ffi::CString::new(self.procs_path().as_os_str().as_bytes()).ok()
    }

    /// The processes in the cgroup now.
    pub fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.procs_path())
            .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// SIGKILL everything in the cgroup at once (the kernel walks it; forks cannot outrun it).
    pub fn kill(&self) -> bool {
        std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok()
    }

    /// Kill what is left and remove the cgroup, waiting at most `limit` for it to empty.
    pub fn kill_and_remove(self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.pids().is_empty() && std::fs::remove_dir(&self.dir).is_ok() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            self.kill();
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Move the calling process into the cgroup whose `cgroup.procs` is `procs`. Only raw system
/// calls, nothing allocated: safe between fork and exec.
pub fn join_now(procs: &std::ffi::CStr) -> std::io::Result<()> {
    // SAFETY: open/write/close on a NUL-terminated path and a static buffer.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = libc::write(fd, b"0".as_ptr().cast(), 1);
        let error = std::io::Error::last_os_error();
        libc::close(fd);
        if written != 1 {
            return Err(error);
        }
    }
    Ok(())
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        // Succeeds only when empty; `kill_and_remove` is the way that waits.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CgroupSupport {
    pub available: bool,
    /// Where a run's cgroup would go, or why there is none.
    pub detail: String,
}

/// The cgroup v2 directory of this process, from `/proc/self/cgroup` and the mounts.
fn own_cgroup_dir() -> Result<PathBuf, String> {
    let text = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let relative = text
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or("no cgroup v2 hierarchy (cgroup v1 only)")?;
    let relative = relative.trim_start_matches('/');
    for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
        if Path::new(root).join("cgroup.controllers").exists() {
            return Ok(Path::new(root).join(relative));
        }
    }
    Err("the cgroup v2 file system is not mounted".to_string())
}

/// Try to create (and remove) a child cgroup with `cgroup.kill`.
pub fn probe() -> CgroupSupport {
    let dir = match own_cgroup_dir() {
        Ok(dir) => dir,
        Err(detail) => {
            return CgroupSupport {
                available: false,
                detail,
            };
        }
    };
    let child = dir.join(format!("polyprof-probe-{}", std::process::id()));
    let result = match std::fs::create_dir(&child) {
        Ok(()) => {
            let kill = child.join("cgroup.kill").exists();
            let _ = std::fs::remove_dir(&child);
            if kill {
                Ok(format!(
                    "`--tracking cgroup` puts each run in its own cgroup under {}",
                    dir.display()
                ))
            } else {
                Err("the kernel has no cgroup.kill (Linux 5.14 or later has it)".to_string())
            }
        }
        Err(e) => Err(format!(
            "cannot create a cgroup under {}: {e} (delegate a cgroup to this user, or run in a container with a writable cgroup)",
            dir.display()
        )),
    };
    match result {
        Ok(detail) => CgroupSupport {
            available: true,
            detail,
        },
        Err(detail) => CgroupSupport {
            available: false,
            detail,
        },
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_run_cgroup_holds_a_process_and_kills_it() {
        use std::os::unix::process::CommandExt;
        let Some(cgroup) = super::RunCgroup::create(std::process::id()) else {
            eprintln!("no cgroup v2 here: {}", super::probe().detail);
            return;
        };
        let procs = cgroup.joiner().unwrap();
        let mut command = std::process::Command::new("sleep");
        command.arg("30");
        // SAFETY: join_now makes only raw system calls.
        unsafe {
            command.pre_exec(move || super::join_now(&procs));
        }
        let mut child = command.spawn().unwrap();
        assert_eq!(cgroup.pids(), vec![child.id() as i32]);
        let dir = cgroup.dir().to_path_buf();
        assert!(cgroup.kill_and_remove(std::time::Duration::from_secs(5)));
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        assert!(!dir.exists());
    }

    #[test]
    fn the_probe_answers_either_way_without_leaving_a_cgroup() {
        let support = super::probe();
        assert!(!support.detail.is_empty());
        if let Ok(dir) = super::own_cgroup_dir() {
            let left = dir.join(format!("polyprof-probe-{}", std::process::id()));
            assert!(!left.exists());
        }
    }
}
