//! What can stop the fingerprint pass; the run then profiles every launch, as without a cache.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum FingerprintError {
    #[error(
        "nvcc is not on PATH: the fingerprint library is compiled with it (install the CUDA toolkit, or run without --profile-cache)"
    )]
    NoNvcc,
    #[error("no CUPTI found beside {cuda}: looked for cupti.h and libcupti.so in {looked}")]
    NoCupti { cuda: PathBuf, looked: String },
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("compiling the fingerprint library failed ({status}): {stderr}")]
    Compile { status: String, stderr: String },
    #[error("the fingerprint pass {0}")]
    Pass(String),
}
