//! Raw stream logs on disk, capped: up to the cap every byte is kept; past it, the first half of
//! the cap and the last half are kept, with one line in between saying how much was dropped. The
//! tail is kept in a ring file beside the log and spliced in at the end, so memory stays bounded.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const COPY_CHUNK: usize = 1 << 20;

#[derive(Debug)]
struct Ring {
    path: PathBuf,
    file: File,
    cap: u64,
    /// Next write offset.
    pos: u64,
    /// Bytes held (≤ cap).
    filled: u64,
}

impl Ring {
    fn write(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        if bytes.len() as u64 >= self.cap {
            bytes = &bytes[bytes.len() - self.cap as usize..];
            self.file.write_all_at(bytes, 0)?;
            self.pos = 0;
            self.filled = self.cap;
            return Ok(());
        }
        let first = (self.cap - self.pos).min(bytes.len() as u64) as usize;
        self.file.write_all_at(&bytes[..first], self.pos)?;
        if first < bytes.len() {
            self.file.write_all_at(&bytes[first..], 0)?;
        }
        self.pos = (self.pos + bytes.len() as u64) % self.cap;
        self.filled = (self.filled + bytes.len() as u64).min(self.cap);
        Ok(())
    }
}

/// A new file at `path`, readable and writable, never one reached through a link: whatever is
/// there (an earlier run's log under `--force`, or a symlink someone planted to redirect a root
/// polyprof's writes) is unlinked, and the file is created exclusively, so a link planted in
/// between makes the open fail instead of being followed.
fn fresh_file(path: &Path) -> std::io::Result<File> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
}

/// A raw log file with a size cap.
#[derive(Debug)]
pub struct LogWriter {
    path: PathBuf,
    file: File,
    cap: u64,
    /// Bytes in the main file.
    written: u64,
    /// Bytes offered.
    total: u64,
    ring: Option<Ring>,
    error: Option<String>,
}

/// What became of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSummary {
    pub path: PathBuf,
    pub truncated: bool,
    /// The first write or finishing error, if any; the log is incomplete after it.
    pub error: Option<String>,
}

impl LogWriter {
    pub fn create(path: &Path, cap: u64) -> std::io::Result<Self> {
        Ok(LogWriter {
            // Readable too: reaching the cap moves the second half into the tail ring.
            file: fresh_file(path)?,
            path: path.to_path_buf(),
            cap: cap.max(2),
            written: 0,
            total: 0,
            ring: None,
            error: None,
        })
    }

    pub fn write(&mut self, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        self.total += bytes.len() as u64;
        if let Err(e) = self.write_inner(bytes) {
            self.error = Some(format!("writing {}: {e}", self.path.display()));
        }
    }

    fn write_inner(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if let Some(ring) = &mut self.ring {
            return ring.write(bytes);
        }
        let room = (self.cap - self.written) as usize;
        if bytes.len() <= room {
            self.file.write_all(bytes)?;
            self.written += bytes.len() as u64;
            return Ok(());
        }
        // Over the cap for the first time: the second half of what is on disk becomes the start
        // of the tail ring, and the main file keeps the head.
        self.file.write_all(&bytes[..room])?;
        let head = self.cap / 2;
        let mut ring_path = self.path.clone().into_os_string();
        ring_path.push(".tail");
        let ring_path = PathBuf::from(ring_path);
        let mut ring = Ring {
            file: fresh_file(&ring_path)?,
            path: ring_path,
            cap: self.cap - head,
            pos: 0,
            filled: 0,
        };
        let mut buf = vec![0u8; COPY_CHUNK.min(ring.cap as usize)];
        let mut offset = head;
        while offset < self.cap {
            let n = buf.len().min((self.cap - offset) as usize);
            self.file.read_exact_at(&mut buf[..n], offset)?;
            ring.write(&buf[..n])?;
            offset += n as u64;
        }
        self.file.set_len(head)?;
        self.file.seek(SeekFrom::Start(head))?;
        self.written = head;
        ring.write(&bytes[room..])?;
        self.ring = Some(ring);
        Ok(())
    }

