//! Small helpers the vendor backends share: paths as argv words, a non-empty target, and unique
//! session names.

use crate::model::arg::Arg;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::model::error::{Error, Result};

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
pub fn require_target(profiler: &str, target: &[Arg]) -> Result<()> {
    if target.is_empty() {
        return Err(Error::invalid(
            "target",
            format!("{profiler}: the command to profile is empty"),
        ));
    }
    Ok(())
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

    #[test]
    fn empty_target_is_an_error() {
        assert!(require_target("vtune", &[]).is_err());
        assert!(require_target("vtune", &["x".into()]).is_ok());
    }
}
