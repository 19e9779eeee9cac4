//! A device's calibration: known-work micro-kernels run under the profiler, and how far each
//! counter read from the work the kernel is known to do. `polyprof calibrate` writes it (cached
//! per device, driver and tool version); the eval audit cites it and refuses to judge from a
//! counter it marks untrusted.

use serde::{Deserialize, Serialize};

/// A counter read within this share of the known work is good.
pub const GOOD_WITHIN: f64 = 0.02;
/// A counter read further off than this share is untrusted: checks that need it say so
/// instead of judging.
pub const TRUSTED_WITHIN: f64 = 0.05;

/// What a calibration kernel's known work is checked against.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CalibratedQuantity {
    DramBytesRead,
    DramBytesWrite,
    Fp16Flops,
    Fp32Flops,
    Fp64Flops,
    TensorFp16Flops,
    TensorBf16Flops,
    TensorTf32Flops,
    TensorFp8Flops,
}

impl CalibratedQuantity {
    pub fn as_str(&self) -> &'static str {
        match self {
            CalibratedQuantity::DramBytesRead => "dram_bytes_read",
            CalibratedQuantity::DramBytesWrite => "dram_bytes_write",
            CalibratedQuantity::Fp16Flops => "fp16_flops",
            CalibratedQuantity::Fp32Flops => "fp32_flops",
            CalibratedQuantity::Fp64Flops => "fp64_flops",
            CalibratedQuantity::TensorFp16Flops => "tensor_fp16_flops",
            CalibratedQuantity::TensorBf16Flops => "tensor_bf16_flops",
            CalibratedQuantity::TensorTf32Flops => "tensor_tf32_flops",
            CalibratedQuantity::TensorFp8Flops => "tensor_fp8_flops",
        }
    }
}

/// How well a counter read a calibration kernel's known work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CounterTrust {
    /// Within [`GOOD_WITHIN`].
    Good,
    /// Within [`TRUSTED_WITHIN`]: usable, cited with its error.
    Usable,
    /// Further off, or not read at all: the checks that need it do not judge.
    Untrusted,
}

/// One calibration kernel's reading of one quantity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CalibrationCheck {
    /// The micro-kernel (`copy`, `fma_fp32`, `mma_fp16`, ...).
    pub kernel: String,
    pub quantity: CalibratedQuantity,
    /// The work the kernel is known to do (bytes or FLOPs).
    pub expected: f64,
    /// What the counter read; `None` when the profiler gave nothing for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<f64>,
    /// Where the counter reads an interval rather than one figure, its upper end (`measured` is
    /// the lower): FP16 FLOPs, whose `HFMA2.MMA` instructions may be FMAs or constant moves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_upper: Option<f64>,
    /// The kernel's time as the profiler measured it, for the achieved rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<f64>,
    /// The achieved rate over the device table's peak at the clock the kernel ran at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_of_peak: Option<f64>,
}

impl CalibrationCheck {
    /// |measured − expected| / expected, the distance to the nearer end of an interval reading
    /// (zero inside it); `None` when nothing was measured.
    pub fn relative_error(&self) -> Option<f64> {
        let lower = self.measured?;
        let upper = self.measured_upper.unwrap_or(lower).max(lower);
        let off = if self.expected < lower {
            lower - self.expected
        } else if self.expected > upper {
            self.expected - upper
        } else {
            0.0
        };
        (self.expected > 0.0).then(|| off / self.expected)
    }

    pub fn trust(&self) -> CounterTrust {
        match self.relative_error() {
            Some(error) if error <= GOOD_WITHIN => CounterTrust::Good,
            Some(error) if error <= TRUSTED_WITHIN => CounterTrust::Usable,
            _ => CounterTrust::Untrusted,
        }
    }
}

/// A device's calibration, as cached and as an eval's evidence cites it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Calibration {
    pub device_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// The profiler and its version (`ncu 2025.3.1`): a calibration is valid for one tool.
    pub tool: String,
    /// Seconds since the epoch when it was measured.
    pub created_unix_s: u64,
    /// Where it is cached, when it was read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// An empty kernel's time on this device (the median of its launches): no real kernel
    /// finishes faster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_floor_ns: Option<f64>,
    #[serde(default)]
    pub checks: Vec<CalibrationCheck>,
}

impl Calibration {
    /// The worst trust among the checks of `quantity`; `Untrusted` when none checked it.
    pub fn trust(&self, quantity: CalibratedQuantity) -> CounterTrust {
        let mut worst = None;
        for check in self
            .checks
            .iter()
            .filter(|check| check.quantity == quantity)
        {
            let trust = check.trust();
            worst = Some(match (worst, trust) {
                (Some(CounterTrust::Untrusted), _) | (_, CounterTrust::Untrusted) => {
                    CounterTrust::Untrusted
                }
                (Some(CounterTrust::Usable), _) | (_, CounterTrust::Usable) => CounterTrust::Usable,
                _ => CounterTrust::Good,
            });
        }
        worst.unwrap_or(CounterTrust::Untrusted)
    }

    /// Whether the audit may judge from `quantity`'s counter.
    pub fn trusts(&self, quantity: CalibratedQuantity) -> bool {
        self.trust(quantity) != CounterTrust::Untrusted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(
        quantity: CalibratedQuantity,
        expected: f64,
        measured: Option<f64>,
    ) -> CalibrationCheck {
        CalibrationCheck {
            kernel: "copy".into(),
            quantity,
            expected,
            measured,
            measured_upper: None,
            duration_ns: None,
            share_of_peak: None,
        }
    }

    #[test]
    fn trust_follows_the_relative_error() {
        let read = CalibratedQuantity::DramBytesRead;
        assert_eq!(
            check(read, 1000.0, Some(1015.0)).trust(),
            CounterTrust::Good
        );
        assert_eq!(
            check(read, 1000.0, Some(960.0)).trust(),
            CounterTrust::Usable
        );
        assert_eq!(
            check(read, 1000.0, Some(1060.0)).trust(),
            CounterTrust::Untrusted
        );
        assert_eq!(check(read, 1000.0, None).trust(), CounterTrust::Untrusted);
    }

    #[test]
    fn a_quantity_is_as_trusted_as_its_worst_check_and_untrusted_when_unchecked() {
        let read = CalibratedQuantity::DramBytesRead;
        let calibration = Calibration {
            device_name: "NVIDIA H200".into(),
            device_uuid: None,
            driver: None,
            tool: "ncu 2025.3.1".into(),
            created_unix_s: 0,
            path: None,
            launch_floor_ns: Some(1500.0),
            checks: vec![
                check(read, 1000.0, Some(1001.0)),
                check(read, 1000.0, Some(1030.0)),
            ],
        };
        assert_eq!(calibration.trust(read), CounterTrust::Usable);
        assert!(calibration.trusts(read));
        assert!(!calibration.trusts(CalibratedQuantity::Fp32Flops));
    }
}
