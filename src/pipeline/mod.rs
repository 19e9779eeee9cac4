//! Running things: the supervised async runner, plan execution, jobs and the eval-pipeline API.
//! Knows no vendor: profilers hand it plans.

pub mod api;
pub mod artifacts;
pub mod batch;
pub mod calibrate;
pub mod config;
pub mod config_file;
pub mod eval;
pub mod executor;
pub mod fingerprint;
pub mod host;
pub mod injection;
pub mod job;
pub mod lock;
pub mod probe;
pub mod profile_cache;
pub mod profile_once;
pub mod profiler;
pub mod regular_file;
pub mod rundir;
pub mod runner;
pub mod sandbox;
pub mod staging;

pub use crate::model::outcome::{MarkerSeen, Outcome, RunResult, StreamCapture, Timings};
pub use api::{ProfileAllOptions, profile_all};
pub use executor::execute_plan;
pub use job::{Job, profile};
pub use probe::{HostProbe, run_probe};
pub use profiler::Profiler;
pub use runner::{EnvPolicy, Line, LineSink, RunOptions, StreamKind, run_command};

pub mod container;
pub mod target;
pub use job::profile_on;
pub use target::ExecutionTarget;
