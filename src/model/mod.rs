//! The vocabulary every layer shares, and nothing else: plans, raw artifacts, parsed output and
//! diagnostics, outcomes, kernel records, the run document and the library's error type.
//! It imports no other polyprof module; profilers/ and results/ stand on it side by side,
//! pipeline/ above both, cli/ on top (`scripts/check-layers.sh` keeps it so).

pub mod arg;
pub mod artifacts;
pub mod atomic_file;
pub mod batch;
pub mod calibration;
pub mod device;
pub mod duration_check;
pub mod error;
pub mod fields;
pub mod gpu_trace;
pub mod gpu_trace_file;
pub mod input;
pub mod kernel_name;
pub mod number;
pub mod outcome;
pub mod parsed;
pub mod plan;
pub mod probe;
pub mod profile_cache;
pub mod record;
pub mod record_origin;
pub mod run;
pub mod run_error;
pub mod schema;
pub mod under_root;
pub mod verdict_metrics;

pub use arg::Arg;
pub use artifacts::{RawArtifact, RawOutput};
pub use device::DeviceInfo;
pub use error::{Error, Result};
pub use fields::{NORMALIZED_FIELDS, NormalizedField, normalized_field};
pub use outcome::{MarkerSeen, Outcome, RunResult, StreamCapture, Timings};
pub use parsed::{Diagnostic, ParsedOutput, ProfilerOutput, Severity};
pub use plan::{
    CommandSpec, DeclaredOutputs, EndMarker, FilePattern, Graces, Plan, RetryPolicy, StagedFile,
    Step, Validator,
};
pub use probe::{Probe, ProbeError, ProbeOutput, ProbeRequest};
pub use record::{FlopCounts, KernelRecord, Metric, MetricName, MetricValue, RuleResult};
pub use run::{ContainerInfo, ProfileRun, ProfilerInfo, StepRun};
pub use run_error::{ErrorKind, RunError};
