//! `ProfileRun`: the versioned document that describes one profiler pass end to end. Written as
//! `run.json` in the pass's output directory and readable back.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::arg::Arg;
use crate::model::artifacts::RawArtifact;
pub use crate::model::device::DeviceInfo;
use crate::model::error::{Error, Result};
use crate::model::outcome::{Outcome, RunResult};
use crate::model::parsed::Diagnostic;
use crate::model::plan::Plan;
use crate::model::record::KernelRecord;
pub use crate::model::run_error::{ErrorKind, RunError};

/// Bumped whenever a field changes meaning or is removed. 2: `errors` are `{kind, message}`
/// objects ([`RunError`]); version 1 documents (plain strings) still load, as kind `unknown`.
pub const SCHEMA_VERSION: u32 = 2;

/// File name of the run document inside a run directory.
pub const RUN_FILE: &str = "run.json";

/// The profiler that produced a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProfilerInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Metric preset, metric group or similar, as a short label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<String>,
}

/// The container a run went through, when it did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContainerInfo {
    pub image: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// One step of the plan and each attempt made at it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepRun {
    pub name: String,
    pub attempts: Vec<RunResult>,
    /// The last attempt was accepted (exit status and validator).
    pub accepted: bool,
    /// Why the step was not accepted, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection: Option<String>,
}

/// Everything about one profiler pass: what ran, how it ended, what it produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProfileRun {
    pub schema_version: u32,
    pub polyprof_version: String,
    /// `<profiler>.<NNN>`, or a caller-chosen label.
    pub label: String,
    /// Seconds since the Unix epoch when the pass started.
    pub started_unix_s: f64,
    /// The command, exactly as given (a string per word, or `{"bytes_hex": …}` when not UTF-8).
    pub target: Vec<Arg>,
    pub env_policy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<ContainerInfo>,
    pub profiler: ProfilerInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    pub steps: Vec<StepRun>,
    /// The outcome of the main (profiling) step; `None` when nothing could be started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    pub output_dir: PathBuf,
    pub artifacts: Vec<RawArtifact>,
    pub kernels: Vec<KernelRecord>,
    /// The profile cache's figures, when the run used it (`--profile-cache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_cache: Option<crate::model::profile_cache::ProfileCacheSummary>,
    /// Memory copies, fills and barriers (never counted as kernels).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_commands: Vec<KernelRecord>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    /// Facts the profiler reported about its session (tool version, device attributes, …).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub session: std::collections::BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What failed, each with its kind; a run with errors did not succeed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<RunError>,
}

