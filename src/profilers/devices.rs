//! Vendor knowledge about the devices a batch pool runs on, kept pure: how each vendor's GPUs
//! are found (through [`Probe`] answers), the variable that pins a process to one of them, and
//! how a failure that is the device's (not the job's) reads in a run's output.

use std::path::Path;
use std::time::Duration;

use crate::model::probe::{Probe, ProbeRequest};
use crate::profilers::ncu::preflight::parse_nvidia_smi_list;
use crate::profilers::registry::Vendor;

/// What kind of slot a pool device is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// A CPU slot (`--jobs N` of them): nothing is pinned.
    Cpu,
    Gpu(Vendor),
}

impl DeviceKind {
    /// `cpu`, `nvidia`, `amd`, `intel`, `apple`.
    pub fn key(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Gpu(v) => v.key(),
        }
    }
}

/// One slot of the pool: a GPU (pinned through its vendor's visibility variable) or a CPU slot.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Device {
    pub kind: DeviceKind,
    /// What the visibility variable gets: the index the vendor's runtime counts in (`0`).
    pub index: String,
    /// Model name, when discovery said it.
    pub model: Option<String>,
}

impl Device {
    pub fn cpu(slot: usize) -> Self {
        Device {
            kind: DeviceKind::Cpu,
            index: slot.to_string(),
            model: None,
        }
    }

    pub fn gpu(vendor: Vendor, index: impl Into<String>, model: Option<String>) -> Self {
        Device {
            kind: DeviceKind::Gpu(vendor),
            index: index.into(),
            model,
        }
    }

    /// `nvidia:0`, `cpu:1`: the name in the index, the progress line and messages.
    pub fn name(&self) -> String {
        format!("{}:{}", self.kind.key(), self.index)
    }

    pub fn vendor(&self) -> Option<Vendor> {
        match self.kind {
            DeviceKind::Gpu(v) => Some(v),
            DeviceKind::Cpu => None,
        }
    }

    /// The variables that pin a process to this device (none for a CPU slot).
    pub fn pin_env(&self) -> Vec<(String, String)> {
        match self.kind {
            DeviceKind::Cpu => Vec::new(),
            DeviceKind::Gpu(Vendor::Nvidia) => {
                vec![("CUDA_VISIBLE_DEVICES".into(), self.index.clone())]
            }
            // ROCR_VISIBLE_DEVICES filters at the ROCr level (what rocprofv3, HIP and OpenCL
            // all sit on); HIP then counts from 0 among what is left, so HIP_VISIBLE_DEVICES
            // must be 0, not the host index, or the process would see no device at all.
            DeviceKind::Gpu(Vendor::Amd) => vec![
                ("ROCR_VISIBLE_DEVICES".into(), self.index.clone()),
                ("HIP_VISIBLE_DEVICES".into(), "0".into()),
            ],
            DeviceKind::Gpu(Vendor::Intel) => {
                vec![("ZE_AFFINITY_MASK".into(), self.index.clone())]
            }
            // One GPU per Mac, nothing to pin.
            DeviceKind::Gpu(Vendor::Apple) => Vec::new(),
        }
    }

    /// Whether a job needing `vendor` (`None`: any slot) can run here.
    pub fn fits(&self, vendor: Option<Vendor>) -> bool {
        vendor.is_none() || self.vendor() == vendor
    }
}

/// The variable a vendor's runtime reads to choose visible devices (the first one pinned).
pub fn visibility_variable(vendor: Vendor) -> Option<&'static str> {
    match vendor {
        Vendor::Nvidia => Some("CUDA_VISIBLE_DEVICES"),
        Vendor::Amd => Some("ROCR_VISIBLE_DEVICES"),
        Vendor::Intel => Some("ZE_AFFINITY_MASK"),
        Vendor::Apple => None,
    }
}

/// The device a process was already given by its environment (a Slurm task's
/// `CUDA_VISIBLE_DEVICES`): the first vendor whose variable is set, with its value.
pub fn device_from_env(env: impl Fn(&str) -> Option<String>) -> Option<Device> {
    [Vendor::Nvidia, Vendor::Amd, Vendor::Intel]
        .into_iter()
        .find_map(|vendor| {
            let name = visibility_variable(vendor)?;
            let value = env(name).filter(|v| !v.trim().is_empty())?;
            Some(Device::gpu(vendor, value.trim(), None))
        })
}

