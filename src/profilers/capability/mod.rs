//! What a backend can do besides profiling a command: each capability is a trait its backend's
//! folder implements (pure: plans, arguments, parsers and judges; never a process or a file),
//! listed in the backend's registry entry ([`Capabilities`]) and asked for by profiler name
//! ([`crate::profilers::registry::capabilities`]). The pipeline runs what a capability plans
//! and names no vendor. A backend without a capability says so: [`CapabilityError`].
//!
//! Capabilities that put polyprof's own library into the target (the fingerprint pass today,
//! an activity tracer tomorrow) describe it with one [`InjectionLibrary`]; the pipeline
//! compiles, caches and loads every such library the same way.

pub mod calibration;
pub mod fingerprint;
pub mod injection;
pub mod profile_once;
pub mod tool;

use std::fmt;

pub use calibration::{CalibrationCapability, CalibrationProgram, TensorPrecision};
pub use fingerprint::FingerprintCapability;
pub use injection::{InjectionLibrary, SdkLayout};
pub use profile_once::{Assembly, Hit, ProfileOnceCapability};

/// The capabilities one backend offers; `None`: it has not got that one.
#[derive(Clone, Copy, Default)]
pub struct Capabilities {
    /// Key every kernel launch before profiling (the profile cache's fingerprints).
    pub fingerprint: Option<&'static dyn FingerprintCapability>,
    /// Profile only the launches the profile cache lacks, then put the run back together.
    pub profile_once: Option<&'static dyn ProfileOnceCapability>,
    /// Measure known-work kernels and judge the counters against the work.
    pub calibration: Option<&'static dyn CalibrationCapability>,
}

impl Capabilities {
    /// No capability at all.
    pub const NONE: Capabilities = Capabilities {
        fingerprint: None,
        profile_once: None,
        calibration: None,
    };

    /// The names of those it has, for messages.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.fingerprint.is_some(), Capability::Fingerprint),
            (self.profile_once.is_some(), Capability::ProfileOnce),
            (self.calibration.is_some(), Capability::Calibration),
        ]
        .into_iter()
        .filter(|(has, _)| *has)
        .map(|(_, c)| c.name())
        .collect()
    }
}

impl fmt::Debug for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// One capability, by name (what an error names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    Fingerprint,
    ProfileOnce,
    Calibration,
}

impl Capability {
    pub fn name(self) -> &'static str {
        match self {
            Capability::Fingerprint => "fingerprint pass",
            Capability::ProfileOnce => "profile once",
            Capability::Calibration => "calibration",
        }
    }
}

/// A capability asked of a backend that has not got it (or of no backend at all).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapabilityError {
    #[error(
        "`{profiler}` has no {} capability{}",
        capability.name(),
        offered_by_text(offered_by)
    )]
    Missing {
        profiler: String,
        capability: Capability,
        /// The backends that have it.
        offered_by: Vec<&'static str>,
    },
    #[error("no profiler has the {} capability in this build", capability.name())]
    Nobody { capability: Capability },
}

fn offered_by_text(offered_by: &[&str]) -> String {
    if offered_by.is_empty() {
        "; no profiler offers it yet".to_string()
    } else {
        format!(
            "; use a profiler that has it ({})",
            offered_by
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}
