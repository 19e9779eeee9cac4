//! Small helpers the vendor backends share: paths as argv words, refusing stale output that
//! could be mistaken for the current run's, and unique session names.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// A path as one argv word. Argv is UTF-8 text in a plan, so a non-UTF-8 path is an error.
pub fn path_arg(path: &Path) -> Result<String> {
    path.to_str().map(str::to_string).ok_or_else(|| {
        Error::invalid(
            "output directory",
            format!(
                "`{}` is not valid UTF-8; choose a directory with a UTF-8 name",
                path.display()
            ),
        )
    })
}

/// The target argv must name a program.
pub fn require_target(profiler: &str, target: &[String]) -> Result<()> {
    if target.is_empty() {
        return Err(Error::invalid(
            "target",
            format!("{profiler}: the command to profile is empty"),
        ));
    }
    Ok(())
}

/// Create `dir` and refuse to proceed when it already holds an entry that `stale` matches: a
/// previous run's output would otherwise be read (or reported on) as this run's.
pub async fn ensure_fresh(profiler: &str, dir: &Path, stale: impl Fn(&str) -> bool) -> Result<()> {
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|e| Error::io("create output directory", dir, e))?;
    let mut entries = tokio::fs::read_dir(dir)
        .await
        .map_err(|e| Error::io("list output directory", dir, e))?;
    let mut found = Vec::new();
    while let Some(entry) = entries
        .next_entry()
        .await
        .map_err(|e| Error::io("list output directory", dir, e))?
    {
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

/// A session name unique on this machine: time, process id and a counter, in hex.
pub fn session_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("pp{nanos:x}{:x}{count:x}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_differ_and_are_plain_words() {
        let (a, b) = (session_id(), session_id());
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()), "{a}");
    }

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

    #[test]
    fn empty_target_is_an_error() {
        assert!(require_target("vtune", &[]).is_err());
        assert!(require_target("vtune", &["x".into()]).is_ok());
    }
}
