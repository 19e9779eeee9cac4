//! The session page (`--page session`): small two-column tables under plain title lines
//! ("Launch Settings", "Session Info", "Processes", "Device Attributes").

use super::context::Context;

/// Which session table a header starts, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionTable {
    Launch,
    Session,
    Processes,
    /// Device columns (`Device 0`, `Device 1`, …) by position.
    Devices(Vec<String>),
}

impl SessionTable {
    pub fn from_header(header: &[String]) -> Option<Self> {
        match header.first().map(String::as_str)? {
            "Launch Attribute" => Some(SessionTable::Launch),
            "Session Attribute" => Some(SessionTable::Session),
            "Process Id" => Some(SessionTable::Processes),
            "Device Attribute" => Some(SessionTable::Devices(
                header[1..]
                    .iter()
                    .map(|h| h.trim_start_matches("Device ").trim().to_string())
                    .collect(),
            )),
            _ => None,
        }
    }

    /// Record one row: every attribute under a prefixed key, plus the well-known facts under
    /// short keys (`ncu_version`, `cuda_version`, `command_line`, `device_name`,
    /// `compute_capability`).
    pub fn apply(&self, row: &[String], context: &mut Context) {
        let Some(attribute) = row.first().map(|a| a.trim()) else {
            return;
        };
        let value = row.get(1).map(|v| v.trim()).unwrap_or("");
        match self {
            SessionTable::Launch => {
                context.session_insert(format!("launch.{attribute}"), value.to_string());
                if attribute == "Profiler Command Line" {
                    context.session_insert("command_line".to_string(), value.to_string());
                }
            }
            SessionTable::Session => {
                context.session_insert(format!("session.{attribute}"), value.to_string());
                let short = match attribute {
                    "Nsight Compute Target" => {
                        let version = value.split_whitespace().next().unwrap_or(value);
                        Some(("ncu_version", version.to_string()))
                    }
                    "CUDA Version" => Some(("cuda_version", value.to_string())),
                    "Host Name" => Some(("host_name", value.to_string())),
                    _ => None,
                };
                if let Some((key, value)) = short {
                    context.session_insert(key.to_string(), value);
                }
            }
            SessionTable::Processes => {
                context.session_insert(format!("process.{attribute}"), value.to_string());
            }
            SessionTable::Devices(devices) => {
                for (device, value) in devices.iter().zip(row[1..].iter()) {
                    let value = value.trim().to_string();
                    context.session_insert(format!("device.{device}.{attribute}"), value);
                }
            }
        }
    }
}
