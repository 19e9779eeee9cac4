//! Run directories are never silently overwritten: a directory that already holds a run is
//! refused (the CLI, unless `--force`), replaced cleanly (`--force`: the old run's files are
//! removed first, not mixed with the new ones), or passed over for the next free `<name>.NNN`
//! (the library and `profile_all`).

use std::io;
use std::path::{Path, PathBuf};

use crate::model::run::RUN_FILE;
use crate::results::ProfileRun;

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
    if let Ok(old) = ProfileRun::read(dir) {
        for artifact in &old.artifacts {
            let path = dir.join(&artifact.name);
            // A name with `..` or an absolute path would leave the directory.
            let inside = Path::new(&artifact.name)
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
        if is_run_file(name) || name == format!(".{RUN_FILE}.tmp") {
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
    let parent = dir.parent().unwrap_or(Path::new(""));
    (first..)
        .map(|n| parent.join(format!("{stem}.{n:03}")))
        .find(|candidate| !holds_run(candidate))
        .unwrap_or_else(|| dir.to_path_buf())
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
}