/// The probe that lists NVIDIA GPUs.
pub fn nvidia_probe(nvidia_smi: &Path) -> ProbeRequest {
    ProbeRequest::new(nvidia_smi, &["-L"], Duration::from_secs(20))
}

/// NVIDIA GPUs from `nvidia-smi -L` output, indexed in its order (the CUDA runtime's order
/// under `CUDA_DEVICE_ORDER=PCI_BUS_ID`, nvidia-smi's own).
pub fn parse_nvidia_devices(output: &str) -> Vec<Device> {
    parse_nvidia_smi_list(output)
        .into_iter()
        .enumerate()
        .map(|(i, model)| Device::gpu(Vendor::Nvidia, i.to_string(), Some(model)))
        .collect()
}

/// GPUs of the DRM render nodes, from `(render node name, PCI vendor id)` pairs as sysfs has
/// them (`renderD128`, `0x1002`): AMD (`0x1002`) and Intel (`0x8086`) GPUs, each vendor counted
/// from 0 in render-node order (what ROCr and Level Zero enumerate on one-GPU-per-node hosts).
pub fn parse_render_nodes(nodes: &[(String, String)]) -> Vec<Device> {
    let mut sorted: Vec<&(String, String)> = nodes.iter().collect();
    sorted.sort_by_key(|(name, _)| {
        name.trim_start_matches("renderD")
            .parse::<u32>()
            .unwrap_or(u32::MAX)
    });
    let mut counts = [0usize; 2];
    sorted
        .into_iter()
        .filter_map(|(_, vendor_id)| {
            let (vendor, slot) = match vendor_id.trim().to_ascii_lowercase().as_str() {
                "0x1002" => (Vendor::Amd, 0),
                "0x8086" => (Vendor::Intel, 1),
                _ => return None,
            };
            let index = counts[slot];
            counts[slot] += 1;
            Some(Device::gpu(vendor, index.to_string(), None))
        })
        .collect()
}

/// Every GPU the probe finds: NVIDIA through `nvidia-smi -L`, AMD and Intel through the DRM
/// render nodes' PCI vendor ids in sysfs. Empty when there is none (a CPU pool, then).
pub fn discover(probe: &dyn Probe) -> Vec<Device> {
    let mut devices = Vec::new();
    if let Some(smi) = probe.find_binary("nvidia-smi")
        && let Ok(out) = probe.run(&nvidia_probe(&smi))
        && out.success()
    {
        devices.extend(parse_nvidia_devices(&String::from_utf8_lossy(&out.stdout)));
    }
    let drm = Path::new("/sys/class/drm");
    let nodes: Vec<(String, String)> = probe
        .list_dir(drm)
        .into_iter()
        .filter(|name| name.starts_with("renderD"))
        .filter_map(|name| {
            let vendor = probe.read_text(&drm.join(&name).join("device/vendor"))?;
            Some((name, vendor))
        })
        .collect();
    devices.extend(parse_render_nodes(&nodes));
    devices
}

/// Output of a failed run that says the device, not the job, is at fault: no device visible,
/// the device busy or lost, ECC errors, a fallen-off-the-bus GPU. Matched case-insensitively
/// on whole lines of stderr, stdout and the run's errors.
pub const DEVICE_ERROR_PATTERNS: &[&str] = &[
    // NVIDIA
    "cuda_error_no_device",
    "no cuda-capable device is detected",
    "all cuda-capable devices are busy or unavailable",
    "cudaerrordevicesunavailable",
    "cuda_error_ecc_uncorrectable",
    "uncorrectable ecc error",
    "gpu is lost",
    "fallen off the bus",
    "unable to determine the device handle for gpu",
    "the device is busy",
    "device busy",
    "cuda_error_system_not_ready",
    // AMD
    "hiperrornodevice",
    "no hip gpus are available",
    "hsa_status_error_out_of_resources",
    "amdgpu: gpu reset",
    // Intel
    "ze_result_error_device_lost",
    "ur_result_error_device_lost",
    "cl_device_not_available",
];

