//! NVIDIA's device identity: `nvidia-smi --query-gpu` (index, name, UUID, driver, compute
//! capability) and the CUDA variables that pin a process to one GPU.

use std::collections::BTreeMap;

use crate::model::device::parse_compute_capability;
use crate::profilers::capability::{DeviceIdentityCapability, GpuIdentity, Tool};

const QUERY_GPU: &str = "--query-gpu=index,name,uuid,driver_version,compute_cap";

#[derive(Debug)]
pub struct NvidiaSmi;

impl DeviceIdentityCapability for NvidiaSmi {
    fn tool(&self) -> Tool {
        Tool {
            program: "nvidia-smi",
            what: "an NVIDIA GPU",
            missing: "nvidia-smi is not on PATH, so no GPU can be found; run on a machine with an \
                      NVIDIA GPU and its driver (nvidia-smi comes with the driver)",
        }
    }

    fn query_args(&self, device: Option<&str>) -> Vec<String> {
        let mut args = vec![
            QUERY_GPU.to_string(),
            "--format=csv,noheader,nounits".into(),
        ];
        if let Some(device) = device {
            args.extend(["-i".to_string(), device.to_string()]);
        }
        args
    }

    /// `[N/A]` cells are `None`; a line without an index or a name is skipped.
    fn parse(&self, stdout: &str) -> Vec<GpuIdentity> {
        let cell = |text: &str| {
            let text = text.trim();
            (!text.is_empty() && !text.starts_with('[')).then(|| text.to_string())
        };
        stdout
            .lines()
            .filter_map(|line| {
                let cells: Vec<&str> = line.split(',').collect();
                if cells.len() != 5 {
                    return None;
                }
                Some(GpuIdentity {
                    index: cell(cells[0])?,
                    name: cell(cells[1])?,
                    uuid: cell(cells[2]),
                    driver: cell(cells[3]),
                    compute_capability: parse_compute_capability(cells[4]),
                })
            })
            .collect()
    }

    fn no_compute_capability(&self) -> &'static str {
        "a driver older than R510 lacks `compute_cap`; upgrade the driver"
    }

    /// The UUID pins the same GPU for CUDA as for nvidia-smi (their orders can differ); without
    /// one, the index in PCI order, which is nvidia-smi's.
    fn pin_env(&self, gpu: &GpuIdentity) -> BTreeMap<String, String> {
        match &gpu.uuid {
            Some(uuid) => BTreeMap::from([("CUDA_VISIBLE_DEVICES".to_string(), uuid.clone())]),
            None => BTreeMap::from([
                ("CUDA_VISIBLE_DEVICES".to_string(), gpu.index.clone()),
                ("CUDA_DEVICE_ORDER".to_string(), "PCI_BUS_ID".to_string()),
            ]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_lines_give_the_identity() {
        let text = "0, NVIDIA H200, GPU-4f3c2a1b-0000-1111-2222-333344445555, 580.95.05, 9.0\n\
                    1, NVIDIA H200, [N/A], [N/A], 9.0\n\
                    garbage\n";
        let gpus = NvidiaSmi.parse(text);
        assert_eq!(gpus.len(), 2);
        assert_eq!(
            gpus[0],
            GpuIdentity {
                index: "0".into(),
                name: "NVIDIA H200".into(),
                uuid: Some("GPU-4f3c2a1b-0000-1111-2222-333344445555".into()),
                driver: Some("580.95.05".into()),
                compute_capability: Some((9, 0)),
            }
        );
        assert_eq!(gpus[1].uuid, None);
        assert_eq!(gpus[1].driver, None);
        assert_eq!(
            NvidiaSmi.pin_env(&gpus[1]).get("CUDA_DEVICE_ORDER"),
            Some(&"PCI_BUS_ID".to_string())
        );
        assert_eq!(
            NvidiaSmi.query_args(Some("1")).last(),
            Some(&"1".to_string())
        );
    }
}
