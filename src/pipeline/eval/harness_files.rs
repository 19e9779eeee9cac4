//! The worker scripts, embedded in polyprof and written into each eval's `harness/` directory,
//! so the workers run exactly the code of this polyprof build. They live in the Python package
//! (python/polyprof/harness/); `harness/` beside this file links to them, so the crate's package
//! (which leaves out python/, a crate of its own) still holds them.

use std::path::{Path, PathBuf};

use crate::model::atomic_file::write_atomic;
use crate::model::error::{Error, Result};

/// The worker's file name in `DIR/harness/`.
pub const WORKER_SCRIPT: &str = "polyprof_eval_worker.py";
const TIMING_SCRIPT: &str = "polyprof_timing.py";

const FILES: [(&str, &str); 2] = [
    (
        WORKER_SCRIPT,
        include_str!("harness/polyprof_eval_worker.py"),
    ),
    (TIMING_SCRIPT, include_str!("harness/polyprof_timing.py")),
];

/// Write the scripts into `eval_dir/harness/`; returns the worker script's path.
pub fn write_harness(eval_dir: &Path) -> Result<PathBuf> {
    let dir = eval_dir.join("harness");
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io("create the harness directory", &dir, e))?;
    for (name, text) in FILES {
        let path = dir.join(name);
        write_atomic(&path, text.as_bytes()).map_err(|e| Error::io("write", &path, e))?;
        // Read-only: the sandbox denies the candidate any write here; the mode says so to
        // everything else (and the eval's baseline notices a change either way).
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444))
            .map_err(|e| Error::io("make read-only", &path, e))?;
    }
    Ok(dir.join(WORKER_SCRIPT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_scripts_are_written_beside_each_other() {
        let tmp = tempfile::tempdir().unwrap();
        let worker = write_harness(tmp.path()).unwrap();
        assert_eq!(worker, tmp.path().join("harness").join(WORKER_SCRIPT));
        for (name, text) in FILES {
            let written = std::fs::read_to_string(tmp.path().join("harness").join(name)).unwrap();
            assert_eq!(written, text);
            let mode = std::os::unix::fs::PermissionsExt::mode(
                &std::fs::metadata(tmp.path().join("harness").join(name))
                    .unwrap()
                    .permissions(),
            );
            assert_eq!(mode & 0o777, 0o444);
        }
    }
}