/// The first line of `lines` that reads as a device-level failure, trimmed to 200 characters;
/// `extra` are caller-given substrings (`--device-error TEXT`) checked the same way.
pub fn device_failure<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    extra: &[String],
) -> Option<String> {
    let extra: Vec<String> = extra.iter().map(|e| e.to_ascii_lowercase()).collect();
    lines.into_iter().find_map(|line| {
        let lower = line.to_ascii_lowercase();
        let hit = DEVICE_ERROR_PATTERNS.iter().any(|p| lower.contains(p))
            || extra
                .iter()
                .any(|p| !p.is_empty() && lower.contains(p.as_str()));
        hit.then(|| line.trim().chars().take(200).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_list_gives_indexed_devices() {
        let out = "GPU 0: NVIDIA H200 (UUID: GPU-1)\nGPU 1: NVIDIA H200 (UUID: GPU-2)\n";
        let devices = parse_nvidia_devices(out);
        assert_eq!(devices.len(), 2);
        assert_eq!(devices[1].name(), "nvidia:1");
        assert_eq!(devices[1].model.as_deref(), Some("NVIDIA H200"));
        assert_eq!(
            devices[1].pin_env(),
            [("CUDA_VISIBLE_DEVICES".to_string(), "1".to_string())]
        );
    }

    #[test]
    fn render_nodes_count_per_vendor_in_node_order() {
        let nodes = [
            ("renderD129".to_string(), "0x1002\n".to_string()),
            ("renderD128".to_string(), "0x8086".to_string()),
            ("renderD130".to_string(), "0x1002".to_string()),
            ("renderD131".to_string(), "0x1af4".to_string()),
        ];
        let names: Vec<_> = parse_render_nodes(&nodes)
            .iter()
            .map(Device::name)
            .collect();
        assert_eq!(names, ["intel:0", "amd:0", "amd:1"]);
        let amd = Device::gpu(Vendor::Amd, "1", None);
        assert_eq!(
            amd.pin_env(),
            [
                ("ROCR_VISIBLE_DEVICES".to_string(), "1".to_string()),
                ("HIP_VISIBLE_DEVICES".to_string(), "0".to_string())
            ]
        );
        let intel = Device::gpu(Vendor::Intel, "0", None);
        assert_eq!(intel.pin_env()[0].0, "ZE_AFFINITY_MASK");
        assert!(Device::cpu(0).pin_env().is_empty());
    }

    #[test]
    fn a_slurm_task_device_comes_from_its_environment() {
        let env = |name: &str| (name == "CUDA_VISIBLE_DEVICES").then(|| "3".to_string());
        assert_eq!(device_from_env(env).unwrap().name(), "nvidia:3");
        assert_eq!(device_from_env(|_| None), None);
        assert_eq!(device_from_env(|_| Some(" ".into())), None);
    }

    #[test]
    fn device_failures_are_recognized_and_job_failures_are_not() {
        let lines = [
            "Traceback (most recent call last):",
            "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable",
        ];
        let hit = device_failure(lines, &[]).unwrap();
        assert!(hit.starts_with("RuntimeError"), "{hit}");
        assert!(device_failure(["hipErrorNoDevice: no ROCm-capable device"], &[]).is_some());
        for job_fault in [
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "AssertionError: max abs diff 0.5",
            "torch.OutOfMemoryError: CUDA out of memory",
        ] {
            assert_eq!(device_failure([job_fault], &[]), None, "{job_fault}");
        }
        assert!(device_failure(["FAKE-GPU-DEAD"], &["fake-gpu-dead".into()]).is_some());
        assert_eq!(device_failure(["anything"], &[String::new()]), None);
    }

    #[test]
    fn cpu_slots_take_any_job_and_gpus_their_vendor() {
        let gpu = Device::gpu(Vendor::Nvidia, "0", None);
        assert!(gpu.fits(None) && gpu.fits(Some(Vendor::Nvidia)));
        assert!(!gpu.fits(Some(Vendor::Amd)));
        assert!(Device::cpu(0).fits(None) && !Device::cpu(0).fits(Some(Vendor::Nvidia)));
    }
}
