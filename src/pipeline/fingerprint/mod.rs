//! The fingerprint pass: the target run once, without a profiler, under polyprof's CUPTI
//! injection library (`inject.c`, compiled at first use), which logs every kernel launch and
//! saves the module images they run. `profile_once` keys the profile cache with what it logs.
//! It runs apart from ncu because ncu owns the CUDA injection slot during profiling.

pub mod build;
pub mod error;
pub mod pass;

pub use build::{Library, library};
pub use error::FingerprintError;
pub use pass::{FINGERPRINT_DIR, FingerprintPass, run_fingerprint_pass};
