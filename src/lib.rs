//! polyprof: run any command under the right vendor GPU profiler, supervise it robustly, and
//! turn each vendor's output into one normalized profile.
//!
//! The flow is plan → run → raw artifacts → parse → normalized run → report/export:
//! [`profilers`] build plans and parse output, [`pipeline`] runs plans, [`results`] holds the
//! normalized records and their exports.

pub mod error;
pub mod metal;
pub mod pipeline;
pub mod profilers;
pub mod results;

pub use error::{Error, Result};
pub use pipeline::{Job, ProfileAllOptions, profile, profile_all};
pub use results::ProfileRun;