    /// Splice the tail in (when the cap was hit) and close the log.
    pub fn finish(mut self) -> LogSummary {
        // A log that stopped at a write error is as incomplete as a capped one.
        let truncated = self.ring.is_some() || self.error.is_some();
        if let Some(ring) = self.ring.take()
            && self.error.is_none()
            && let Err(e) = self.splice(&ring)
        {
            self.error = Some(format!("finishing {}: {e}", self.path.display()));
        }
        LogSummary {
            path: self.path,
            truncated,
            error: self.error,
        }
    }

    fn splice(&mut self, ring: &Ring) -> std::io::Result<()> {
        let dropped = self.total - self.written - ring.filled;
        write!(
            self.file,
            "\n[polyprof: {dropped} bytes of this stream omitted here; the log is capped at {} bytes]\n",
            self.cap
        )?;
        let mut reader = &ring.file;
        let mut buf = vec![0u8; COPY_CHUNK];
        let parts = if ring.filled < ring.cap {
            [(0, ring.filled), (0, 0)]
        } else {
            [(ring.pos, ring.cap), (0, ring.pos)]
        };
        for (start, end) in parts {
            reader.seek(SeekFrom::Start(start))?;
            let mut left = end - start;
            while left > 0 {
                let n = buf.len().min(left as usize);
                reader.read_exact(&mut buf[..n])?;
                self.file.write_all(&buf[..n])?;
                left -= n as u64;
            }
        }
        std::fs::remove_file(&ring.path)
    }
}

/// A verbatim copy of a stream (a step's `stdout_file`), uncapped.
#[derive(Debug)]
pub struct CopyWriter {
    path: PathBuf,
    file: File,
    pub error: Option<String>,
}

impl CopyWriter {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(CopyWriter {
            file: fresh_file(path)?,
            path: path.to_path_buf(),
            error: None,
        })
    }

    pub fn write(&mut self, bytes: &[u8]) {
        if self.error.is_none()
            && let Err(e) = self.file.write_all(bytes)
        {
            self.error = Some(format!("writing {}: {e}", self.path.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(chunks: &[&[u8]], cap: u64) -> (Vec<u8>, bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        let mut log = LogWriter::create(&path, cap).unwrap();
        for c in chunks {
            log.write(c);
        }
        let summary = log.finish();
        assert_eq!(summary.error, None);
        // No ring file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        (std::fs::read(&path).unwrap(), summary.truncated)
    }

    #[test]
    fn a_symlink_planted_as_the_log_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        for name in ["run.1.stdout.log", "copy.out"] {
            let path = dir.path().join(name);
            std::os::unix::fs::symlink(&victim, &path).unwrap();
            if name.ends_with(".log") {
                let mut log = LogWriter::create(&path, 1 << 20).unwrap();
                log.write(b"ours");
                assert_eq!(log.finish().error, None);
            } else {
                let mut copy = CopyWriter::create(&path).unwrap();
                copy.write(b"ours");
                assert_eq!(copy.error, None);
            }
            assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
            assert_eq!(std::fs::read(&path).unwrap(), b"ours");
        }
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn under_the_cap_every_byte_is_kept() {
        assert_eq!(
            log_of(&[b"abc", b"\0\xff"], 5),
            (b"abc\0\xff".to_vec(), false)
        );
    }

    #[test]
    fn over_the_cap_head_and_tail_are_kept() {
        let input: Vec<u8> = (0..100u8).collect();
        for chunk in [1, 3, 7, 64, 100] {
            let chunks: Vec<&[u8]> = input.chunks(chunk).collect();
            let (log, truncated) = log_of(&chunks, 10);
            assert!(truncated);
            assert!(log.starts_with(&input[..5]), "chunk {chunk}");
            assert!(log.ends_with(&input[95..]), "chunk {chunk}: {log:?}");
            let middle = String::from_utf8_lossy(&log[5..log.len() - 5]);
            assert!(
                middle.contains("90 bytes of this stream omitted"),
                "{middle}"
            );
        }
    }
}
