//! Vendor backends: the pure [`Backend`] trait, the [`registry`] of every backend, selection,
//! and one module per vendor. A backend turns a target argv into a [`Plan`], parses raw bytes
//! into kernel records and judges availability from probe answers; it never runs processes or
//! reads files itself (the pipeline does, through `pipeline::Profiler`).

pub mod backend;
pub mod capability;
pub mod device_tool;
pub mod device_tools;
pub mod devices;
pub mod metal;
pub mod ncu;
pub mod none;
pub mod preflight;
pub mod quote;
pub mod registry;
pub mod rocprofv3;
pub mod selection;
pub mod settings;
pub mod staging;
pub mod tracer;
pub mod tracers;
pub mod unitrace;
pub mod vtune;
pub mod witness;

pub use crate::model::artifacts::{RawArtifact, RawOutput};
pub use crate::model::parsed::{Diagnostic, ParsedOutput, ProfilerOutput, Severity};
pub use crate::model::plan::{CommandSpec, EndMarker, Graces, Plan, RetryPolicy, Step, Validator};
pub use backend::{Backend, PreRunCheck};
pub use preflight::Preflight;
pub use registry::{BACKENDS, BackendEntry, PROFILER_NAMES, create};
pub use settings::{ProfilerSettings, SettingsKind};
