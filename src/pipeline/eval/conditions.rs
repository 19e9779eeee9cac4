//! The GPU's conditions around a timing block, read with the vendor's device tool
//! (`profilers::device_tool`) from outside both workers (clocks, temperature, power, active
//! slowdown reasons, other processes on the GPU).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::eval::evidence::Conditions;
use crate::model::probe::ProbeRequest;
use crate::pipeline::probe::run_probe;
use crate::profilers::device_tool::DeviceTool;

const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// One reading of the eval's GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuReading {
    pub conditions: Conditions,
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub driver: Option<String>,
}

/// Reads the eval's GPU; remembers when the tool is missing so it is not asked again.
pub struct ConditionsReader {
    tool: &'static dyn DeviceTool,
    /// The first GPU the runtime's visibility variable names, else 0.
    gpu: String,
    cancel: CancellationToken,
    unavailable: bool,
}

impl ConditionsReader {
    pub fn new(tool: &'static dyn DeviceTool, cancel: CancellationToken) -> Self {
        let gpu = crate::pipeline::calibrate::visible_device().unwrap_or_else(|| "0".to_string());
        ConditionsReader {
            tool,
            gpu,
            cancel,
            unavailable: false,
        }
    }

    /// The GPU now; `None` when the tool cannot answer (the audit then says the conditions
    /// check did not run). `workers`: this eval's worker pids, left out of `other_processes`.
    pub async fn read(&mut self, workers: &[u32]) -> Option<GpuReading> {
        if self.unavailable {
            return None;
        }
        // Both questions at once: each is a start of the device tool (tens of ms or more), and
        // they are asked before and after every timing block, on the GPU's time.
        let asked = std::time::Instant::now();
        let (text, apps) = tokio::join!(
            self.query(self.tool.reading_args(&self.gpu)),
            self.query(self.tool.processes_args(&self.gpu))
        );
        tracing::debug!(
            ms = asked.elapsed().as_secs_f64() * 1e3,
            "eval: the device's conditions read"
        );
        let Some(text) = text else {
            self.unavailable = true;
            return None;
        };
        let reading = self.tool.parse_reading(&text)?;
        let mut conditions = Conditions {
            sm_clock_mhz: reading.sm_clock_mhz,
            mem_clock_mhz: reading.mem_clock_mhz,
            max_sm_clock_mhz: reading.max_sm_clock_mhz,
            temperature_c: reading.temperature_c,
            power_w: reading.power_w,
            throttle_reasons: reading.throttle_reasons,
            other_processes: Vec::new(),
        };
        if let Some(apps) = apps {
            conditions.other_processes = self
                .tool
                .parse_processes(&apps)
                .into_iter()
                .filter(|pid| !workers.contains(pid))
                .collect();
        }
        Some(GpuReading {
            conditions,
            uuid: reading.uuid,
            name: reading.name,
            driver: reading.driver,
        })
    }

    async fn query(&self, args: Vec<String>) -> Option<String> {
        let program = self.tool.tool().program;
        let mut request = ProbeRequest::new(program, &[], PROBE_TIMEOUT);
        request.args = args;
        let cancel = self.cancel.clone();
        let answered = tokio::task::spawn_blocking(move || run_probe(&request, &cancel))
            .await
            .ok()?;
        match answered {
            Ok(output) if output.success() => Some(String::from_utf8_lossy(&output.stdout).into()),
            Ok(output) => {
                tracing::debug!(program, status = %output.status_text(), "the device tool failed");
                None
            }
            Err(e) => {
                tracing::debug!(program, error = %e, "the device tool could not run");
                None
            }
        }
    }
}
