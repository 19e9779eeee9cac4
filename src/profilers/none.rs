//! The built-in `none` profiler: runs the target as is. The runner still records the outcome,
//! timings and output, which is polyprof's default when no vendor profiler is wanted.

use crate::model::arg::Arg;
use std::path::{Path, PathBuf};

use super::{
    Backend, CommandSpec, EndMarker, Graces, Plan, Preflight, ProfilerOutput, ProfilerSettings,
    RawOutput, Step,
};
use crate::model::error::{Error, Result};
use crate::model::probe::Probe;

#[derive(Debug, Clone)]
pub struct NoProfiler {
    output_dir: PathBuf,
    end_marker: EndMarker,
    graces: Graces,
}

impl NoProfiler {
    pub fn new(output_dir: PathBuf, settings: &ProfilerSettings) -> Self {
        NoProfiler {
            output_dir,
            // Without a profiler nothing is written after the program's last line, so the
            // process exit is the natural end; a marker is opt-in.
            end_marker: settings.end_marker.clone().unwrap_or(EndMarker::None),
            graces: settings.graces.unwrap_or_default(),
        }
    }
}

impl Backend for NoProfiler {
    fn name(&self) -> &str {
        "none"
    }

    fn output_dir(&self) -> &Path {
        &self.output_dir
    }

    fn build_plan(&self, target: &[Arg]) -> Result<Plan> {
        if target.is_empty() {
            return Err(Error::invalid("target", "the command to run is empty"));
        }
        Ok(Plan {
            profiler: "none".to_string(),
            target: target.to_vec(),
            outputs: Default::default(),
            capabilities: Vec::new(),
            steps: vec![Step::new(
                "run",
                CommandSpec::new(target.to_vec()),
                self.end_marker.clone(),
                self.graces,
            )],
        })
    }

    fn end_marker(&self) -> EndMarker {
        self.end_marker.clone()
    }

    fn graces(&self) -> Graces {
        self.graces
    }

    fn parse(&self, _raw: RawOutput) -> Result<ProfilerOutput> {
        Ok(ProfilerOutput::default())
    }

    fn check_availability(&self, _probe: &dyn Probe) -> Preflight {
        Preflight::new("none").finish()
    }

    fn preflight_probes_host(&self) -> bool {
        false
    }
}
