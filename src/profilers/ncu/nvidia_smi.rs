//! `nvidia-smi`, NVIDIA's device tool (`profilers::device_tool`): the GPU's identity (index,
//! name, UUID, driver, compute capability), its conditions (clocks, temperature, power, clock
//! event reasons), the compute processes on it, a health query, and the CUDA variables that pin
//! a process to one GPU.

use std::collections::BTreeMap;

use crate::model::device::parse_compute_capability;
use crate::profilers::device_tool::{DeviceTool, GpuIdentity, GpuReading, Tool};

const QUERY_IDENTITY: &str = "--query-gpu=index,name,uuid,driver_version,compute_cap";
const QUERY_READING: &str = "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,clocks_event_reasons.active,uuid,name,driver_version";
const QUERY_HEALTH: &str = "--query-gpu=index,name,pci.bus_id,memory.used,temperature.gpu";
const CSV: &str = "--format=csv,noheader,nounits";

/// Clock event reasons that slow the GPU, by bit (`nvmlClocksEventReasons`). Idle (0x1), the
/// application clock setting (0x2) and the display clock setting (0x100) are left out: they
/// say nothing about a slowed measurement.
const THROTTLE_BITS: [(u64, &str); 5] = [
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
];

/// What nvidia-smi writes in the fields of a broken GPU while still exiting 0.
const BROKEN_MARKERS: [&str; 3] = ["ERR!", "requires reset", "Unknown Error"];

#[derive(Debug)]
pub struct NvidiaSmi;

/// `-i DEVICE` (nvidia-smi counts every GPU whatever CUDA_VISIBLE_DEVICES says) then the query.
fn on_device(device: &str, query: &str, format: &str) -> Vec<String> {
    ["-i", device, query, format]
        .iter()
        .map(ToString::to_string)
        .collect()
}

impl DeviceTool for NvidiaSmi {
    fn tool(&self) -> Tool {
        Tool {
            program: "nvidia-smi",
            what: "an NVIDIA GPU",
            missing: "nvidia-smi is not on PATH, so no GPU can be found; run on a machine with an \
                      NVIDIA GPU and its driver (nvidia-smi comes with the driver)",
        }
    }

    fn identity_args(&self, device: Option<&str>) -> Vec<String> {
        let mut args = vec![QUERY_IDENTITY.to_string(), CSV.into()];
        if let Some(device) = device {
            args.extend(["-i".to_string(), device.to_string()]);
        }
        args
    }

    /// `[N/A]` cells are `None`; a line without an index or a name is skipped.
    fn parse_identity(&self, stdout: &str) -> Vec<GpuIdentity> {
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

    fn reading_args(&self, device: &str) -> Vec<String> {
        on_device(device, QUERY_READING, CSV)
    }

    fn parse_reading(&self, stdout: &str) -> Option<GpuReading> {
        parse_reading_line(stdout.lines().find(|l| !l.trim().is_empty())?)
    }

    fn processes_args(&self, device: &str) -> Vec<String> {
        on_device(device, "--query-compute-apps=pid", CSV)
    }

    fn parse_processes(&self, stdout: &str) -> Vec<u32> {
        stdout
            .lines()
            .filter_map(|line| line.trim().parse::<u32>().ok())
            .collect()
    }

    fn health_args(&self, device: &str) -> Vec<String> {
        on_device(device, QUERY_HEALTH, "--format=csv,noheader")
    }

    fn broken(&self, stdout: &str) -> Option<String> {
        BROKEN_MARKERS
            .iter()
            .any(|m| stdout.contains(m))
            .then(|| "it reports the GPU broken".to_string())
    }
}

/// A cell's text; empty and `[N/A]`-style cells are `None`.
fn cell(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty() && !text.starts_with('[')).then(|| text.to_string())
}

/// One line of the reading query (`[N/A]` and unparsable cells become `None`).
fn parse_reading_line(line: &str) -> Option<GpuReading> {
    let cells: Vec<&str> = line.split(',').map(str::trim).collect();
    if cells.len() < 9 {
        return None;
    }
    let number = |cell: &str| cell.parse::<f64>().ok().filter(|v| v.is_finite());
    Some(GpuReading {
        sm_clock_mhz: number(cells[0]),
        mem_clock_mhz: number(cells[1]),
        max_sm_clock_mhz: number(cells[2]),
        temperature_c: number(cells[3]),
        power_w: number(cells[4]),
        throttle_reasons: throttle_reasons(cells[5]),
        uuid: cell(cells[6]),
        // A GPU name has no comma; the driver version is the last cell.
        name: cell(&cells[7..cells.len() - 1].join(",")),
        driver: cell(cells[cells.len() - 1]),
    })
}

