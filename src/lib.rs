//! polyprof: run any command under the right vendor GPU profiler, supervise it robustly, and
//! turn each vendor's output into one normalized profile.
//!
//! The flow is plan → run → raw artifacts → parse → normalized run → report/export:
//! [`model`] is the shared vocabulary, [`profilers`] build plans and parse output, [`pipeline`] runs plans, [`results`] holds the
//! normalized records and their exports.

pub mod eval;
pub mod metal;
pub mod model;
pub mod pipeline;
pub mod profilers;
pub mod results;

pub use model::ProfileRun;
pub use model::error::{Error, Result};
pub use model::run_error::{ErrorKind, RunError};
pub use pipeline::{Job, ProfileAllOptions, profile, profile_all};
