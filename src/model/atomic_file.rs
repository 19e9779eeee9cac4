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

/// [`write_atomic`] for a document written as it is produced (a large run document serialized
/// straight into the temporary file, never held whole in memory).
pub fn write_atomic_with(
    path: &Path,
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
    // The rename itself survives a crash once the directory is synced; a filesystem that
    // cannot sync a directory still has the document.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
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
    fn a_missing_directory_is_an_error_that_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(&dir.path().join("no/such/doc.json"), b"x").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }
}