impl ProfileRun {
    /// An empty run document for `label` in `output_dir`.
    pub fn new(label: &str, profiler: &str, target: &[Arg], output_dir: &Path) -> Self {
        let started_unix_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or_default();
        ProfileRun {
            schema_version: SCHEMA_VERSION,
            polyprof_version: env!("CARGO_PKG_VERSION").to_string(),
            label: label.to_string(),
            started_unix_s,
            target: target.to_vec(),
            env_policy: "inherit".to_string(),
            container: None,
            profiler: ProfilerInfo {
                name: profiler.to_string(),
                ..Default::default()
            },
            device: None,
            plan: None,
            steps: Vec::new(),
            outcome: None,
            output_dir: output_dir.to_path_buf(),
            artifacts: Vec::new(),
            kernels: Vec::new(),
            profile_cache: None,
            memory_commands: Vec::new(),
            diagnostics: Vec::new(),
            session: Default::default(),
            warnings: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Record an error of `kind`.
    pub fn fail(&mut self, kind: ErrorKind, message: impl Into<String>) {
        self.errors.push(RunError::new(kind, message));
    }

    /// Whether any error is of `kind`.
    pub fn has_error(&self, kind: ErrorKind) -> bool {
        self.errors.iter().any(|e| e.kind == kind)
    }

    /// True when the main step succeeded and nothing was recorded as an error.
    pub fn succeeded(&self) -> bool {
        self.errors.is_empty() && self.outcome.as_ref().is_some_and(Outcome::is_success)
    }

    /// Write `run.json` into `dir` (atomically, through [`crate::model::atomic_file`]): the
    /// data fsynced before the rename, the directory's sync left to the next document written
    /// there or the filesystem (see
    /// [`write_atomic_deferring_dir_sync`](crate::model::atomic_file::write_atomic_deferring_dir_sync)).
    pub fn write(&self, dir: &Path) -> Result<PathBuf> {
        let path = dir.join(RUN_FILE);
        let text = serde_json::to_vec_pretty(self).map_err(|source| Error::Json {
            context: "run document".to_string(),
            source,
        })?;
        crate::model::atomic_file::write_atomic_deferring_dir_sync(&path, &text)
            .map_err(|e| Error::io("write", &path, e))?;
        Ok(path)
    }

    /// Read a run back from a run directory or a `run.json` path. An older document is
    /// upgraded in memory (version 1's string errors become kind `unknown`), so writing it
    /// back writes the current version.
    pub fn read(path: &Path) -> Result<Self> {
        let file = if path.is_dir() {
            path.join(RUN_FILE)
        } else {
            path.to_path_buf()
        };
        let mut run: ProfileRun = read_document(&file, |run: &ProfileRun| run.schema_version)?;
        run.schema_version = SCHEMA_VERSION;
        Ok(run)
    }

    /// The names of the raw files the run document in `dir` lists, read without building the
    /// whole document: `polyprof run --force` needs only these to clear the old run, and
    /// building every record of it cost ~30 page faults and ~0.1 ms per run (issue 37). The
    /// same checks as [`ProfileRun::read`]: a regular file, JSON, a schema this polyprof reads.
    pub fn read_artifact_names(dir: &Path) -> Result<Vec<String>> {
        #[derive(Deserialize)]
        struct Named {
            name: String,
        }
        #[derive(Deserialize)]
        struct Listing {
            schema_version: u32,
            artifacts: Vec<Named>,
        }
        let listing: Listing = read_document(&dir.join(RUN_FILE), |listing: &Listing| {
            listing.schema_version
        })?;
        Ok(listing.artifacts.into_iter().map(|a| a.name).collect())
    }
}

/// `file` read as a run document, whole or the part of it `T` names: a regular file (a FIFO or
/// device would hang the read), JSON, of a schema this polyprof reads (`version` says which).
fn read_document<T: serde::de::DeserializeOwned>(
    file: &Path,
    version: impl Fn(&T) -> u32,
) -> Result<T> {
    crate::model::input::require_regular_file(file)?;
    let text = std::fs::read(file).map_err(|e| Error::io("read run document", file, e))?;
    let document: T = serde_json::from_slice(&text).map_err(|source| Error::Json {
        context: file.display().to_string(),
        source,
    })?;
    let found = version(&document);
    if found > SCHEMA_VERSION {
        return Err(Error::invalid(
            "run document",
            format!(
                "{} has schema version {found}, this polyprof reads up to {SCHEMA_VERSION}; upgrade polyprof",
                file.display()
            ),
        ));
    }
    Ok(document)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_document_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = ProfileRun::new(
            "none.000",
            "none",
            &["echo".into(), "(16, 32)".into()],
            dir.path(),
        );
        run.kernels.push(KernelRecord {
            name: "k".into(),
            short_name: "k".into(),
            duration_ns: Some(5.0),
            ..Default::default()
        });
        run.write(dir.path()).unwrap();
        assert_eq!(ProfileRun::read(dir.path()).unwrap(), run);
    }

    #[test]
    fn artifact_names_are_read_as_the_whole_document_lists_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = ProfileRun::new("ncu.000", "ncu", &["app".into()], dir.path());
        for name in ["report.ncu-rep", "sub/raw.csv"] {
            run.artifacts.push(RawArtifact {
                name: name.into(),
                path: dir.path().join(name),
                size: 3,
                content: Vec::new(),
                truncated: false,
            });
        }
        run.write(dir.path()).unwrap();
        let whole: Vec<String> = ProfileRun::read(dir.path())
            .unwrap()
            .artifacts
            .into_iter()
            .map(|a| a.name)
            .collect();
        assert_eq!(ProfileRun::read_artifact_names(dir.path()).unwrap(), whole);
        // A newer schema, a truncated or a non-run document: an error, as `read` gives.
        for text in [
            "{\"schema_version\": 99, \"artifacts\": []}",
            "{\"schema_version\": 2, \"artif",
            "{\"schema_version\": 2}",
        ] {
            std::fs::write(dir.path().join(RUN_FILE), text).unwrap();
            assert!(
                ProfileRun::read_artifact_names(dir.path()).is_err(),
                "{text}"
            );
        }
        std::fs::remove_file(dir.path().join(RUN_FILE)).unwrap();
        assert!(ProfileRun::read_artifact_names(dir.path()).is_err());
    }

    #[test]
    fn truncated_run_document_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RUN_FILE), b"{\"schema_version\": 1, \"lab").unwrap();
        let err = ProfileRun::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("run.json"), "{err}");
    }
}
