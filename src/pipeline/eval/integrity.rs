//! What the candidate must not change, taken when the eval starts and compared before each
//! trusted worker starts and when it ends: the harness scripts (and nothing added beside them),
//! the reference and candidate files, and the eval's two documents (absent until polyprof
//! writes them). The sandbox denies all of these writes; this is the second line, and the one
//! that judges a candidate that ran unconfined.

use std::path::{Path, PathBuf};

use crate::eval::evidence::{Failure, FailureKind, Stage};

/// The files of one eval as they were when it started.
#[derive(Debug, Clone)]
pub struct Baseline {
    harness_dir: PathBuf,
    /// Every file polyprof relies on, with its SHA-256 (`None`: it could not be read).
    files: Vec<(PathBuf, Option<String>)>,
    /// The modes of those files and of the folders above the documents and the harness:
    /// Landlock does not confine `chmod`, and a folder made unwritable would stop polyprof
    /// writing the verdict.
    modes: Vec<(PathBuf, Option<u32>)>,
    harness_names: Vec<std::ffi::OsString>,
    documents: Vec<PathBuf>,
}

/// `None` for what is not a regular file: a FIFO put in a harness file's place by the
/// candidate reads as a change, never a hang.
fn digest(path: &Path) -> Option<String> {
    crate::pipeline::regular_file::sha256_hex(path)
}

fn mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

fn names(dir: &Path) -> Vec<std::ffi::OsString> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

impl Baseline {
    /// Take it now: the harness folder's files, `sources` (the reference and the candidate),
    /// and `documents` (paths that must not exist until polyprof writes them).
    pub fn take(harness_dir: &Path, sources: &[&Path], documents: &[PathBuf]) -> Baseline {
        let harness_names = names(harness_dir);
        let files = harness_names
            .iter()
            .map(|n| harness_dir.join(n))
            .chain(sources.iter().map(|p| p.to_path_buf()))
            .map(|p| {
                let sha = digest(&p);
                (p, sha)
            })
            .collect::<Vec<(PathBuf, Option<String>)>>();
        let modes = files
            .iter()
            .map(|(p, _)| p.clone())
            .chain(std::iter::once(harness_dir.to_path_buf()))
            .chain(
                documents
                    .iter()
                    .filter_map(|d| d.parent().map(Path::to_path_buf)),
            )
            .map(|p| {
                let m = mode(&p);
                (p, m)
            })
            .collect();
        Baseline {
            harness_dir: harness_dir.to_path_buf(),
            files,
            modes,
            harness_names,
            documents: documents.to_vec(),
        }
    }

    /// Put back the modes it recorded (what polyprof must write stays writable); best effort.
    pub fn restore_modes(&self) {
        use std::os::unix::fs::PermissionsExt;
        for (path, was) in &self.modes {
            if let Some(was) = was
                && mode(path) != Some(*was)
            {
                let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(*was));
            }
        }
    }

    /// What changed since it was taken, one line each; empty when nothing did.
    pub fn changes(&self) -> Vec<String> {
        let mut changes = Vec::new();
        for (path, sha) in &self.files {
            if digest(path) != *sha {
                changes.push(format!("{} was changed", path.display()));
            }
        }
        for (path, was) in &self.modes {
            let now = mode(path);
            if now != *was {
                let shown = |m: Option<u32>| m.map_or("gone".to_string(), |m| format!("{m:o}"));
                changes.push(format!(
                    "the mode of {} was changed ({} to {})",
                    path.display(),
                    shown(*was),
                    shown(now)
                ));
            }
        }
        for name in names(&self.harness_dir) {
            if !self.harness_names.contains(&name) {
                changes.push(format!(
                    "{} was placed in the harness folder",
                    self.harness_dir.join(name).display()
                ));
            }
        }
        for path in &self.documents {
            if std::fs::symlink_metadata(path).is_ok() {
                changes.push(format!(
                    "{} was planted before polyprof wrote it",
                    path.display()
                ));
            }
        }
        changes
    }
}

/// The failure of an eval whose files were changed under it: judged against the candidate
/// (only its code ran beside polyprof and the trusted worker), whatever failed after it.
pub fn failure(stage: Stage, changes: &[String], earlier: Option<&Failure>) -> Failure {
    let mut message = format!(
        "the candidate changed files of the eval: {}",
        changes.join("; ")
    );
    if let Some(earlier) = earlier {
        message.push_str(&format!(
            " (the eval then stopped: {:?} during {:?}: {})",
            earlier.kind, earlier.stage, earlier.message
        ));
    }
    Failure {
        stage: earlier.map_or(stage, |f| f.stage),
        kind: FailureKind::Interfered,
        message,
        log: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_added_or_planted_file_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let harness = tmp.path().join("harness");
        std::fs::create_dir(&harness).unwrap();
        std::fs::write(harness.join("w.py"), "w").unwrap();
        let reference = tmp.path().join("ref.py");
        std::fs::write(&reference, "r").unwrap();
        let verdict = tmp.path().join("verdict.json");
        let baseline = Baseline::take(&harness, &[&reference], std::slice::from_ref(&verdict));
        assert!(baseline.changes().is_empty());
        std::fs::write(&reference, "r2").unwrap();
        std::fs::write(harness.join("torch.py"), "").unwrap();
        std::fs::create_dir(&verdict).unwrap();
        let changes = baseline.changes();
        assert_eq!(changes.len(), 3, "{changes:?}");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o500)).unwrap();
        assert!(
            baseline.changes()[1].contains("the mode of"),
            "{:?}",
            baseline.changes()
        );
        baseline.restore_modes();
        assert_eq!(baseline.changes().len(), 3);
        assert!(changes[0].contains("ref.py was changed"));
        assert!(changes[1].contains("torch.py was placed"));
        assert!(changes[2].contains("verdict.json was planted"));
        let f = failure(Stage::Correctness, &changes, None);
        assert_eq!(f.kind, FailureKind::Interfered);
        // A FIFO in a harness file's place reads as a change at once, never a hang.
        std::fs::remove_file(harness.join("w.py")).unwrap();
        nix::unistd::mkfifo(&harness.join("w.py"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let changes = baseline.changes();
        assert!(changes.iter().any(|c| c.contains("w.py")), "{changes:?}");
    }
}
