//! NVIDIA Nsight Compute backend: plan (`wrap`), preflight, parsers of ncu's CSV pages, metric
//! name checks, and the static lane (cuobjdump resource usage, theoretical occupancy).

pub mod calibration_program;
pub mod capabilities;
mod checks;
mod context;
pub mod cuobjdump;
mod details;
pub mod diagnostics;
pub mod discovery;
mod dispatch;
pub mod fields;
pub mod kernel_filter;
pub mod launch_log;
pub mod merge;
pub mod names;
pub mod nvidia_smi;
pub mod nvtx;
pub mod occupancy;
pub mod options;
mod parallel;
pub mod parse;
pub mod plan;
pub mod preflight;
pub mod profile_once;
pub mod query;
mod raw;
pub mod row;
pub mod scan;
mod session;
mod stream;
pub mod trace_log;
pub mod units;

use crate::model::arg::Arg;
use std::path::{Path, PathBuf};

use super::{
    Backend, EndMarker, Graces, Plan, PreRunCheck, Preflight, ProfilerOutput, ProfilerSettings,
};
use crate::model::artifacts::RawOutput;
use crate::model::device::DeviceInfo;
use crate::model::error::{Error, Result};
use crate::model::plan::{DeclaredOutputs, FilePattern};
use crate::model::probe::Probe;

pub use options::{
    ClockControl, GraphProfiling, KernelNameBase, NcuOptions, Preset, TargetProcesses,
};
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

    /// How [`Backend::parse`] parses: requested metrics are checked against the output.
    pub fn parse_options(&self) -> ParseOptions {
        ParseOptions {
            keep: MetricFilter::All,
            requested: self.options.requested_metrics(),
            instance: self.options.kernel_name.as_deref().and_then(|name| {
                kernel_filter::widened_instance(name, self.options.kernel_name_base)
            }),
        }
    }
}

impl Backend for Ncu {
    fn name(&self) -> &str {
        "ncu"
    }

    fn output_dir(&self) -> &Path {
        &self.output_dir
    }

    fn build_plan(&self, target: &[Arg]) -> Result<Plan> {
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

    /// `ncu.log` (required) and the report exports, in the order they are merged.
    fn outputs(&self) -> DeclaredOutputs {
        DeclaredOutputs {
            collect: [
                plan::LOG_FILE,
                plan::RAW_FILE,
                plan::DETAILS_FILE,
                plan::SESSION_FILE,
            ]
            .map(|name| FilePattern::Name(name.to_string()))
            .to_vec(),
            ..Default::default()
        }
    }

    fn parse(&self, raw: RawOutput) -> Result<ProfilerOutput> {
        parse_output(&self.output_dir, raw, &self.parse_options())
    }

    /// When ncu is installed here, check requested metric names against `ncu --query-metrics`
    /// (ncu itself ignores unknown names silently).
    fn pre_run_check(&self) -> Option<PreRunCheck> {
        // The minimal preset's names are polyprof's own (its optional tensor counters are left
        // out of the post-run check); asking `ncu --query-metrics` for them only costs a fresh
        // machine seconds before its first run.
        let names = self.options.requested_metrics();
        if names.is_empty()
            || self.options.skip_metric_check
            || self.options.preset == options::Preset::Minimal
        {
            return None;
        }
        let options = self.options.clone();
        let known_version = self.version.get().cloned().flatten();
        Some(Box::new(move |probe: &dyn Probe| {
            query::check_metrics_here(probe, &options, &names, known_version)
        }))
    }

    fn check_availability(&self, probe: &dyn Probe) -> Preflight {
        let preflight = preflight::run(probe, &self.options.binary);
        let _ = self.version.set(preflight.version.clone());
        preflight
    }
}

/// Parse what was collected from ncu's output directory `dir`: `ncu.log` (required) and the
/// report exports (`raw.csv`, `details.csv`, `session.csv`) when present. Raw bytes are kept
/// even when parsing finds nothing.
pub fn parse_output(dir: &Path, raw: RawOutput, options: &ParseOptions) -> Result<ProfilerOutput> {
    if raw.get(plan::LOG_FILE).is_none() {
        let log_path = dir.join(plan::LOG_FILE);
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
    let mut errors = Vec::new();
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
    merge::drop_cross_artifact_false_alarms(&mut parsed);
    if let Some(instance) = &options.instance
        && let Some(note) = kernel_filter::keep_instance(&mut parsed.kernels, instance)
    {
        diagnostics::push(&mut parsed.diagnostics, note);
    }
    parsed.device = device_from_session(&parsed.session);
    let kernels = parsed.kernels.len();
    parse::flag_empty(&mut parsed, kernels);
    Ok(ProfilerOutput {
        raw,
        parsed,
        errors,
    })
}

/// The device ncu reported (its `device_name` and `compute_capability` session facts).
pub fn device_from_session(
    session: &std::collections::BTreeMap<String, String>,
) -> Option<DeviceInfo> {
    let name = session.get("device_name")?;
    Some(DeviceInfo {
        name: name.clone(),
        compute_capability: session.get("compute_capability").cloned(),
        arch: None,
    })
}
