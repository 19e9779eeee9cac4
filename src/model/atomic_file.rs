//! The one way polyprof writes a document (run.json, batch.json, entry.json, exports, caches):
//! a fresh temporary file created exclusively in the same directory (a random name, `O_EXCL`,
//! so a symlink planted beside the document is never followed), fsynced, then renamed over the
//! document (a rename replaces a symlink at the document's path, never its target).
//!
//! It lives in model/ although it is an effect: the documents that write themselves are
//! model's (`ProfileRun`, `BatchIndex`), results/ writes exports, and model is the one layer
//! every other may import.

use std::io::Write;
use std::path::Path;

/// Replace `path` with `bytes`, atomically: a reader sees the old document or the new one,
/// never half of one. The new file gets the usual `0666 & !umask` mode.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |out| out.write_all(bytes))
}

/// [`write_atomic`] with one fsync instead of two: the data is on disk before the rename (so
/// no crash ever leaves a partial or empty document at `path`), but the directory is not
/// synced after it. A kill at any point leaves the old document or the new one, as
/// [`write_atomic`]; after an OS crash or power loss `path` holds the old document or the new
/// one, whole, and the new one is certain only once the directory has reached the disk: by the
/// caller's next [`write_atomic`] in the same directory (a batch's `entry.json`), a
/// [`sync_dir`], or the filesystem's own writeback (ext4: seconds). `polyprof run` writes
/// run.json this way: the second fsync cost 0.1–10 ms of wall time per run on a busy disk
/// (issue 37, docs/runner.md "Crash safety").
pub fn write_atomic_deferring_dir_sync(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_inner(path, false, |out| out.write_all(bytes))
}

/// Make the renames done in `dir` durable (fsync of the directory). A filesystem that cannot
/// sync a directory is not an error: the documents are there all the same.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// [`write_atomic`] for a document written as it is produced (a large run document serialized
/// straight into the temporary file, never held whole in memory).
pub fn write_atomic_with(
    path: &Path,
    produce: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    write_atomic_inner(path, true, produce)
}

fn write_atomic_inner(
    path: &Path,
    then_sync_dir: bool,
    produce: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    // Dropped on any error below, which removes the temporary file.
    let mut tmp = builder.tempfile_in(dir)?;
    {
        let mut out = std::io::BufWriter::new(tmp.as_file_mut());
        produce(&mut out)?;
        out.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // The rename itself survives a crash once the directory is synced.
    if then_sync_dir {
        sync_dir(dir);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_path_is_replaced_and_its_target_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let doc = dir.path().join("run.json");
        std::os::unix::fs::symlink(&victim, &doc).unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(".run.json.tmp")).unwrap();
        write_atomic(&doc, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!std::fs::symlink_metadata(&doc).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&doc).unwrap(), "{}");
        // Only the document, the victim and the planted link: no temporary file left.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }

    #[test]
    fn the_deferred_write_replaces_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let doc = dir.path().join("run.json");
        write_atomic_deferring_dir_sync(&doc, b"{\"a\": 1}").unwrap();
        write_atomic_deferring_dir_sync(&doc, b"{\"b\": 2}").unwrap();
        assert_eq!(std::fs::read_to_string(&doc).unwrap(), "{\"b\": 2}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let err = write_atomic_deferring_dir_sync(&dir.path().join("no/doc.json"), b"x");
        assert_eq!(err.unwrap_err().kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn a_missing_directory_is_an_error_that_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(&dir.path().join("no/such/doc.json"), b"x").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }
}
