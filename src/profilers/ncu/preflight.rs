//! Can ncu run here? Binary and version, an NVIDIA GPU, and access to the performance counters.
//! The judgement is made by pure functions over file contents and command output, so every case
//! is unit tested; [`run`] only gathers the inputs.

use std::path::Path;
use std::time::Duration;

use super::diagnostics::COUNTER_PERMISSION_FIX;
use crate::model::probe::{Probe, ProbeRequest};
use crate::profilers::Preflight;
use crate::profilers::preflight as shared;

/// Where ncu usually lives when it is installed but not on PATH.
const INSTALL_HINT: &str = "install Nsight Compute (part of the CUDA toolkit) and put it on PATH, \
e.g. `export PATH=/usr/local/cuda/bin:$PATH` or `/opt/nvidia/nsight-compute/<version>`";

/// `Version 2025.3.1.0 (build 36398880) (public-release)` → `2025.3.1.0`.
pub fn parse_version(output: &str) -> Option<String> {
    output.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("Version ")?;
        rest.split_whitespace().next().map(str::to_string)
    })
}

/// GPUs named by `nvidia-smi -L` (`GPU 0: NVIDIA H200 (UUID: GPU-…)`).
pub fn parse_nvidia_smi_list(output: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("GPU ")?;
            let (_, name) = rest.split_once(": ")?;
            Some(
                name.split(" (UUID")
                    .next()
                    .unwrap_or(name)
                    .trim()
                    .to_string(),
            )
        })
        .collect()
}

/// `Model: NVIDIA H200` from `/proc/driver/nvidia/gpus/<bus>/information`.
pub fn parse_gpu_information(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "Model").then(|| value.trim().to_string())
    })
}

/// What the driver and the process credentials say about counter access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CounterAccess {
    /// Allowed, with why.
    Allowed(String),
    /// Denied, with the fix.
    Denied(String),
    /// The driver's setting could not be read (e.g. a container without /proc/driver/nvidia).
    Unknown(String),
}

/// `RmProfilingAdminOnly: 1` in `/proc/driver/nvidia/params`.
pub fn admin_only(params: &str) -> Option<bool> {
    params.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "RmProfilingAdminOnly").then(|| value.trim() == "1")
    })
}

/// Effective uid and capability mask from `/proc/self/status`.
pub fn credentials(status: &str) -> (Option<u32>, Option<u64>) {
    let mut uid = None;
    let mut caps = None;
    for line in status.lines() {
        if let Some(rest) = line.strip_prefix("Uid:") {
            // Real, effective, saved, filesystem.
            uid = rest.split_whitespace().nth(1).and_then(|v| v.parse().ok());
        } else if let Some(rest) = line.strip_prefix("CapEff:") {
            caps = u64::from_str_radix(rest.trim(), 16).ok();
        }
    }
    (uid, caps)
}

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;

/// Decide counter access from the driver's params file and the process status file.
pub fn counter_access(params: Option<&str>, status: Option<&str>) -> CounterAccess {
    let Some(params) = params else {
        return CounterAccess::Unknown(
            "cannot read /proc/driver/nvidia/params, so whether profiling is restricted to \
             admins is unknown; if ncu fails with ERR_NVGPUCTRPERM: "
                .to_string()
                + COUNTER_PERMISSION_FIX,
        );
    };
    match admin_only(params) {
        None => CounterAccess::Unknown(
            "RmProfilingAdminOnly is not in /proc/driver/nvidia/params".to_string(),
        ),
        Some(false) => CounterAccess::Allowed(
            "the driver lets every user read performance counters (RmProfilingAdminOnly: 0)"
                .to_string(),
        ),
        Some(true) => {
            let (uid, caps) = status.map(credentials).unwrap_or((None, None));
            let has = |bit: u32| caps.is_some_and(|c| c & (1u64 << bit) != 0);
            if uid == Some(0) && has(CAP_SYS_ADMIN) {
                CounterAccess::Allowed("running as root".to_string())
            } else if has(CAP_SYS_ADMIN) {
                CounterAccess::Allowed("the process has CAP_SYS_ADMIN".to_string())
            } else if has(CAP_PERFMON) {
                CounterAccess::Allowed(
                    "the process has CAP_PERFMON (enough from driver R565 on)".to_string(),
                )
            } else {
                CounterAccess::Denied(format!(
                    "performance counters are restricted to admins (RmProfilingAdminOnly: 1) \
                     and this process is neither root nor has CAP_SYS_ADMIN; ncu would fail \
                     with ERR_NVGPUCTRPERM. Fix: {COUNTER_PERMISSION_FIX}"
                ))
            }
        }
    }
}

/// No NVIDIA GPU is visible to this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "no NVIDIA GPU found (/proc/driver/nvidia/gpus is empty or missing and `nvidia-smi -L` lists \
     none); check that the NVIDIA driver is loaded, and in a container pass the GPU \
     (`--gpus all` or the CDI device)"
)]
pub struct NoNvidiaGpu;

/// Whether an NVIDIA GPU is present: entries under /proc/driver/nvidia/gpus, else `nvidia-smi -L`.
pub fn gpu_present(proc_gpus: &[String], smi_list: Option<&str>) -> Result<String, NoNvidiaGpu> {
    if !proc_gpus.is_empty() {
        return Ok(proc_gpus.join(", "));
    }
    if let Some(list) = smi_list {
        let names = parse_nvidia_smi_list(list);
        if !names.is_empty() {
            return Ok(names.join(", "));
        }
    }
    Err(NoNvidiaGpu)
}

