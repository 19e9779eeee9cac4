//! The device a profiler reported: what the run document and parsed output both carry.

use serde::{Deserialize, Serialize};

/// The device the run used, as far as it is known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeviceInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
}

/// Parse a compute capability written `MAJOR.MINOR` (`9.0`), as vendor tools and the
/// calibration program print it.
pub fn parse_compute_capability(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once('.')?;
    Some((major.trim().parse().ok()?, minor.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compute_capability_is_major_dot_minor() {
        assert_eq!(parse_compute_capability("9.0"), Some((9, 0)));
        assert_eq!(parse_compute_capability(" 12.1\n"), Some((12, 1)));
        assert_eq!(parse_compute_capability("9"), None);
    }
}
