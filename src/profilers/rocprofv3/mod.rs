//! AMD rocprofv3 (ROCprofiler-SDK): HIP, and PyTorch/Triton on ROCm.
//!
//! The plan (`plan.rs`) traces kernels, copies and stats in one step and collects counters in
//! one step per group; the preflight decision (`preflight.rs`) judges probe results
//! (`probe.rs`); the parsers are pure, one file per output kind, joined in `parse.rs`.
//! The backend below is the only part that touches the disk.

pub mod agent_info;
pub mod counters;
pub mod kernel_trace;
pub mod memory_copy;
pub mod parse;
pub mod plan;
pub mod preflight;
pub mod probe;
pub mod stats;
pub mod table;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::artifacts::{DEFAULT_ARTIFACT_CAP, read_artifact};
use super::staging::ensure_fresh;
use super::{
    EndMarker, Graces, Plan, Preflight, Profiler, ProfilerOutput, ProfilerSettings, RawOutput,
};
use crate::error::{Error, Result};

pub use parse::{FileKind, ParsedPart, parse_files, parse_raw};
pub use plan::{ROOFLINE_GROUPS, Rocprofv3Options};

/// The backend's stable name, also the binary's.
pub const NAME: &str = "rocprofv3";

/// The rocprofv3 backend.
#[derive(Debug, Clone)]
pub struct Rocprofv3 {
    output_dir: PathBuf,
    options: Rocprofv3Options,
    extra_args: Vec<String>,
    end_marker: Option<EndMarker>,
    graces: Option<Graces>,
}

impl Rocprofv3 {
    /// `settings.metric_group` picks the counters: `trace` (default), `roofline`, `pmc:A,B;C`.
    pub fn new(output_dir: PathBuf, settings: &ProfilerSettings) -> Result<Self> {
        Ok(Rocprofv3 {
            output_dir,
            options: Rocprofv3Options::from_metric_group(settings.metric_group.as_deref())?,
            extra_args: settings.extra_args.clone(),
            end_marker: settings.end_marker.clone(),
            graces: settings.graces,
        })
    }

    pub fn options(&self) -> &Rocprofv3Options {
        &self.options
    }
}

/// Whether a directory entry is rocprofv3 output of this plan (a step's files, or the
/// `pass_N` folder counter steps write into).
pub fn is_rocprofv3_output(name: &str) -> bool {
    name.starts_with("trace_")
        || name.starts_with("pmc")
        || name.starts_with("pass_")
        || FileKind::of(name) != FileKind::Other
}

#[async_trait]
impl Profiler for Rocprofv3 {
    fn name(&self) -> &str {
        NAME
    }

    fn output_dir(&self) -> &Path {
        &self.output_dir
    }

    fn wrap(&self, target: &[String]) -> Result<Plan> {
        plan::build(
            &plan::PlanInput {
                options: &self.options,
                output_dir: &self.output_dir,
                extra_args: &self.extra_args,
                end_marker: self.end_marker(),
                graces: self.graces(),
                env: self.env_vars(),
            },
            target,
        )
    }

    fn env_vars(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("POLYPROF_PROFILER".to_string(), NAME.to_string())])
    }

    fn end_marker(&self) -> EndMarker {
        self.end_marker.clone().unwrap_or(EndMarker::Pytest)
    }

    fn graces(&self) -> Graces {
        self.graces.unwrap_or_else(plan::default_graces)
    }

    /// A previous run's CSVs would be parsed as this run's.
    async fn prepare(&self, host_output_dir: &Path) -> Result<()> {
        ensure_fresh(NAME, host_output_dir, is_rocprofv3_output).await
    }

    async fn read_output(&self) -> Result<ProfilerOutput> {
        let names = output_files(&self.output_dir).await?;
        if names.is_empty() {
            return Err(Error::NoData {
                profiler: NAME.into(),
                reason: format!(
                    "no rocprofv3 CSV in `{}`; rocprofv3's stderr says what happened (a \
                     counter group that does not fit one pass, a missing GPU, …)",
                    self.output_dir.display()
                ),
            });
        }
        let mut raw = RawOutput::default();
        for name in &names {
            raw.artifacts
                .push(read_artifact(&self.output_dir, name, DEFAULT_ARTIFACT_CAP).await?);
        }
        let pass = parse_raw(&raw);
        Ok(ProfilerOutput {
            raw,
            parsed: pass.parsed,
            errors: pass.errors,
        })
    }

    fn preflight(&self) -> Preflight {
        preflight::decide(&probe::gather())
    }
}

