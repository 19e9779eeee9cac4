//! Reading a file the user named (an eval's reference or candidate) when it must be a regular
//! file: opened without blocking (a FIFO's `open` would wait for a writer, deaf to signals),
//! checked with `fstat` on the open descriptor (no race with a swap of the path), and refused
//! at once, with what it is, when it is a FIFO, a device, a socket or a directory.

use std::path::Path;

/// The bytes of regular file `path`; an error naming what it is otherwise. In model/ (beside
/// the other readers' limits), as the documents model reads itself (batch.json, entry.json)
/// need it too.
pub use crate::model::input::read_regular;

/// SHA-256 of regular file `path` in hex; `None` when it cannot be read as one.
pub fn sha256_hex(path: &Path) -> Option<String> {
    use sha2::Digest;
    read_regular(path)
        .ok()
        .map(|bytes| format!("{:x}", sha2::Sha256::digest(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_directory_and_a_device_are_refused_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("fifo.py");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let started = std::time::Instant::now();
        let err = read_regular(&fifo).unwrap_err().to_string();
        assert!(err.contains("FIFO"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert!(
            read_regular(tmp.path())
                .unwrap_err()
                .to_string()
                .contains("directory")
        );
        let err = read_regular(Path::new("/dev/null"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("character device"), "{err}");
        let file = tmp.path().join("a.py");
        std::fs::write(&file, "abc").unwrap();
        assert_eq!(read_regular(&file).unwrap(), b"abc");
        assert_eq!(
            sha256_hex(&file).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
