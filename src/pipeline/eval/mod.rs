//! The eval harness, the effectful half of `crate::eval`: it starts the trusted and candidate
//! workers, speaks their protocol, reads the GPU's conditions, runs the witness pass and
//! writes `evidence.json` and `verdict.json` (docs/eval-harness.md).

pub mod ahead;
pub mod build;
pub mod build_dir;
pub mod bystanders;
pub mod conditions;
pub mod confine;
pub mod failure;
pub mod freeze;
pub mod harness_files;
pub mod input_pool;
pub mod integrity;
pub mod protocol;
mod scored_ahead;
pub mod scored_trace;
pub mod seeds;
pub mod session;
pub mod spec;
#[cfg(test)]
mod timeline_captures;
pub mod tracer;
pub mod warm;
pub mod warm_state;
pub mod worker;

pub use session::{EVIDENCE_FILE, Prepared, VERDICT_FILE, evaluate, evaluate_prepared, prepare};
pub use spec::{Device, EvalOptions, EvalOutcome, EvalSpec, IfExists, SandboxSetting};
pub use warm::WarmEvaluator;
