//! NVIDIA Nsight Compute backend: plan (`wrap`), preflight, parsers of ncu's CSV pages, metric
//! name checks, and the static lane (cuobjdump resource usage, theoretical occupancy).

pub mod cuobjdump;
pub mod details;
pub mod diagnostics;
pub mod discovery;
pub mod fields;
pub mod kernel_filter;
pub mod occupancy;
pub mod options;
pub mod parse;
pub mod plan;
pub mod preflight;
pub mod query;
pub mod raw;
pub mod row;
pub mod scan;
pub mod session;
pub mod units;

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::artifacts::{DEFAULT_ARTIFACT_CAP, RawOutput, read_artifact};
use super::{EndMarker, Graces, Plan, Preflight, Profiler, ProfilerOutput, ProfilerSettings};
use crate::error::{Error, Result};

pub use options::{ClockControl, KernelNameBase, NcuOptions, Preset, TargetProcesses};
pub use parse::{
    MetricFilter, PARALLEL_MIN_ROWS, ParseOptions, merge, parse, parse_reader,
    parse_reader_threads, parse_with,
};

#[derive(Debug, Clone)]
pub struct Ncu {
    output_dir: PathBuf,
    options: NcuOptions,
    end_marker: EndMarker,
    graces: Graces,
    /// The version the preflight read, so `prepare` does not start ncu again to ask.
    version: std::sync::OnceLock<Option<String>>,
}

impl Ncu {
    /// Build the backend; options are checked here so a bad flag fails before anything runs.
    pub fn new(output_dir: PathBuf, settings: &ProfilerSettings) -> Result<Self> {
        let mut options = settings.ncu.clone();
        options
            .extra_args
            .extend(settings.extra_args.iter().cloned());
        options.validate()?;
        Ok(Ncu {
            output_dir,
            options,
            end_marker: settings.end_marker.clone().unwrap_or(EndMarker::Pytest),
            graces: settings.graces.unwrap_or(plan::PROFILE_GRACES),
            version: std::sync::OnceLock::new(),
        })
    }

    pub fn options(&self) -> &NcuOptions {
        &self.options
    }

    /// How [`Profiler::read_output`] parses: requested metrics are checked against the output.
    pub fn parse_options(&self) -> ParseOptions {
        ParseOptions {
            keep: MetricFilter::All,
            requested: self.options.preset.requested_metrics(),
        }
    }
}

#[async_trait]
impl Profiler for Ncu {
    fn name(&self) -> &str {
        "ncu"
    }

    fn output_dir(&self) -> &Path {
        &self.output_dir
    }

    fn wrap(&self, target: &[String]) -> Result<Plan> {
        plan::build(
            &self.options,
            &self.output_dir,
            target,
            self.end_marker.clone(),
            self.graces,
        )
    }

    fn env_vars(&self) -> std::collections::BTreeMap<String, String> {
        plan::ncu_env()
    }

    fn end_marker(&self) -> EndMarker {
        self.end_marker.clone()
    }

    fn graces(&self) -> Graces {
        self.graces
    }

    /// Create the output directory and, when ncu is installed here, check requested metric names
    /// against `ncu --query-metrics` (ncu itself ignores unknown names silently).
    async fn prepare(&self, host_output_dir: &Path) -> Result<()> {
        tokio::fs::create_dir_all(host_output_dir)
            .await
            .map_err(|e| Error::io("create output directory", host_output_dir, e))?;
        let names = self.options.preset.requested_metrics();
        if names.is_empty() || self.options.skip_metric_check {
            return Ok(());
        }
        let options = self.options.clone();
        let known_version = self.version.get().cloned().flatten();
        tokio::task::spawn_blocking(move || {
            query::check_metrics_here(&options, &names, known_version)
        })
        .await
        .map_err(|e| Error::invalid("ncu metric check", e.to_string()))?
    }

    async fn read_output(&self) -> Result<ProfilerOutput> {
        read_output_dir(&self.output_dir, &self.parse_options()).await
    }

    fn preflight(&self) -> Preflight {
        let preflight = preflight::run(&self.options.binary);
        let _ = self.version.set(preflight.version.clone());
        preflight
    }
}

/// Read and parse everything ncu left in `dir`: `ncu.log` (required) and the report exports
/// (`raw.csv`, `details.csv`, `session.csv`) when present. Raw bytes are kept even when parsing
/// finds nothing.
pub async fn read_output_dir(dir: &Path, options: &ParseOptions) -> Result<ProfilerOutput> {
    let log_path = dir.join(plan::LOG_FILE);
    if !tokio::fs::try_exists(&log_path).await.unwrap_or(false) {
        return Err(Error::NoData {
            profiler: "ncu".to_string(),
            reason: format!(
                "`{}` does not exist: ncu never started (is `ncu` on PATH where the command ran?), \
                 the output directory is not the one ncu wrote to (container mount?), or ncu was \
                 killed before writing; the run's stdout and stderr say more",
                log_path.display()
            ),
        });
    }
    let mut raw = RawOutput::default();
    let mut errors = Vec::new();
    raw.artifacts
        .push(read_artifact(dir, plan::LOG_FILE, DEFAULT_ARTIFACT_CAP).await?);
    for name in [plan::RAW_FILE, plan::DETAILS_FILE, plan::SESSION_FILE] {
        if tokio::fs::try_exists(dir.join(name)).await.unwrap_or(false) {
            match read_artifact(dir, name, DEFAULT_ARTIFACT_CAP).await {
                Ok(artifact) => raw.artifacts.push(artifact),
                Err(error) => errors.push(format!("{name}: {error}")),
            }
        }
    }
    let mut parsed = super::ParsedOutput::default();
    for artifact in &raw.artifacts {
        if artifact.truncated {
            errors.push(format!(
                "{}: {} bytes on disk, only the first {} parsed",
                artifact.name,
                artifact.size,
                artifact.content.len()
            ));
        }
        // Exports carry no request of their own; the missing-metric check runs on the pages
        // that hold the launch table.
        parse::merge(&mut parsed, parse::parse(&artifact.content, options));
    }
    drop_cross_artifact_false_alarms(&mut parsed);
    let kernels = parsed.kernels.len();
    parse::flag_empty(&mut parsed, kernels);
    Ok(ProfilerOutput {
        raw,
        parsed,
        errors,
    })
}

/// A metric absent from one page but present on another of the same run is not missing.
fn drop_cross_artifact_false_alarms(parsed: &mut super::ParsedOutput) {
    let present = |name: &str| parsed.kernels.iter().any(|k| k.metrics.contains_key(name));
    let keep: Vec<bool> = parsed
        .diagnostics
        .iter()
        .map(|d| d.kind != "metric_missing" || !metric_in_message(&d.message).is_some_and(&present))
        .collect();
    let mut flags = keep.into_iter();
    parsed.diagnostics.retain(|_| flags.next().unwrap_or(true));
}

/// The name between the first pair of backticks.
fn metric_in_message(message: &str) -> Option<&str> {
    let start = message.find('`')? + 1;
    let end = message[start..].find('`')? + start;
    Some(&message[start..end])
}
