//! Run directories are never silently overwritten: a directory that already holds a run is
//! refused (the CLI, unless `--force`), replaced cleanly (`--force`: the old run's files are
//! removed first, not mixed with the new ones), or passed over for the next free `<name>.NNN`
//! (the library and `profile_all`).
//!
//! A run directory is also claimed before anything runs in it ([`claim`]): created, checked
//! writable, and its lock ([`RUN_LOCK`]) held for the run's life, so two runs never share one
//! (the second fails at once, or, passing over, takes the next free name).

use std::io;
use std::path::{Path, PathBuf};

use crate::model::error::{Error, Result};
use crate::model::run::RUN_FILE;
use crate::results::ProfileRun;

use super::lock::{HeldLock, RUN_LOCK, try_lock};

/// A run directory held for one run: it exists, and its lock is held until this is dropped.
#[derive(Debug)]
pub struct ClaimedDir {
    pub dir: PathBuf,
    _lock: HeldLock,
}

/// Claim `dir` for one run: create it, and take its lock, or fail before anything runs: a
/// file or a dangling symlink in the way, a directory that cannot be written, another live
/// run holding it ([`Error::Busy`]). Whether it already holds a finished run is the caller's
/// question ([`holds_run`]), asked after the claim so that no other run can slip in between.
pub fn claim(dir: &Path) -> Result<ClaimedDir> {
    check_usable(dir)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create the run directory", dir, e))?;
    let lock = try_lock(&dir.join(RUN_LOCK), "run directory", dir).map_err(|e| match e {
        Error::Io { source, .. }
            if source.kind() == io::ErrorKind::PermissionDenied
                || source.raw_os_error() == Some(libc::EROFS) =>
        {
            Error::io(
                "write in the run directory (it must be writable)",
                dir,
                source,
            )
        }
        other => other,
    })?;
    Ok(ClaimedDir {
        dir: dir.to_path_buf(),
        _lock: lock,
    })
}

