//! Running things: the supervised async runner, plan execution, jobs and the eval-pipeline API.
//! Knows no vendor: profilers hand it plans.

pub mod outcome;

pub use outcome::{MarkerSeen, Outcome, RunResult, StreamCapture, Timings};
