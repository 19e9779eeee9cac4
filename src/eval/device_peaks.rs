//! The peaks of the GPU an eval ran on, from polyprof's built-in device table
//! (`configs/devices.toml`) by the device name the harness recorded.

use crate::results::devices::{DevicePeaks, DeviceTable};

use super::evidence::EvalEvidence;

/// The table's entry for the eval's GPU, or why there is none.
pub fn device_peaks(evidence: &EvalEvidence) -> Result<DevicePeaks, String> {
    if evidence.problem.device == "cpu" {
        return Err("no GPU peaks on cpu".to_string());
    }
    let Some(name) = evidence.environment.device_name.as_deref() else {
        return Err("the evidence names no device".to_string());
    };
    let table = DeviceTable::builtin().map_err(|e| format!("the device table: {e}"))?;
    table
        .lookup(name)
        .cloned()
        .ok_or_else(|| format!("device `{name}` is not in the device table (configs/devices.toml)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::test_support::evidence;

    #[test]
    fn the_recorded_device_is_looked_up() {
        let mut e = evidence();
        e.environment.device_name = None;
        assert_eq!(
            device_peaks(&e).unwrap_err(),
            "the evidence names no device"
        );
        e.environment.device_name = Some("NVIDIA H200".into());
        let h200 = device_peaks(&e).unwrap();
        assert_eq!(h200.name, "H200");
        assert_eq!(h200.l2_cache_bytes(), Some(62_914_560.0));
        e.environment.device_name = Some("GeForce GTX 480".into());
        assert_eq!(
            device_peaks(&e).unwrap_err(),
            "device `GeForce GTX 480` is not in the device table (configs/devices.toml)"
        );
    }
}
