//! Which GPU is calibrated: its identity from the vendor's device tool (`profilers::device_tool`: name,
//! UUID, driver, compute capability: the cache key and the architecture to compile for) and its
//! sizes from the calibration program's own `info` (SMs, L2, memory: the plan's amounts). The
//! parser of `info` is pure.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::error::CalibrateError;
use crate::model::device::parse_compute_capability;
use crate::model::probe::{ProbeError, ProbeRequest};
use crate::pipeline::probe::run_probe_async;
use crate::profilers::device_tool::{DeviceTool, GpuIdentity};
use crate::results::calibration_kernels::DeviceFacts;

const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// What the calibration program's `info` printed (`key=value` lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramInfo {
    pub name: String,
    pub uuid: Option<String>,
    pub facts: DeviceFacts,
}

/// Parse the program's `info` output.
pub fn parse_program_info(text: &str) -> Result<ProgramInfo, String> {
    let value = |key: &str| {
        text.lines()
            .find_map(|line| line.trim().strip_prefix(key)?.strip_prefix('='))
            .map(str::trim)
            .ok_or_else(|| format!("`{key}` is missing"))
    };
    let number = |key: &str| -> Result<u64, String> {
        let text = value(key)?;
        text.parse()
            .map_err(|_| format!("`{key}={text}` is not a number"))
    };
    let cc = value("compute_capability")?;
    Ok(ProgramInfo {
        name: value("name")?.to_string(),
        uuid: value("uuid").ok().map(str::to_string),
        facts: DeviceFacts {
            compute_capability: parse_compute_capability(cc)
                .ok_or_else(|| format!("`compute_capability={cc}` is not MAJOR.MINOR"))?,
            sm_count: number("sm_count")?,
            l2_bytes: number("l2_bytes")?,
            memory_bytes: number("memory_bytes")?,
        },
    })
}

/// The first GPU `CUDA_VISIBLE_DEVICES` names (an index or a UUID), as the eval's readings take it.
pub fn visible_device() -> Option<String> {
    std::env::var("CUDA_VISIBLE_DEVICES")
        .ok()
        .and_then(|v| v.split(',').next().map(|s| s.trim().to_string()))
        .filter(|s| !s.is_empty())
}

/// The GPU `device` (an index or a UUID, as the identity tool takes it; the first GPU when
/// `None`) as the backend's identity tool (`tool`, found on PATH) names it.
pub async fn identify(
    identity: &dyn DeviceTool,
    tool: &Path,
    device: Option<&str>,
    cancel: &CancellationToken,
) -> Result<GpuIdentity, CalibrateError> {
    let mut request = ProbeRequest::new(tool, &[], PROBE_TIMEOUT);
    request.args = identity.identity_args(device);
    let command = request.shown();
    let output = run_blocking(request, cancel).await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.success() {
        return Err(CalibrateError::Device {
            command,
            why: format!(
                "{}: {}{}",
                output.status_text(),
                stdout.trim(),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    match identity.parse_identity(&stdout).into_iter().next() {
        Some(gpu) if gpu.compute_capability.is_some() => Ok(gpu),
        Some(gpu) => Err(CalibrateError::Device {
            command,
            why: format!(
                "it gives no compute capability for {} ({})",
                gpu.name,
                identity.no_compute_capability()
            ),
        }),
        None => Err(CalibrateError::Device {
            command,
            why: format!("it listed no GPU: `{}`", stdout.trim()),
        }),
    }
}

/// Run the compiled program's `info` on the GPU chosen by `env` (`CUDA_VISIBLE_DEVICES`).
pub async fn program_info(
    program: &Path,
    env: &std::collections::BTreeMap<String, String>,
    cancel: &CancellationToken,
) -> Result<ProgramInfo, CalibrateError> {
    let mut request = ProbeRequest::new(program, &["info"], PROBE_TIMEOUT);
    request.env = env.clone();
    let output = run_blocking(request, cancel).await?;
    let failed = |why: String| CalibrateError::Program {
        what: "info".into(),
        status: output.status_text(),
        stderr: why,
        program: program.to_path_buf(),
    };
    if !output.success() {
        return Err(failed(
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ));
    }
    parse_program_info(&String::from_utf8_lossy(&output.stdout)).map_err(failed)
}

/// [`run_probe_async`]; a probe that cannot run is the tool's failure.
pub(super) async fn run_blocking(
    request: ProbeRequest,
    cancel: &CancellationToken,
) -> Result<crate::model::probe::ProbeOutput, CalibrateError> {
    let program = request.program.clone();
    let shown = request.shown();
    match run_probe_async(request, cancel).await {
        Ok(output) => Ok(output),
        Err(ProbeError::Cancelled { .. }) => Err(CalibrateError::Cancelled),
        Err(error) => Err(CalibrateError::Program {
            what: shown,
            status: "did not run".into(),
            stderr: error.to_string(),
            program,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_info_gives_the_sizes_and_says_what_is_missing() {
        let text = "name=NVIDIA H200\ncompute_capability=9.0\nsm_count=132\nl2_bytes=52428800\n\
                    memory_bytes=150011101184\nuuid=GPU-4f3c2a1b-0000-1111-2222-333344445555\n";
        let info = parse_program_info(text).unwrap();
        assert_eq!(info.name, "NVIDIA H200");
        assert_eq!(info.facts.sm_count, 132);
        assert_eq!(info.facts.compute_capability, (9, 0));
        assert_eq!(
            info.uuid.as_deref(),
            Some("GPU-4f3c2a1b-0000-1111-2222-333344445555")
        );
        let err = parse_program_info("name=x\ncompute_capability=9.0\n").unwrap_err();
        assert!(err.contains("sm_count"), "{err}");
        let err = parse_program_info(&text.replace("132", "many")).unwrap_err();
        assert!(err.contains("sm_count=many"), "{err}");
    }
}
