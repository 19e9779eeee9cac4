//! Output files out of a container whose output directory is not bound (an engine that cannot
//! see this host's paths): the engine's archive of the directory, unpacked here before the
//! container is removed.

use std::io::Write;
use std::path::{Component, Path};

use bollard::query_parameters::DownloadFromContainerOptionsBuilder;
use futures_util::StreamExt;

use super::engine::Engine;
use crate::model::plan::FilePattern;

/// Copy the files of `output_dir` in container `id` that match `patterns` (every file when
/// there are none) into the same directory on this host. Only regular files directly in the
/// directory are taken; what fails becomes a warning (the run's captured output stays).
pub async fn copy_outputs(
    engine: &Engine,
    id: &str,
    output_dir: &Path,
    patterns: &[FilePattern],
    warnings: &mut Vec<String>,
) {
    if let Err(e) = try_copy(engine, id, output_dir, patterns).await {
        warnings.push(format!(
            "copying the output files out of the container failed: {e}; the files copied before it and the logs are kept"
        ));
    }
}

async fn try_copy(
    engine: &Engine,
    id: &str,
    output_dir: &Path,
    patterns: &[FilePattern],
) -> Result<(), String> {
    let options = DownloadFromContainerOptionsBuilder::default()
        .path(&output_dir.display().to_string())
        .build();
    // The archive goes to an unnamed temporary file, not memory: profiler reports can be large.
    let mut archive = tempfile::tempfile().map_err(|e| format!("no temporary file: {e}"))?;
    let mut stream = engine.docker().download_from_container(id, Some(options));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        archive
            .write_all(&chunk)
            .map_err(|e| format!("writing the archive: {e}"))?;
    }
    std::fs::create_dir_all(output_dir)
        .map_err(|e| format!("cannot create {}: {e}", output_dir.display()))?;
    std::io::Seek::rewind(&mut archive).map_err(|e| e.to_string())?;
    unpack(archive, output_dir, patterns)
}

/// Unpack the top-level regular files of a directory archive (entries `<dir>/<name>`).
fn unpack(
    archive: impl std::io::Read,
    output_dir: &Path,
    patterns: &[FilePattern],
) -> Result<(), String> {
    let mut archive = tar::Archive::new(archive);
    let entries = archive.entries().map_err(|e| format!("bad archive: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("bad archive entry: {e}"))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().map_err(|e| e.to_string())?.into_owned();
        let parts: Vec<Component> = path.components().collect();
        // Exactly `<dir>/<name>`: nothing deeper, no `..`, no absolute path.
        let [Component::Normal(_), Component::Normal(name)] = parts.as_slice() else {
            continue;
        };
        let Some(name) = name.to_str() else { continue };
        if !patterns.is_empty() && !patterns.iter().any(|p| p.matches(name)) {
            continue;
        }
        let dest = output_dir.join(name);
        // Written beside and renamed over: an archive cut short (the engine's connection lost,
        // the container removed mid-copy) leaves no half file, and a file already here (staged
        // before the run) stays whole unless a complete copy replaces it.
        let partial = tempfile::Builder::new()
            .prefix(".polyprof-copy-")
            .tempfile_in(output_dir)
            .map_err(|e| format!("cannot write in {}: {e}", output_dir.display()))?
            .into_temp_path();
        entry
            .unpack(&partial)
            .map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
        partial
            .persist(&dest)
            .map_err(|e| format!("cannot write {}: {}", dest.display(), e.error))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_entry_type(tar::EntryType::Regular);
            // set_path refuses `..`; write the raw name as a hostile archive would.
            let name = &mut header.as_old_mut().name;
            name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_cksum();
            builder.append(&header, *data).unwrap();
        }
        builder.into_inner().unwrap()
    }

    #[test]
    fn only_matching_top_level_files_are_unpacked() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = archive(&[
            ("out/report.csv", b"a,b\n"),
            ("out/other.txt", b"x"),
            ("out/sub/report.csv", b"deep"),
            ("out/../escape.csv", b"no"),
        ]);
        let patterns = [FilePattern::Regex(r"\.csv$".into())];
        unpack(bytes.as_slice(), dir.path(), &patterns).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["report.csv"]);
        assert_eq!(
            std::fs::read(dir.path().join("report.csv")).unwrap(),
            b"a,b\n"
        );
    }

    #[test]
    fn an_archive_cut_inside_a_file_leaves_no_half_file_and_keeps_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("report.bin"), b"staged before the run").unwrap();
        let big = vec![b'x'; 4096];
        let bytes = archive(&[("out/first.txt", b"whole"), ("out/report.bin", &big)]);
        // Headers and data are 512-byte blocks: first.txt's two, report.bin's header, then
        // half of report.bin's data.
        let cut = &bytes[..3 * 512 + 2048];
        let err = unpack(cut, dir.path(), &[]).unwrap_err();
        assert!(err.contains("report.bin"), "{err}");
        assert_eq!(
            std::fs::read(dir.path().join("first.txt")).unwrap(),
            b"whole"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("report.bin")).unwrap(),
            "staged before the run"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no partial file left: {names:?}");
    }

    #[test]
    fn no_patterns_takes_every_file_and_a_truncated_archive_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = archive(&[("out/a", b"1"), ("out/b", b"22")]);
        unpack(bytes.as_slice(), dir.path(), &[]).unwrap();
        assert_eq!(std::fs::read(dir.path().join("b")).unwrap(), b"22");
        let cut = &bytes[..600];
        assert!(unpack(cut, dir.path(), &[]).is_err());
    }
}
