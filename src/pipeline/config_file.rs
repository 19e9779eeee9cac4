//! Reading a configuration file that may not be the user's to trust. A project's
//! `polyprof.toml` is looked for in every folder above the working directory, and on a shared
//! filesystem any of them may be another user's: a file there would choose where this user's
//! results go (`output_root`, `cache_dir`) and what environment their jobs get. So, as git
//! does with `safe.directory`, a file is honoured only when the user running polyprof (the
//! effective uid) or root owns it; and only a regular file is read, opened without waiting,
//! so a FIFO or a link to `/dev/zero` named `polyprof.toml` is passed over at once, never a
//! hang.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// A configuration file is at most this big; a larger one is not a configuration.
const MAX_BYTES: u64 = 1 << 20;

/// A configuration file found but not honoured, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub why: String,
}

/// What reading one candidate file found.
#[derive(Debug)]
pub enum Found {
    Absent,
    Text(String),
    Skipped(Skipped),
}

/// Read the configuration file at `path` if it is one this user may trust.
pub fn read(path: &Path) -> std::io::Result<Found> {
    let skip = |why: String| {
        Ok(Found::Skipped(Skipped {
            path: path.to_path_buf(),
            why,
        }))
    };
    // A link's own owner counts too: the paths in a file are relative to the folder of the
    // name it was found by, so another user's link to your file would place your runs in
    // their folder.
    #[cfg(unix)]
    if let Ok(link) = std::fs::symlink_metadata(path)
        && link.file_type().is_symlink()
        && let Some(why) = untrusted_owner(
            std::os::unix::fs::MetadataExt::uid(&link),
            "it is a link that",
        )
    {
        return skip(why);
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let mut file = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Absent),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return skip(format!("it cannot be read: {e}"));
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return skip("it is not a regular file".to_string());
    }
    #[cfg(unix)]
    if let Some(why) = untrusted_owner(std::os::unix::fs::MetadataExt::uid(&meta), "it") {
        return skip(why);
    }
    if meta.len() > MAX_BYTES {
        return skip(format!("it is larger than {MAX_BYTES} bytes"));
    }
    let mut bytes = Vec::new();
    (&mut file).take(MAX_BYTES + 1).read_to_end(&mut bytes)?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Found::Text(text)),
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the file is not UTF-8 text",
        )),
    }
}

/// Why something owned by `uid` is not honoured, `subject` saying what (`it`, `it is a link
/// that`); `None` when the user running polyprof (the effective uid) or root owns it.
#[cfg(unix)]
fn untrusted_owner(uid: u32, subject: &str) -> Option<String> {
    let me = nix::unistd::geteuid().as_raw();
    (uid != me && uid != 0).then(|| {
        format!(
            "{subject} is owned by uid {uid}, not by you (uid {me}) or root; polyprof honours \
             only files (and links to them) you or root own (docs/config.md)"
        )
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn another_users_file_and_a_fifo_are_skipped_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("mine.toml");
        std::fs::write(&mine, "x = 1\n").unwrap();
        assert!(matches!(read(&mine).unwrap(), Found::Text(t) if t == "x = 1\n"));
        let fifo = dir.path().join("fifo.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(
            matches!(read(&fifo).unwrap(), Found::Skipped(s) if s.why.contains("not a regular"))
        );
        assert!(matches!(
            read(&dir.path().join("none")).unwrap(),
            Found::Absent
        ));
        // Only root can give a file away; as another user this case is the test above.
        if nix::unistd::geteuid().is_root() {
            let theirs = dir.path().join("theirs.toml");
            std::fs::write(&theirs, "x = 1\n").unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            assert!(
                matches!(read(&theirs).unwrap(), Found::Skipped(s) if s.why.contains("uid 65534"))
            );
            // Another user's link to a file of yours: skipped too, the link named.
            let link = dir.path().join("link.toml");
            std::os::unix::fs::symlink(&mine, &link).unwrap();
            assert!(matches!(read(&link).unwrap(), Found::Text(_)));
            std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
            assert!(matches!(
                read(&link).unwrap(),
                Found::Skipped(s) if s.why.starts_with("it is a link that is owned by uid 65534")
            ));
        }
    }
}