/// Files rocprofv3 wrote, directly in `dir` or one folder down (`pass_1/` for counters),
/// relative to `dir`, sorted.
async fn output_files(dir: &Path) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut folders = vec![(dir.to_path_buf(), String::new(), 0)];
    while let Some((folder, prefix, depth)) = folders.pop() {
        let mut entries = tokio::fs::read_dir(&folder)
            .await
            .map_err(|e| Error::io("list output directory", &folder, e))?;
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(|e| Error::io("list output directory", &folder, e))?
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = format!("{prefix}{name}");
            let Ok(kind) = entry.file_type().await else {
                continue;
            };
            if kind.is_dir() && depth < 2 {
                folders.push((entry.path(), format!("{relative}/"), depth + 1));
            } else if kind.is_file()
                && (FileKind::of(&name) != FileKind::Other || name.ends_with(".json"))
            {
                found.push(relative);
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_choose_the_counters() {
        let mut settings = ProfilerSettings::default();
        let r = Rocprofv3::new(PathBuf::from("/o"), &settings).unwrap();
        assert!(r.options().counter_groups.is_empty());
        settings.metric_group = Some("roofline".into());
        let r = Rocprofv3::new(PathBuf::from("/o"), &settings).unwrap();
        assert_eq!(r.wrap(&["./app".into()]).unwrap().steps.len(), 6);
        settings.metric_group = Some("bogus".into());
        assert!(Rocprofv3::new(PathBuf::from("/o"), &settings).is_err());
    }

    #[tokio::test]
    async fn read_output_parses_files_one_folder_down_and_refuses_stale_ones() {
        let dir = tempfile::tempdir().unwrap();
        let r = Rocprofv3::new(dir.path().to_path_buf(), &ProfilerSettings::default()).unwrap();
        r.prepare(dir.path()).await.unwrap();
        let err = r.read_output().await.unwrap_err().to_string();
        assert!(err.contains("no rocprofv3 CSV"), "{err}");

        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rocprofv3");
        std::fs::copy(
            fixtures.join("kernel_trace.csv"),
            dir.path().join("trace_42_kernel_trace.csv"),
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("pass_1")).unwrap();
        std::fs::copy(
            fixtures.join("counter_collection.csv"),
            dir.path().join("pass_1/pmc1_43_counter_collection.csv"),
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.md"), "not rocprofv3").unwrap();
        let out = r.read_output().await.unwrap();
        let names: Vec<&str> = out.raw.artifacts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "pass_1/pmc1_43_counter_collection.csv",
                "trace_42_kernel_trace.csv"
            ]
        );
        assert_eq!(out.parsed.kernels.len(), 9);
        assert_eq!(out.parsed.kernels[0].process_id, Some(42));

        let err = r.prepare(dir.path()).await.unwrap_err().to_string();
        assert!(err.contains("trace_42_kernel_trace.csv"), "{err}");
    }

    #[test]
    fn preflight_here_follows_its_checks() {
        let p = Rocprofv3::new(PathBuf::from("/o"), &ProfilerSettings::default())
            .unwrap()
            .preflight();
        assert!(p.checks.iter().any(|c| c.name == "binary"));
        let blocked = p.checks.iter().any(|c| !c.ok && !c.advisory);
        assert_eq!(p.available, !blocked);
        assert_eq!(p.reason.is_some(), blocked);
    }
}
