//! Limits on what polyprof reads as saved profiler output: regular files only (a FIFO or a
//! device never ends, so a parser waiting for its end hangs or fills memory), and lines of
//! bounded length (a newline-free input must end in a clear error, not an allocation abort).

use std::io::{self, Read};
use std::path::Path;

use crate::model::error::{Error, Result};

/// The longest line a parser accepts: far above any profiler's (an ncu raw page with every
/// metric is ~100 KB a row), far below what would exhaust memory.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// What a path that is not a regular file is, in words.
pub fn describe(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO (named pipe)"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The bytes of regular file `path`: opened without blocking (a FIFO's `open` would wait for
/// a writer, deaf to signals), checked with `fstat` on the open descriptor (no race with a
/// swap of the path), and refused at once, saying what it is, when it is a FIFO, a device, a
/// socket or a directory.
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {}, not a regular file", describe(meta.file_type())),
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The size of `path` when it is a regular file (after symlinks); an error naming what it is
/// otherwise. Checked before opening: opening a FIFO blocks until a writer comes.
pub fn require_regular_file(path: &Path) -> Result<u64> {
    let metadata = std::fs::metadata(path).map_err(|e| Error::io("read", path, e))?;
    if metadata.is_file() {
        return Ok(metadata.len());
    }
    Err(Error::invalid(
        "input file",
        format!(
            "`{}` is {}, not a regular file; polyprof reads saved profiler output from files \
             (save the stream to a file first)",
            path.display(),
            describe(metadata.file_type())
        ),
    ))
}

/// Open `path` for reading once it is known to be a regular file.
pub fn open_regular_file(path: &Path) -> Result<std::fs::File> {
    require_regular_file(path)?;
    std::fs::File::open(path).map_err(|e| Error::io("read", path, e))
}

/// Read a regular file whole, up to `cap` bytes: `(content, true size, cut at the cap)`.
pub fn read_regular_file(path: &Path, cap: u64) -> Result<(Vec<u8>, u64, bool)> {
    let file = open_regular_file(path)?;
    let size = file
        .metadata()
        .map_err(|e| Error::io("read", path, e))?
        .len();
    let mut content = Vec::with_capacity(size.min(cap) as usize);
    file.take(cap)
        .read_to_end(&mut content)
        .map_err(|e| Error::io("read", path, e))?;
    let cut = size > content.len() as u64;
    Ok((content, size, cut))
}

/// The error a reader gives for a line longer than `limit` bytes; `which` says where it is
/// (`line 3`, `the line at byte 1024`).
pub fn line_too_long(which: &str, limit: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{which} runs past {} without a newline; this is not profiler output (or the file \
             is damaged)",
            size_label(limit)
        ),
    )
}

fn size_label(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// A reader that fails with [`line_too_long`] once a line grows past its limit, so whatever
/// buffers lines behind it stays bounded.
pub struct LineBound<R> {
    inner: R,
    limit: usize,
    since_newline: usize,
    line: u64,
}

impl<R: Read> LineBound<R> {
    pub fn new(inner: R, limit: usize) -> Self {
        LineBound {
            inner,
            limit,
            since_newline: 0,
            line: 1,
        }
    }
}

impl<R: Read> Read for LineBound<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        for chunk in buf[..read].split_inclusive(|b| *b == b'\n') {
            if chunk.last() == Some(&b'\n') {
                if self.since_newline + chunk.len() - 1 > self.limit {
                    return Err(line_too_long(&format!("line {}", self.line), self.limit));
                }
                self.since_newline = 0;
                self.line += 1;
            } else {
                self.since_newline += chunk.len();
                if self.since_newline > self.limit {
                    return Err(line_too_long(&format!("line {}", self.line), self.limit));
                }
            }
        }
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_up_to_the_limit_pass_and_a_longer_one_is_an_error_naming_it() {
        let mut ok = Vec::new();
        LineBound::new(&b"abcd\nefgh\n"[..], 4)
            .read_to_end(&mut ok)
            .unwrap();
        assert_eq!(ok, b"abcd\nefgh\n");
        let err = LineBound::new(&b"abcd\nefghi\n"[..], 4)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("line 2"), "{err}");
        // No newline at all: the error comes while the line is still being read.
        let endless = io::repeat(0).take(1 << 20);
        let err = LineBound::new(endless, 1024)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    #[test]
    fn fifos_devices_and_directories_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let err = require_regular_file(dir.path()).unwrap_err().to_string();
        assert!(err.contains("is a directory"), "{err}");
        let err = require_regular_file(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("character device"), "{err}");
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        assert_eq!(require_regular_file(&file).unwrap(), 1);
    }
}
