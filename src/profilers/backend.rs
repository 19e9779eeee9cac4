//! The pure core every vendor backend implements. A backend builds a plan from a target argv,
//! declares the files its profiler writes, parses the collected raw files synchronously, and
//! judges availability from the answers to the probes it asks for. It never starts a process or
//! touches the filesystem: the pipeline does (`pipeline::Profiler` is the face users call,
//! written once on top of this trait).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::Path;

use crate::model::arg::Arg;
use crate::model::artifacts::RawOutput;
use crate::model::error::Result;
use crate::model::parsed::ProfilerOutput;
use crate::model::plan::{DeclaredOutputs, EndMarker, Graces, Plan};
use crate::model::probe::Probe;
use crate::profilers::preflight::Preflight;

/// A check to run before the profiled command, asking its own probes (ncu: requested metric
/// names against `ncu --query-metrics`). Owned so the pipeline can run it off the async threads.
pub type PreRunCheck = Box<dyn FnOnce(&dyn Probe) -> Result<()> + Send>;

/// A vendor profiler backend: pure functions over plans, raw bytes and probe answers.
pub trait Backend: Send + Sync + Debug {
    /// Stable identifier: `ncu`, `unitrace`, `ocl-unitrace`, `vtune`, `metal`, `none`.
    fn name(&self) -> &str;

    /// The directory the profiler writes into, as the profiled process sees it.
    fn output_dir(&self) -> &Path;

    /// The backend's own plan for one pass over `target` (argv vectors, never a shell string).
    /// Callers use [`Backend::wrap`], which adds the declared outputs.
    fn build_plan(&self, target: &[Arg]) -> Result<Plan>;

    /// The files the profiler writes (collected after the run), the entries that must not exist
    /// before it, and the files to stage.
    fn outputs(&self) -> DeclaredOutputs {
        DeclaredOutputs::default()
    }

    /// Turn the collected raw files into records and diagnostics. Pure and synchronous; the raw
    /// bytes stay in the result whatever the parser made of them. `Err` when the files needed
    /// are not there at all ([`crate::Error::NoData`], saying what to look at).
    fn parse(&self, raw: RawOutput) -> Result<ProfilerOutput>;

    /// Judge whether the profiler can run here from the answers to the probes it asks.
    fn check_availability(&self, probe: &dyn Probe) -> Preflight;

    /// Whether [`Backend::check_availability`] asks the host anything (runs version commands,
    /// reads files). One that does not is judged on the caller's thread, without a blocking
    /// pool thread started for it on every run.
    fn preflight_probes_host(&self) -> bool {
        true
    }

    /// A check to run before the command, if the backend has one.
    fn pre_run_check(&self) -> Option<PreRunCheck> {
        None
    }

    /// Variables the profiled process needs.
    fn env_vars(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// What tells that the work is done.
    fn end_marker(&self) -> EndMarker {
        EndMarker::Pytest
    }

    /// Marker and kill graces sized for this profiler.
    fn graces(&self) -> Graces {
        Graces::default()
    }

    /// The plan for one pass over `target`, with the declared outputs in it.
    fn wrap(&self, target: &[Arg]) -> Result<Plan> {
        let mut plan = self.build_plan(target)?;
        plan.outputs = self.outputs();
        Ok(plan)
    }
}
