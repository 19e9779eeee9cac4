//! Why a calibration could not be made, each with what to do about it.

use std::path::PathBuf;

/// A tool the calibration needs and this machine lacks, with the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingTool {
    /// `nvcc`, `ncu`, `an NVIDIA GPU`.
    pub tool: &'static str,
    /// What is wrong and what to do.
    pub fix: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// The profiler asked for cannot calibrate (it has no calibration capability).
    #[error("cannot calibrate with this profiler: {0}")]
    Unsupported(#[from] crate::profilers::capability::CapabilityError),
    /// The profiler asked for is not one polyprof knows.
    #[error("{0}")]
    Profiler(String),
    /// nvcc, ncu or the GPU is missing: every one that is, at once.
    #[error("cannot calibrate on this machine:{}", missing_list(.missing))]
    Missing { missing: Vec<MissingTool> },
    /// nvidia-smi answered something polyprof cannot read.
    #[error(
        "cannot read the GPU from `{command}` ({why}); check that `nvidia-smi` works and that \
         --device names a GPU it lists"
    )]
    Device { command: String, why: String },
    #[error(
        "nvcc could not compile the calibration kernels for {arch} ({status}); its output:\n{stderr}\n\
         the source is {}; check that this CUDA toolkit supports {arch}", file.display()
    )]
    Compile {
        arch: String,
        status: String,
        stderr: String,
        file: PathBuf,
    },
    #[error(
        "the calibration program failed ({what}, {status}): {stderr}; it is {}", program.display()
    )]
    Program {
        what: String,
        status: String,
        stderr: String,
        program: PathBuf,
    },
    /// An ncu pass did not give the records of its kernels.
    #[error(
        "ncu could not profile the calibration kernels ({pass} pass): {errors}; the run directory \
         {} keeps its logs", run_dir.display()
    )]
    Profile {
        pass: &'static str,
        errors: String,
        run_dir: PathBuf,
    },
    #[error("no cache directory: neither XDG_CACHE_HOME nor HOME is set; pass --cache-dir DIR")]
    NoCacheDir,
    #[error("{action} `{}`: {source}; check that the cache directory is writable (or pass --cache-dir)", path.display())]
    Cache {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Another `polyprof calibrate` of the same device, driver and tool is running.
    #[error(transparent)]
    Busy(#[from] crate::model::error::Error),
    #[error("cancelled")]
    Cancelled,
}

fn missing_list(missing: &[MissingTool]) -> String {
    missing
        .iter()
        .map(|m| format!("\n  - {}: {}", m.tool, m.fix))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_missing_tool_is_named_with_its_fix() {
        let error = CalibrateError::Missing {
            missing: vec![
                MissingTool {
                    tool: "nvcc",
                    fix: "not on PATH; install the CUDA toolkit".into(),
                },
                MissingTool {
                    tool: "ncu",
                    fix: "not on PATH".into(),
                },
            ],
        };
        assert_eq!(
            error.to_string(),
            "cannot calibrate on this machine:\n  - nvcc: not on PATH; install the CUDA \
             toolkit\n  - ncu: not on PATH"
        );
    }
}
