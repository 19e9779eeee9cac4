//! Vendor backends: the pure [`Backend`] trait, the [`registry`] of every backend, selection,
//! and one module per vendor. A backend turns a target argv into a [`Plan`], parses raw bytes
//! into kernel records and judges availability from probe answers; it never runs processes or
//! reads files itself (the pipeline does, through `pipeline::Profiler`).

pub mod backend;
pub mod devices;
pub mod metal;
pub mod ncu;
pub mod none;
pub mod preflight;
pub mod quote;
pub mod registry;
pub mod rocprofv3;
pub mod selection;
pub mod staging;
pub mod unitrace;
pub mod vtune;

use serde::{Deserialize, Serialize};

pub use crate::model::artifacts::{RawArtifact, RawOutput};
pub use crate::model::parsed::{Diagnostic, ParsedOutput, ProfilerOutput, Severity};
/// Moved to [`crate::model::plan`]; this path stays so branches in flight keep compiling.
pub use crate::model::plan;
pub use crate::model::plan::{CommandSpec, EndMarker, Graces, Plan, RetryPolicy, Step, Validator};
pub use backend::{Backend, PreRunCheck};
pub use preflight::Preflight;
pub use registry::{BACKENDS, BackendEntry, PROFILER_NAMES, create};

/// Options that shape how a profiler is built (from selection, CLI flags or the API).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfilerSettings {
    /// Unitrace metric group for this pass (`ComputeBasic`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_group: Option<String>,
    /// Nsight Compute options.
    #[serde(default)]
    pub ncu: ncu::NcuOptions,
    /// Extra arguments passed to the profiler verbatim, before the target (escape hatch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
    /// Override of the profiler's end marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_marker: Option<EndMarker>,
    /// Override of the profiler's graces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graces: Option<Graces>,
}
