//! The GPU's conditions around a timing block, read with `nvidia-smi` from outside both workers
//! (clocks, temperature, power, active clock event reasons, other processes on the GPU).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::eval::evidence::Conditions;
use crate::model::probe::ProbeRequest;
use crate::pipeline::probe::run_probe;

const QUERY_GPU: &str = "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,clocks_event_reasons.active,uuid,name,driver_version";
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

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

/// One `nvidia-smi` reading of the eval's GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuReading {
    pub conditions: Conditions,
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub driver: Option<String>,
}

/// Reads the eval's GPU; remembers when `nvidia-smi` is missing so it is not asked again.
#[derive(Debug, Clone)]
pub struct ConditionsReader {
    /// `-i` of nvidia-smi: the first GPU `CUDA_VISIBLE_DEVICES` names, else 0.
    gpu: String,
    cancel: CancellationToken,
    unavailable: bool,
}

impl ConditionsReader {
    pub fn new(cancel: CancellationToken) -> Self {
        let gpu = std::env::var("CUDA_VISIBLE_DEVICES")
            .ok()
            .and_then(|v| v.split(',').next().map(|s| s.trim().to_string()))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "0".to_string());
        ConditionsReader {
            gpu,
            cancel,
            unavailable: false,
        }
    }

    /// The GPU now; `None` when `nvidia-smi` cannot answer (the audit then says the
    /// conditions check did not run). `workers`: this eval's worker pids, left out of
    /// `other_processes`.
    pub async fn read(&mut self, workers: &[u32]) -> Option<GpuReading> {
        if self.unavailable {
            return None;
        }
        let gpu_args = [
            QUERY_GPU.to_string(),
            "--format=csv,noheader,nounits".into(),
        ];
        let apps_args = [
            "--query-compute-apps=pid".to_string(),
            "--format=csv,noheader,nounits".into(),
        ];
        let gpu = self.query(&gpu_args).await;
        let Some(text) = gpu else {
            self.unavailable = true;
            return None;
        };
        let mut reading = parse_gpu_line(text.lines().find(|l| !l.trim().is_empty())?)?;
        if let Some(apps) = self.query(&apps_args).await {
            reading.conditions.other_processes = parse_pids(&apps)
                .into_iter()
                .filter(|pid| !workers.contains(pid))
                .collect();
        }
        Some(reading)
    }

    async fn query(&self, args: &[String]) -> Option<String> {
        let mut request = ProbeRequest::new("nvidia-smi", &["-i", &self.gpu], PROBE_TIMEOUT);
        request.args.extend(args.iter().cloned());
        let cancel = self.cancel.clone();
        let answered = tokio::task::spawn_blocking(move || run_probe(&request, &cancel))
            .await
            .ok()?;
        match answered {
            Ok(output) if output.success() => Some(String::from_utf8_lossy(&output.stdout).into()),
            Ok(output) => {
                tracing::debug!(status = %output.status_text(), "nvidia-smi failed");
                None
            }
            Err(e) => {
                tracing::debug!(error = %e, "nvidia-smi could not run");
                None
            }
        }
    }
}

/// One line of the `--query-gpu` above (`[N/A]` and unparsable cells become `None`).
pub fn parse_gpu_line(line: &str) -> Option<GpuReading> {
    let cells: Vec<&str> = line.split(',').map(str::trim).collect();
    if cells.len() < 9 {
        return None;
    }
    let number = |cell: &str| cell.parse::<f64>().ok().filter(|v| v.is_finite());
    let text = |cell: &str| (!cell.is_empty() && !cell.starts_with('[')).then(|| cell.to_string());
    Some(GpuReading {
        conditions: Conditions {
            sm_clock_mhz: number(cells[0]),
            mem_clock_mhz: number(cells[1]),
            max_sm_clock_mhz: number(cells[2]),
            temperature_c: number(cells[3]),
            power_w: number(cells[4]),
            throttle_reasons: throttle_reasons(cells[5]),
            other_processes: Vec::new(),
        },
        uuid: text(cells[6]),
        // A GPU name has no comma; the driver version is the last cell.
        name: text(&cells[7..cells.len() - 1].join(",")),
        driver: text(cells[cells.len() - 1]),
    })
}

/// The slowing reasons set in a `clocks_event_reasons.active` bitmask (`0x…`).
pub fn throttle_reasons(mask: &str) -> Vec<String> {
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

/// The pids of `--query-compute-apps=pid` (other lines, such as a "No running processes"
/// note, are skipped).
pub fn parse_pids(text: &str) -> Vec<u32> {
    text.lines()
        .filter_map(|line| line.trim().parse::<u32>().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_h200_line() {
        let line = "1980, 3201, 1980, 31, 76.12, 0x0000000000000001, GPU-5c3a7e2d-1a2b-4c3d-9e8f-0123456789ab, NVIDIA H200, 570.133.20";
        let reading = parse_gpu_line(line).unwrap();
        let c = &reading.conditions;
        assert_eq!(c.sm_clock_mhz, Some(1980.0));
        assert_eq!(c.mem_clock_mhz, Some(3201.0));
        assert_eq!(c.max_sm_clock_mhz, Some(1980.0));
        assert_eq!(c.temperature_c, Some(31.0));
        assert_eq!(c.power_w, Some(76.12));
        // gpu_idle is not a slowdown.
        assert!(c.throttle_reasons.is_empty());
        assert_eq!(
            reading.uuid.as_deref(),
            Some("GPU-5c3a7e2d-1a2b-4c3d-9e8f-0123456789ab")
        );
        assert_eq!(reading.name.as_deref(), Some("NVIDIA H200"));
        assert_eq!(reading.driver.as_deref(), Some("570.133.20"));
    }

    #[test]
    fn a_throttled_line_with_missing_power() {
        let line = "1410, 2619, 1980, 87, [N/A], 0x00000000000000A4, GPU-1, NVIDIA H100 80GB HBM3, 535.104.05";
        let reading = parse_gpu_line(line).unwrap();
        assert_eq!(reading.conditions.power_w, None);
        assert_eq!(
            reading.conditions.throttle_reasons,
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
    fn short_lines_and_pid_lists() {
        assert!(parse_gpu_line("1980, 3201").is_none());
        assert_eq!(parse_pids("1234\n 5678 \n"), [1234, 5678]);
        assert!(parse_pids("No running processes found\n").is_empty());
    }
}
