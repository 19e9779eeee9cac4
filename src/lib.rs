//! polyprof: run any command under the right vendor GPU profiler, supervise it robustly, and
//! turn each vendor's output into one normalized profile.
//!
//! The flow is plan → run → raw artifacts → parse → normalized run → report/export:
//! [`model`] is the shared vocabulary, [`profilers`] build plans and parse output, [`pipeline`] runs plans, [`results`] holds the
//! normalized records and their exports.
//!
//! Profile a command with [`profile`] (a [`Job`]: the argv, the profiler, the output directory),
//! or every pass that selection picks with [`profile_all`]; read a saved run with
//! [`ProfileRun::read`]; compare two runs as `polyprof diff` does, and write what a CI system
//! shows:
//!
//! ```
//! use polyprof::ProfileRun;
//! use polyprof::results::KernelRecord;
//! use polyprof::results::diff::{DiffOptions, diff_runs};
//! use polyprof::results::export::{CiExporter, junit::JunitExporter};
//!
//! // Two run documents with one kernel each (a run directory reads with `ProfileRun::read`).
//! let run = |label: &str, gpu_time_ns: f64| {
//!     let mut run = ProfileRun::new(label, "ncu", &[], std::path::Path::new(label));
//!     run.kernels.push(KernelRecord {
//!         name: "matmul".into(),
//!         short_name: "matmul".into(),
//!         duration_ns: Some(gpu_time_ns),
//!         calls: 1,
//!         ..Default::default()
//!     });
//!     run
//! };
//! let diff = diff_runs(&run("a", 100_000.0), &run("b", 130_000.0), &DiffOptions::default())?;
//! assert!(diff.regressed());
//!
//! let mut xml = Vec::new();
//! JunitExporter.export(&polyprof::results::ci_diff::suite(&diff), &mut xml)?;
//! assert!(String::from_utf8(xml)?.contains(r#"<failure message="regressed: median 100.0 us"#));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `examples/` has three short programs: `profile_command`, `compare_runs` and
//! `batch_from_rust`.

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
