//! Whether a cgroup v2 per run could be created here (then `cgroup.kill` would end a whole
//! tree at once). A probe for `doctor`: the runner's tracking is the supervising subreaper, with
//! the process group as the floor; a per-run cgroup is not used yet.

use std::path::{Path, PathBuf};

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
                    "a run's cgroup can be created under {}",
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
    fn the_probe_answers_either_way_without_leaving_a_cgroup() {
        let support = super::probe();
        assert!(!support.detail.is_empty());
        if let Ok(dir) = super::own_cgroup_dir() {
            let left = dir.join(format!("polyprof-probe-{}", std::process::id()));
            assert!(!left.exists());
        }
    }
}
