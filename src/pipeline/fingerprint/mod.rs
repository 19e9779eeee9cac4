//! The fingerprint pass: the target run once, without a profiler, under the backend's
//! injection library (its fingerprint capability: on NVIDIA polyprof's CUPTI client,
//! `profilers/ncu/inject.c`, compiled at first use), which logs every kernel launch and saves
//! the module images they run. `profile_once` keys the profile cache with what it logs. It runs
//! apart from the profiler because the profiler owns the injection slot while it profiles.

pub mod error;
pub mod pass;

pub use error::FingerprintError;
pub use pass::{FINGERPRINT_DIR, FingerprintPass, run_fingerprint_pass};
