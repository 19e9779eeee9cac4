//! Collecting the raw files a profiler wrote, with a size cap so nothing huge is held in memory.
//! The files themselves stay on disk; an artifact always records its path and true size.

use std::path::Path;

use crate::model::artifacts::{RawArtifact, RawOutput};
use crate::model::error::{Error, Result};
use crate::model::plan::DeclaredOutputs;

/// Default cap on the bytes of one artifact read into memory (the file on disk is untouched).
pub const DEFAULT_ARTIFACT_CAP: u64 = 256 * 1024 * 1024;

/// Read one file into an artifact, capped at `cap` bytes.
pub async fn read_artifact(dir: &Path, name: &str, cap: u64) -> Result<RawArtifact> {
    use tokio::io::AsyncReadExt;
    let path = dir.join(name);
    let file = tokio::fs::File::open(&path)
        .await
        .map_err(|e| Error::io("open profiler output", &path, e))?;
    let size = file
        .metadata()
        .await
        .map_err(|e| Error::io("stat profiler output", &path, e))?
        .len();
    let mut content = Vec::with_capacity(size.min(cap) as usize);
    file.take(cap)
        .read_to_end(&mut content)
        .await
        .map_err(|e| Error::io("read profiler output", &path, e))?;
    Ok(RawArtifact {
        name: name.to_string(),
        path,
        size,
        truncated: size > content.len() as u64,
        content,
    })
}

/// Every regular file directly in `dir` whose name satisfies `keep`, sorted by name.
pub async fn collect_files(dir: &Path, keep: impl Fn(&str) -> bool, cap: u64) -> Result<RawOutput> {
    let mut names = collect_names(dir).await?;
    names.retain(|name| keep(name));
    names.sort();
    let mut artifacts = Vec::with_capacity(names.len());
    for name in names {
        artifacts.push(read_artifact(dir, &name, cap).await?);
    }
    Ok(RawOutput { artifacts })
}

/// The files `outputs` declares, read from `dir` in declaration order (within one pattern by
/// name). A declared file that cannot be read is named in the returned errors; the rest are
/// still collected. A directory that cannot be listed is an error.
pub async fn collect_declared(
    dir: &Path,
    outputs: &DeclaredOutputs,
) -> Result<(RawOutput, Vec<String>)> {
    let mut raw = RawOutput::default();
    let mut errors = Vec::new();
    if outputs.collect.is_empty() {
        return Ok((raw, errors));
    }
    let listing = match collect_names(dir).await {
        Ok(names) => names,
        // No directory, no files: the backend's parser says what that means.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok((raw, errors));
        }
        Err(error) => return Err(error),
    };
    let mut listing = listing;
    for folder in folders_to_search(dir, outputs).await {
        let inside = collect_names(&dir.join(&folder)).await.unwrap_or_default();
        listing.extend(inside.into_iter().map(|name| format!("{folder}/{name}")));
    }
    let mut names: Vec<(usize, String)> = listing
        .into_iter()
        .filter_map(|name| outputs.collect_rank(&name).map(|rank| (rank, name)))
        .collect();
    names.sort();
    for (_, name) in names {
        match read_artifact(dir, &name, DEFAULT_ARTIFACT_CAP).await {
            Ok(artifact) => raw.artifacts.push(artifact),
            Err(error) => errors.push(format!("{name}: {error}")),
        }
    }
    Ok((raw, errors))
}

/// The folders directly in `dir` that `outputs.collect_in` names.
async fn folders_to_search(dir: &Path, outputs: &DeclaredOutputs) -> Vec<String> {
    let mut folders = Vec::new();
    if outputs.collect_in.is_empty() {
        return folders;
    }
    let Ok(mut entries) = tokio::fs::read_dir(dir).await else {
        return folders;
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let is_dir = entry.file_type().await.is_ok_and(|t| t.is_dir());
        if let Some(name) = entry.file_name().to_str()
            && is_dir
            && outputs.collect_in.iter().any(|p| p.matches(name))
        {
            folders.push(name.to_string());
        }
    }
    folders
}

/// The names of the regular files directly in `dir`.
async fn collect_names(dir: &Path) -> Result<Vec<String>> {
    let mut entries = tokio::fs::read_dir(dir)
        .await
        .map_err(|e| Error::io("list output directory", dir, e))?;
    let mut names = Vec::new();
    while let Some(entry) = entries
        .next_entry()
        .await
        .map_err(|e| Error::io("list output directory", dir, e))?
    {
        let is_file = entry
            .file_type()
            .await
            .map(|t| t.is_file())
            .unwrap_or(false);
        if let Some(name) = entry.file_name().to_str()
            && is_file
        {
            names.push(name.to_string());
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn caps_content_but_records_true_size() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.csv"), vec![b'x'; 1000]).unwrap();
        std::fs::write(dir.path().join("skip.txt"), b"no").unwrap();
        let out = collect_files(dir.path(), |n| n.ends_with(".csv"), 100)
            .await
            .unwrap();
        assert_eq!(out.artifacts.len(), 1);
        let artifact = &out.artifacts[0];
        assert_eq!(
            (artifact.size, artifact.content.len(), artifact.truncated),
            (1000, 100, true)
        );
    }

    #[tokio::test]
    async fn collect_in_offers_files_one_folder_down() {
        use crate::model::plan::FilePattern;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pass_1")).unwrap();
        std::fs::create_dir(dir.path().join("other")).unwrap();
        std::fs::write(dir.path().join("pass_1/7_counter_collection.csv"), b"a").unwrap();
        std::fs::write(dir.path().join("other/8_counter_collection.csv"), b"b").unwrap();
        std::fs::write(dir.path().join("9_counter_collection.csv"), b"c").unwrap();
        let mut outputs = DeclaredOutputs {
            collect: vec![FilePattern::Regex("_counter_collection\\.csv$".into())],
            ..Default::default()
        };
        let names = |raw: &RawOutput| -> Vec<String> {
            raw.artifacts.iter().map(|a| a.name.clone()).collect()
        };
        let (raw, _) = collect_declared(dir.path(), &outputs).await.unwrap();
        assert_eq!(names(&raw), ["9_counter_collection.csv"]);
        outputs.collect_in = vec![FilePattern::Prefix("pass_".into())];
        let (raw, errors) = collect_declared(dir.path(), &outputs).await.unwrap();
        assert!(errors.is_empty());
        assert_eq!(
            names(&raw),
            [
                "9_counter_collection.csv",
                "pass_1/7_counter_collection.csv"
            ]
        );
        assert_eq!(raw.artifacts[1].content, b"a");
    }

    #[tokio::test]
    async fn missing_file_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_artifact(dir.path(), "ncu.log", 10)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("ncu.log"), "{err}");
    }
}