/// Whether `dir` can be (or become) an output directory: not a file, not a dangling symlink.
/// The error names which, rather than the `File exists` creating it would say.
pub fn check_usable(dir: &Path) -> Result<()> {
    if let Ok(meta) = std::fs::symlink_metadata(dir) {
        if meta.is_symlink() && std::fs::metadata(dir).is_err() {
            let target = std::fs::read_link(dir).unwrap_or_default();
            return Err(Error::invalid(
                "output directory",
                format!(
                    "{} is a symlink to {}, which does not exist; create that directory, or choose another output directory",
                    dir.display(),
                    target.display()
                ),
            ));
        }
        if !dir.is_dir() {
            return Err(Error::invalid(
                "output directory",
                format!(
                    "{} is a file, not a directory; choose another output directory",
                    dir.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The first run directory from `dir` on (as [`next_free`] counts) that holds no run and that
/// this process could claim; one that another live run holds is passed over.
pub fn claim_next_free(dir: &Path) -> Result<ClaimedDir> {
    let mut last = None;
    for candidate in std::iter::once(dir.to_path_buf())
        .chain(successors(dir))
        .take(1000)
    {
        if holds_run(&candidate) {
            continue;
        }
        match claim(&candidate) {
            // A run that finished between the look and the claim: pass over it too.
            Ok(claimed) if !holds_run(&candidate) => return Ok(claimed),
            Ok(_) => {}
            Err(e @ Error::Busy { .. }) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        Error::invalid(
            "output directory",
            format!(
                "no free run directory after {} (1000 taken); choose another output directory",
                dir.display()
            ),
        )
    }))
}

/// Whether `dir` holds (part of) a run: its run.json or polyprof's stream logs.
pub fn holds_run(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries
        .flatten()
        .any(|e| e.file_name().to_str().is_some_and(is_run_file))
}

fn is_run_file(name: &str) -> bool {
    name == RUN_FILE || name.ends_with(".stdout.log") || name.ends_with(".stderr.log")
}

/// Remove the run in `dir`: run.json, the stream logs, a stale temporary run.json, and the raw
/// profiler files the old run.json lists (only those inside `dir`). Other files are left alone.
/// Returns what was removed.
pub fn clear_run(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut doomed = Vec::new();
    if let Ok(names) = ProfileRun::read_artifact_names(dir) {
        for name in &names {
            let path = dir.join(name);
            // A name with `..` or an absolute path would leave the directory.
            let inside = Path::new(name)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if inside && path.is_file() {
                doomed.push(path);
            }
        }
    }
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // A temporary run.json a killed writer left (`.run.json.<random>.tmp`).
        let stale_temporary = name.starts_with(&format!(".{RUN_FILE}.")) && name.ends_with(".tmp");
        if is_run_file(name) || stale_temporary {
            doomed.push(entry.path());
        }
    }
    doomed.sort();
    doomed.dedup();
    for path in &doomed {
        std::fs::remove_file(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot remove {}: {e}", path.display()))
        })?;
    }
    Ok(doomed)
}

/// `dir` if it holds no run, else the first `<name>.NNN` beside it that holds none (a name
/// that already ends in `.NNN` counts on from there).
pub fn next_free(dir: &Path) -> PathBuf {
    if !holds_run(dir) {
        return dir.to_path_buf();
    }
    successors(dir)
        .find(|candidate| !holds_run(candidate))
        .unwrap_or_else(|| dir.to_path_buf())
}

/// The numbered names after `dir`: `<name>.001`, `<name>.002`, … (from `.NNN + 1` when `dir`
/// already ends in `.NNN`).
pub fn successors(dir: &Path) -> impl Iterator<Item = PathBuf> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".to_string());
    let (stem, first) = match name.rsplit_once('.') {
        Some((stem, digits)) if digits.len() == 3 && digits.bytes().all(|b| b.is_ascii_digit()) => {
            (stem.to_string(), digits.parse::<u32>().unwrap_or(0) + 1)
        }
        _ => (name.clone(), 1),
    };
    let parent = dir.parent().unwrap_or(Path::new("")).to_path_buf();
    (first..).map(move |n| parent.join(format!("{stem}.{n:03}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_or_missing_directory_holds_no_run() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(!holds_run(tmp.path()));
        assert!(!holds_run(&tmp.path().join("missing")));
        std::fs::write(tmp.path().join("notes.txt"), "x").unwrap();
        assert!(!holds_run(tmp.path()));
        std::fs::write(tmp.path().join("run.2.stderr.log"), "x").unwrap();
        assert!(holds_run(tmp.path()));
    }

    #[test]
    fn next_free_counts_on_from_a_numbered_name() {
        let tmp = tempfile::tempdir().unwrap();
        let first = tmp.path().join("ncu.000");
        assert_eq!(next_free(&first), first);
        std::fs::create_dir(&first).unwrap();
        std::fs::write(first.join(RUN_FILE), "{}").unwrap();
        assert_eq!(next_free(&first), tmp.path().join("ncu.001"));
        let plain = tmp.path().join("out");
        std::fs::create_dir(&plain).unwrap();
        std::fs::write(plain.join("run.stdout.log"), "").unwrap();
        assert_eq!(next_free(&plain), tmp.path().join("out.001"));
    }

    #[test]
    fn clear_removes_run_files_and_keeps_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        for name in [
            "run.json",
            "run.1.stdout.log",
            "run.2.stderr.log",
            ".run.json.tmp",
            "keep.txt",
        ] {
            std::fs::write(tmp.path().join(name), "x").unwrap();
        }
        let removed = clear_run(tmp.path()).unwrap();
        assert_eq!(removed.len(), 4);
        assert!(tmp.path().join("keep.txt").exists());
        assert!(!holds_run(tmp.path()));
    }

    #[test]
    fn a_claimed_directory_is_passed_over_and_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out");
        let first = claim_next_free(&dir).unwrap();
        assert_eq!(first.dir, dir);
        assert!(matches!(claim(&dir), Err(Error::Busy { .. })));
        assert_eq!(
            claim_next_free(&dir).unwrap().dir,
            tmp.path().join("out.001")
        );
        drop(first);
        claim(&dir).unwrap();
    }

    #[test]
    fn a_file_in_the_way_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let err = claim(&file).unwrap_err().to_string();
        assert!(err.contains("is a file, not a directory"), "{err}");
    }
}
