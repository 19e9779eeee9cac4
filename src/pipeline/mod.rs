//! Running things: the supervised async runner, plan execution, jobs and the eval-pipeline API.
//! Knows no vendor: profilers hand it plans.

pub mod api;
pub mod executor;
pub mod job;
pub mod outcome;
pub mod runner;

pub use api::{ProfileAllOptions, profile_all};
pub use executor::execute_plan;
pub use job::{Job, profile};
pub use outcome::{MarkerSeen, Outcome, RunResult, StreamCapture, Timings};
pub use runner::{EnvPolicy, Line, LineSink, RunOptions, StreamKind, run_command};

pub mod container;
pub mod target;
pub use job::profile_on;
pub use target::ExecutionTarget;
