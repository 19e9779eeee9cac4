//! The pool's devices: what `--devices` asks for, or what discovery finds on this host
//! (through the probe runner), else CPU slots.

use crate::model::error::{Error, Result};
use crate::pipeline::probe::HostProbe;
use crate::profilers::devices::{Device, discover};
use crate::profilers::registry::Vendor;

/// What `--devices` said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    /// The GPUs discovery finds; CPU slots when there are none.
    #[default]
    Auto,
    /// CPU slots only (`cpu`).
    Cpu,
    /// These GPU indices (`0,1`, `amd:0,1`); the vendor, when not given, is the discovered
    /// GPUs' (NVIDIA when none is found, so a pool can be forced on any host).
    Gpus {
        vendor: Option<Vendor>,
        indices: Vec<String>,
    },
}

impl std::str::FromStr for DeviceChoice {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("cpu") {
            return Ok(DeviceChoice::Cpu);
        }
        if text.eq_ignore_ascii_case("auto") {
            return Ok(DeviceChoice::Auto);
        }
        let (vendor, list) = match text.split_once(':') {
            Some((v, list)) => {
                let vendor = match v.trim().to_ascii_lowercase().as_str() {
                    "nvidia" | "cuda" => Vendor::Nvidia,
                    "amd" | "rocm" | "hip" => Vendor::Amd,
                    "intel" | "ze" => Vendor::Intel,
                    other => {
                        return Err(Error::UnknownValue {
                            what: "device vendor",
                            value: other.to_string(),
                            valid: "nvidia, amd, intel (or `cpu`)".to_string(),
                        });
                    }
                };
                (Some(vendor), list)
            }
            None => (None, text),
        };
        let indices: Vec<String> = list
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if indices.iter().any(|i| i.eq_ignore_ascii_case("cpu")) {
            return Err(Error::invalid(
                "--devices",
                format!(
                    "`{text}` mixes `cpu` with GPU indices; give `cpu` alone (a CPU pool, sized by --jobs) or GPU indices alone"
                ),
            ));
        }
        let bad = indices
            .iter()
            .find(|i| !i.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        if indices.is_empty() || bad.is_some() {
            return Err(Error::invalid(
                "--devices",
                format!(
                    "`{text}`: give device indices separated by commas (`0,1`), optionally after a vendor (`amd:0,1`), or `cpu`"
                ),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(dup) = indices.iter().find(|i| !seen.insert(*i)) {
            return Err(Error::invalid(
                "--devices",
                format!("`{text}` names device {dup} twice; each device runs one job at a time"),
            ));
        }
        Ok(DeviceChoice::Gpus { vendor, indices })
    }
}

/// The CPU slots of a CPU pool: `--jobs N`, else the CPUs this process may use.
pub fn cpu_slots(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// The pool's devices for `choice` (discovery runs off the async workers).
pub async fn pool_devices(choice: &DeviceChoice, jobs: Option<usize>) -> Vec<Device> {
    let cpu = || (0..cpu_slots(jobs)).map(Device::cpu).collect::<Vec<_>>();
    match choice {
        DeviceChoice::Cpu => cpu(),
        DeviceChoice::Auto => {
            let found = discovered().await;
            if found.is_empty() { cpu() } else { found }
        }
        DeviceChoice::Gpus { vendor, indices } => {
            let vendor = match vendor {
                Some(v) => *v,
                None => discovered()
                    .await
                    .iter()
                    .find_map(Device::vendor)
                    .unwrap_or(Vendor::Nvidia),
            };
            indices
                .iter()
                .map(|i| Device::gpu(vendor, i.clone(), None))
                .collect()
        }
    }
}

async fn discovered() -> Vec<Device> {
    tokio::task::spawn_blocking(|| discover(&HostProbe::new()))
        .await
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_lists_parse() {
        assert_eq!("cpu".parse::<DeviceChoice>().unwrap(), DeviceChoice::Cpu);
        assert_eq!(
            "0, 1".parse::<DeviceChoice>().unwrap(),
            DeviceChoice::Gpus {
                vendor: None,
                indices: vec!["0".into(), "1".into()]
            }
        );
        assert_eq!(
            "amd:2".parse::<DeviceChoice>().unwrap(),
            DeviceChoice::Gpus {
                vendor: Some(Vendor::Amd),
                indices: vec!["2".into()]
            }
        );
        for bad in ["", "0,0", "tpu:0", "0;1", ","] {
            assert!(bad.parse::<DeviceChoice>().is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn forced_and_cpu_pools() {
        let cpu = pool_devices(&DeviceChoice::Cpu, Some(3)).await;
        assert_eq!(
            cpu.iter().map(Device::name).collect::<Vec<_>>(),
            ["cpu:0", "cpu:1", "cpu:2"]
        );
        let gpus = pool_devices(&"intel:0,1".parse().unwrap(), None).await;
        assert_eq!(gpus[1].name(), "intel:1");
    }
}