/// The slowing reasons set in a `clocks_event_reasons.active` bitmask (`0x…`).
fn throttle_reasons(mask: &str) -> Vec<String> {
    let mask = mask.trim();
    let bits = mask
        .strip_prefix("0x")
        .or_else(|| mask.strip_prefix("0X"))
        .map_or_else(
            || mask.parse::<u64>().ok(),
            |hex| u64::from_str_radix(hex, 16).ok(),
        );
    let Some(bits) = bits else {
        return Vec::new();
    };
    THROTTLE_BITS
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| name.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_lines_give_the_gpu_and_the_variables_that_pin_it() {
        let text = "0, NVIDIA H200, GPU-4f3c2a1b-0000-1111-2222-333344445555, 580.95.05, 9.0\n\
                    1, NVIDIA H200, [N/A], [N/A], 9.0\n\
                    garbage\n";
        let gpus = NvidiaSmi.parse_identity(text);
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
            NvidiaSmi.identity_args(Some("1")).last(),
            Some(&"1".to_string())
        );
    }

    #[test]
    fn an_idle_h200_reading() {
        let line = "1980, 3201, 1980, 31, 76.12, 0x0000000000000001, GPU-5c3a7e2d-1a2b-4c3d-9e8f-0123456789ab, NVIDIA H200, 570.133.20\n";
        let c = NvidiaSmi.parse_reading(line).unwrap();
        assert_eq!(c.sm_clock_mhz, Some(1980.0));
        assert_eq!(c.mem_clock_mhz, Some(3201.0));
        assert_eq!(c.max_sm_clock_mhz, Some(1980.0));
        assert_eq!(c.temperature_c, Some(31.0));
        assert_eq!(c.power_w, Some(76.12));
        // gpu_idle is not a slowdown.
        assert!(c.throttle_reasons.is_empty());
        assert_eq!(
            c.uuid.as_deref(),
            Some("GPU-5c3a7e2d-1a2b-4c3d-9e8f-0123456789ab")
        );
        assert_eq!(c.name.as_deref(), Some("NVIDIA H200"));
        assert_eq!(c.driver.as_deref(), Some("570.133.20"));
    }

    #[test]
    fn a_throttled_reading_with_missing_power() {
        let line = "1410, 2619, 1980, 87, [N/A], 0x00000000000000A4, GPU-1, NVIDIA H100 80GB HBM3, 535.104.05";
        let reading = NvidiaSmi.parse_reading(line).unwrap();
        assert_eq!(reading.power_w, None);
        assert_eq!(
            reading.throttle_reasons,
            [
                "sw_power_cap",
                "sw_thermal_slowdown",
                "hw_power_brake_slowdown"
            ]
        );
        assert_eq!(reading.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    }

    #[test]
    fn every_slowdown_bit_and_none_of_the_settings() {
        assert_eq!(
            throttle_reasons("0x1ff"),
            [
                "sw_power_cap",
                "hw_slowdown",
                "sw_thermal_slowdown",
                "hw_thermal_slowdown",
                "hw_power_brake_slowdown"
            ]
        );
        assert!(throttle_reasons("0x0000000000000103").is_empty());
        assert_eq!(throttle_reasons("8"), ["hw_slowdown"]);
        assert!(throttle_reasons("Not Supported").is_empty());
    }

    #[test]
    fn short_lines_pid_lists_and_broken_fields() {
        assert!(NvidiaSmi.parse_reading("1980, 3201").is_none());
        assert_eq!(NvidiaSmi.parse_processes("1234\n 5678 \n"), [1234, 5678]);
        assert!(
            NvidiaSmi
                .parse_processes("No running processes found\n")
                .is_empty()
        );
        assert!(
            NvidiaSmi
                .broken("0, NVIDIA H200, [GPU requires reset]")
                .is_some()
        );
        assert!(
            NvidiaSmi
                .broken("0, NVIDIA H200, 00000000:19:00.0, 1 MiB, 30")
                .is_none()
        );
        assert_eq!(NvidiaSmi.health_args("3")[..2], ["-i", "3"]);
    }
}
