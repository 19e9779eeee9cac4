//! Exclusive locks that keep shared state single-writer: a batch root (one driver), a batch
//! job (one task runs it), a run directory (one run writes it).
//!
//! Each is `flock(2)` on a lock file, taken without waiting. The kernel releases it when its
//! holder exits, however it exits, so a dead holder's lock is free at once: no pid file to
//! judge. The file also says who holds it (pid, host, start time), for the error a second
//! taker gets; that text is never trusted for anything else.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::model::batch::now_unix_s;
use crate::model::error::{Error, Result};

/// The batch driver's lock file in a batch root.
pub const BATCH_LOCK: &str = ".polyprof-batch.lock";
/// A run's lock file inside its run directory.
pub const RUN_LOCK: &str = ".polyprof-run.lock";

/// A held lock; dropping it releases it (the file stays, for the next taker).
pub struct HeldLock {
    _lock: Flock<File>,
    path: PathBuf,
}

impl HeldLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::fmt::Debug for HeldLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldLock")
            .field("path", &self.path)
            .finish()
    }
}

/// Take the lock at `file` (created if missing) or fail at once with [`Error::Busy`] naming
/// the live holder. `what` and `dir` say what the lock guards, for that message.
pub fn try_lock(file: &Path, what: &'static str, dir: &Path) -> Result<HeldLock> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    // A symlink planted as the lock file is refused, not followed; a FIFO opens at once
    // (O_NONBLOCK) and is refused below, never waited on.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
    );
    let opened = options
        .open(file)
        .map_err(|e| Error::io("open the lock file", file, e))?;
    check_own_file(&opened, file)?;
    match Flock::lock(opened, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => {
            let holder = format!(
                "polyprof pid {} on {} since {:.0} (Unix time)\n",
                std::process::id(),
                nix::unistd::gethostname()
                    .ok()
                    .and_then(|h| h.into_string().ok())
                    .unwrap_or_else(|| "this host".into()),
                now_unix_s()
            );
            // Who holds it is only information for the next taker's error.
            let _ = write_holder(&lock, &holder);
            Ok(HeldLock {
                _lock: lock,
                path: file.to_path_buf(),
            })
        }
        Err((mut file_back, Errno::EWOULDBLOCK)) => {
            let mut text = String::new();
            let _ = file_back
                .rewind()
                .and_then(|()| file_back.read_to_string(&mut text));
            let text = text.trim();
            Err(Error::Busy {
                what,
                path: dir.to_path_buf(),
                holder: if text.is_empty() {
                    "another polyprof process".into()
                } else {
                    text.to_string()
                },
            })
        }
        Err((_, errno)) => Err(Error::io("lock", file, errno.into())),
    }
}

/// Bytes of the holder's line in the lock file: the line, padded with spaces.
const HOLDER_WIDTH: usize = 256;

/// Write the holder's line over the previous one in place, padded to a fixed width, instead of
/// truncating the file first: on ext4 a truncate to zero frees the file's block (a discard
/// with `-o discard`) and makes the close start writeback (`auto_da_alloc`), about 0.3 ms of
/// CPU per run (issue 37). Only a file longer than the width (not written by this code) is cut.
fn write_holder(file: &File, holder: &str) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut line = holder.as_bytes().to_vec();
    if line.len() < HOLDER_WIDTH {
        line.pop_if(|b| *b == b'\n');
        line.resize(HOLDER_WIDTH - 1, b' ');
        line.push(b'\n');
    }
    file.write_all_at(&line, 0)?;
    if file.metadata()?.len() > line.len() as u64 {
        file.set_len(line.len() as u64)?;
    }
    Ok(())
}

/// The lock file is written (the holder's line), so it must be a plain file of its own: a
/// hard link planted at its path (another name of a file polyprof did not create, whose
/// contents the holder's line would replace) or a device, FIFO or socket is refused.
fn check_own_file(opened: &File, path: &Path) -> Result<()> {
    let meta = opened
        .metadata()
        .map_err(|e| Error::io("read the lock file's status", path, e))?;
    let refuse = |why: &str| {
        Err(Error::io(
            "use the lock file",
            path,
            std::io::Error::other(format!(
                "{why}; polyprof writes its lock files itself: remove this one and retry"
            )),
        ))
    };
    if !meta.file_type().is_file() {
        return refuse("it is not a regular file");
    }
    #[cfg(unix)]
    if std::os::unix::fs::MetadataExt::nlink(&meta) != 1 {
        return refuse("it has other names (a hard link)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_is_refused_with_the_holder_and_gets_it_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(RUN_LOCK);
        let held = try_lock(&file, "run directory", dir.path()).unwrap();
        let err = try_lock(&file, "run directory", dir.path()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        assert!(matches!(err, Error::Busy { .. }));
        drop(held);
        // The file stays behind (as a dead holder's would) and does not block.
        assert!(file.exists());
        try_lock(&file, "run directory", dir.path()).unwrap();
    }

    #[test]
    fn the_holder_line_is_rewritten_in_place_and_read_back_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(RUN_LOCK);
        // A longer line from someone else is cut to the fixed width.
        std::fs::write(&file, "x".repeat(2 * HOLDER_WIDTH)).unwrap();
        let held = try_lock(&file, "run directory", dir.path()).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.len(), HOLDER_WIDTH);
        assert!(text.starts_with("polyprof pid "), "{text}");
        drop(held);
        let _held = try_lock(&file, "run directory", dir.path()).unwrap();
        let err = try_lock(&file, "run directory", dir.path()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("(Unix time)") && !text.contains("time)  "),
            "{text}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_as_the_lock_file_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let file = dir.path().join(RUN_LOCK);
        std::os::unix::fs::symlink(&victim, &file).unwrap();
        assert!(try_lock(&file, "run directory", dir.path()).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[cfg(unix)]
    #[test]
    fn a_hard_link_or_a_fifo_as_the_lock_file_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let file = dir.path().join(RUN_LOCK);
        std::fs::hard_link(&victim, &file).unwrap();
        let error = try_lock(&file, "run directory", dir.path()).unwrap_err();
        assert!(error.to_string().contains("hard link"), "{error}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        std::fs::remove_file(&file).unwrap();
        nix::unistd::mkfifo(&file, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let error = try_lock(&file, "run directory", dir.path()).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }
}
