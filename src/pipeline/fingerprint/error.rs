//! What can stop the fingerprint pass; the run then profiles every launch, as without a cache.

use std::path::PathBuf;

use crate::pipeline::injection::InjectionError;
use crate::profilers::capability::CapabilityError;

#[derive(Debug, thiserror::Error)]
pub enum FingerprintError {
    /// The profiler has no fingerprint pass.
    #[error(transparent)]
    Unsupported(#[from] CapabilityError),
    /// Its library could not be compiled (no compiler, no SDK, a failed build).
    #[error(transparent)]
    Library(#[from] InjectionError),
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the fingerprint pass {0}")]
    Pass(String),
}
