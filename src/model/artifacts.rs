//! Raw files a profiler wrote. The files themselves stay on disk; an artifact always records
//! its path and true size, and holds at most a capped prefix of the content.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One raw file the profiler wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawArtifact {
    /// File name relative to the output directory.
    pub name: String,
    pub path: PathBuf,
    /// Size on disk.
    pub size: u64,
    /// Content read into memory (up to the cap). Not serialized: `run.json` points at the file.
    #[serde(skip)]
    pub content: Vec<u8>,
    /// The content was cut at the cap; the file on disk is complete.
    pub truncated: bool,
}

/// All raw files of one pass, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawOutput {
    pub artifacts: Vec<RawArtifact>,
}

impl RawOutput {
    pub fn get(&self, name: &str) -> Option<&RawArtifact> {
        self.artifacts.iter().find(|a| a.name == name)
    }
}