/// Run a short command through the probe; its stdout when it finished in time.
pub fn run_short(
    probe: &dyn Probe,
    program: &Path,
    args: &[&str],
    limit: Duration,
) -> Option<String> {
    let output = probe.run(&ProbeRequest::new(program, args, limit)).ok()?;
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// GPU model names from /proc/driver/nvidia/gpus/*/information.
pub fn proc_gpu_models(probe: &dyn Probe) -> Vec<String> {
    let root = Path::new("/proc/driver/nvidia/gpus");
    let mut models: Vec<String> = probe
        .list_dir(root)
        .into_iter()
        .map(|entry| {
            probe
                .read_text(&root.join(&entry).join("information"))
                .and_then(|text| parse_gpu_information(&text))
                .unwrap_or(entry)
        })
        .collect();
    models.sort();
    models
}

/// The full preflight for the ncu executable `binary`.
pub fn run(probe: &dyn Probe, binary: &str) -> Preflight {
    let mut preflight = Preflight::new("ncu");
    let found = probe.find_binary(binary);
    preflight.record(
        "binary",
        shared::binary_verdict(binary, found.as_deref(), INSTALL_HINT),
    );
    let Some(path) = found else {
        return preflight.finish();
    };
    preflight.binary = Some(path.clone());
    let version = run_short(probe, &path, &["--version"], Duration::from_secs(20))
        .as_deref()
        .and_then(parse_version);
    match &version {
        Some(version) => preflight.check("version", true, version.clone()),
        None => preflight.check(
            "version",
            false,
            format!(
                "`{} --version` did not print a version; the installation looks broken",
                path.display()
            ),
        ),
    };
    preflight.version = version;
    let smi = probe
        .find_binary("nvidia-smi")
        .and_then(|smi| run_short(probe, &smi, &["-L"], Duration::from_secs(20)));
    match gpu_present(&proc_gpu_models(probe), smi.as_deref()) {
        Ok(gpus) => preflight.check("gpu", true, gpus),
        Err(reason) => preflight.check("gpu", false, reason.to_string()),
    };
    let params = probe.read_text(Path::new("/proc/driver/nvidia/params"));
    let status = probe.read_text(Path::new("/proc/self/status"));
    match counter_access(params.as_deref(), status.as_deref()) {
        CounterAccess::Allowed(why) => preflight.check("counters", true, why),
        CounterAccess::Denied(fix) => preflight.check("counters", false, fix),
        // Unknown is not a failure: inside containers the file is often hidden while access works.
        CounterAccess::Unknown(note) => preflight.check("counters", true, note),
    };
    preflight.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NON_ROOT: &str =
        "Name:\tpolyprof\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n";
    const ROOT: &str = "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n";
    const CONTAINER_ROOT_NO_ADMIN: &str = "Uid:\t0\t0\t0\t0\nCapEff:\t00000000a80425fb\n";
    const SYS_ADMIN: &str = "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000200000\n";
    const PERFMON: &str = "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000004000000000\n";

    #[test]
    fn version_and_gpu_listing() {
        let out = "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\nVersion 2025.3.1.0 (build 36398880) (public-release)\n";
        assert_eq!(parse_version(out).as_deref(), Some("2025.3.1.0"));
        assert_eq!(parse_version("garbage"), None);
        let smi = "GPU 0: NVIDIA H200 (UUID: GPU-1234)\nGPU 1: NVIDIA H200 (UUID: GPU-5678)\n";
        assert_eq!(
            parse_nvidia_smi_list(smi),
            vec!["NVIDIA H200", "NVIDIA H200"]
        );
        assert_eq!(
            parse_gpu_information("Model: \t\t NVIDIA H200\nIRQ:   42\n").as_deref(),
            Some("NVIDIA H200")
        );
        assert!(gpu_present(&[], Some(smi)).is_ok());
        let err = gpu_present(&[], Some("")).unwrap_err();
        assert!(err.to_string().contains("--gpus all"), "{err}");
        assert!(gpu_present(&["NVIDIA H200".into()], None).is_ok());
    }

    #[test]
    fn counter_access_follows_driver_setting_and_credentials() {
        let restricted = "EnableMSI: 1\nRmProfilingAdminOnly: 1\n";
        let open = "RmProfilingAdminOnly: 0\n";
        assert!(matches!(
            counter_access(Some(open), Some(NON_ROOT)),
            CounterAccess::Allowed(_)
        ));
        assert!(matches!(
            counter_access(Some(restricted), Some(ROOT)),
            CounterAccess::Allowed(_)
        ));
        assert!(matches!(
            counter_access(Some(restricted), Some(SYS_ADMIN)),
            CounterAccess::Allowed(_)
        ));
        assert!(matches!(
            counter_access(Some(restricted), Some(PERFMON)),
            CounterAccess::Allowed(_)
        ));
        for status in [NON_ROOT, CONTAINER_ROOT_NO_ADMIN] {
            let CounterAccess::Denied(fix) = counter_access(Some(restricted), Some(status)) else {
                panic!("{status} must be denied");
            };
            for needle in [
                "ERR_NVGPUCTRPERM",
                "NVreg_RestrictProfilingToAdminUsers=0",
                "--cap-add SYS_ADMIN",
            ] {
                assert!(fix.contains(needle), "{needle} missing from {fix}");
            }
        }
        assert!(matches!(
            counter_access(None, Some(ROOT)),
            CounterAccess::Unknown(_)
        ));
        assert!(matches!(
            counter_access(Some("x: 1"), Some(ROOT)),
            CounterAccess::Unknown(_)
        ));
    }
}
