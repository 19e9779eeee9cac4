//! Getting an output directory ready before a run: created, free of a previous run's output
//! (which could be mistaken for this run's), and holding the files the plan stages.

use std::path::Path;

use crate::model::error::{Error, Result};
use crate::model::plan::StagedFile;

/// Create `dir` and refuse to proceed when it already holds an entry that `stale` matches: a
/// previous run's output would otherwise be read (or reported on) as this run's.
///
/// Directly, not through `tokio::fs`: two metadata calls on a local directory take
/// microseconds, while a blocking-pool round trip starts a thread on every `polyprof run`
/// (issue 37: about a tenth of a millisecond of CPU, more of wall time on a loaded machine).
pub async fn ensure_fresh(profiler: &str, dir: &Path, stale: impl Fn(&str) -> bool) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create output directory", dir, e))?;
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("list output directory", dir, e))?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("list output directory", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if stale(&name) {
            found.push(name);
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    found.sort();
    Err(Error::invalid(
        "output directory",
        format!(
            "{profiler}: `{}` already holds output of an earlier run ({}); use a fresh output \
             directory or remove those files",
            dir.display(),
            found.join(", ")
        ),
    ))
}

/// Write each staged file into `dir` (which exists). Through the atomic-write helper: an
/// `--output-dir` may be a folder others can write, and a link or FIFO planted at a staged
/// file's name is replaced, never followed into a file polyprof did not create or waited on.
pub async fn stage_files(dir: &Path, files: &[StagedFile]) -> Result<()> {
    for file in files {
        let path = dir.join(&file.name);
        crate::model::atomic_file::write_atomic(&path, file.content.as_bytes())
            .map_err(|e| Error::io("stage file", &path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ensure_fresh_creates_and_refuses_stale_files() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("out");
        ensure_fresh("unitrace", &dir, |n| n.starts_with("trace."))
            .await
            .unwrap();
        assert!(dir.is_dir());
        std::fs::write(dir.join("other.log"), "x").unwrap();
        ensure_fresh("unitrace", &dir, |n| n.starts_with("trace."))
            .await
            .unwrap();
        std::fs::write(dir.join("trace.metrics.12"), "x").unwrap();
        let err = ensure_fresh("unitrace", &dir, |n| n.starts_with("trace."))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("trace.metrics.12"), "{err}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_link_at_a_staged_name_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("config.ini")).unwrap();
        let staged = StagedFile {
            name: "config.ini".into(),
            content: "[section]\n".into(),
        };
        stage_files(dir.path(), &[staged]).await.unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        let written = dir.path().join("config.ini");
        assert!(!std::fs::symlink_metadata(&written).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&written).unwrap(), "[section]\n");
    }
}
