//! Judging a calibration: the profiler's records of the micro-kernels against the work each is
//! known to do ([`super::calibration_kernels`]). Pure: it takes parsed records, so a committed
//! capture judges the same way as a live run.
//!
//! Per kernel and quantity: the counter polyprof's normalized record carries (DRAM bytes read
//! and written, FLOPs per precision as the audit reads them: FP16 without the `HFMA2.MMA`
//! bound) against the known work, and the known work's rate against the device table's peak
//! at the clock the kernel ran at. The launch floor is the median time of the empty kernel's
//! launches.

use crate::model::calibration::{CalibratedQuantity, CalibrationCheck};
use crate::model::record::{KernelRecord, Precision};
use crate::model::verdict_metrics::{DRAM_CLOCK, SM_CLOCK};
use crate::results::calibration_kernels::{CalibrationKernel, KernelKind};
use crate::results::devices::DevicePeaks;

/// A share of peak above this is more than the hardware can do: the device table's peak (or
/// its clock) is wrong for this device, or the counter of time is.
pub const PEAK_TOLERANCE: f64 = 1.0;

/// What the records say about the planned kernels.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Judged {
    /// One per planned kernel and quantity, in plan order; `measured` is `None` when the
    /// profiler recorded nothing for it.
    pub checks: Vec<CalibrationCheck>,
    /// The median time of the empty kernel's launches.
    pub launch_floor_ns: Option<f64>,
    /// Planned kernels the records lack (the program failed before them, or the profiler
    /// skipped them).
    pub missing: Vec<String>,
    /// Planned kernels recorded more than once: the first launch is judged.
    pub repeated: Vec<String>,
}

/// Judge `records` (every pass's, together) against `plan` under `peaks` (the device table's
/// entry for the device; `None`: no share of peak).
pub fn judge(
    plan: &[CalibrationKernel],
    records: &[KernelRecord],
    peaks: Option<&DevicePeaks>,
) -> Judged {
    let mut judged = Judged::default();
    for planned in plan {
        let function = planned.kernel.function();
        let launches: Vec<&KernelRecord> = records
            .iter()
            .filter(|r| r.kind.is_kernel() && r.short_name == function)
            .collect();
        if launches.is_empty() {
            judged.missing.push(planned.kernel.name().to_string());
        }
        if planned.kernel == KernelKind::Empty {
            let durations: Vec<f64> = launches.iter().filter_map(|r| r.duration_ns).collect();
            judged.launch_floor_ns = median(durations);
            continue;
        }
        if launches.len() > 1 {
            judged.repeated.push(planned.kernel.name().to_string());
        }
        let record = launches.first().copied();
        let expected = planned.expected();
        let duration_ns = record.and_then(|r| r.duration_ns).filter(|d| *d > 0.0);
        let share = match (record, duration_ns) {
            (Some(record), Some(duration)) => {
                peaks.and_then(|peaks| share_of_peak(planned, &expected, record, duration, peaks))
            }
            _ => None,
        };
        for (quantity, work) in expected {
            judged.checks.push(CalibrationCheck {
                kernel: planned.kernel.name().to_string(),
                quantity,
                expected: work,
                measured: record.and_then(|r| measured(quantity, r)),
                measured_upper: record.and_then(|r| measured_upper(quantity, r)),
                duration_ns,
                share_of_peak: share,
            });
        }
    }
    judged
}

/// What polyprof's normalized record says for `quantity`.
pub fn measured(quantity: CalibratedQuantity, record: &KernelRecord) -> Option<f64> {
    use CalibratedQuantity as Q;
    let flops = &record.flops;
    match quantity {
        Q::DramBytesRead => record.dram_bytes_read,
        Q::DramBytesWrite => record.dram_bytes_write,
        Q::Fp16Flops => flops.vector_fp16(),
        Q::Fp32Flops => flops.fp32,
        Q::Fp64Flops => flops.fp64,
        Q::TensorFp16Flops => flops.tensor_fp16,
        Q::TensorBf16Flops => flops.tensor_bf16,
        Q::TensorTf32Flops => flops.tensor_tf32,
        Q::TensorFp8Flops => flops.tensor_fp8,
    }
}

/// The upper end of an interval reading: FP16 FLOPs with every `HFMA2.MMA` counted as FMAs.
pub fn measured_upper(quantity: CalibratedQuantity, record: &KernelRecord) -> Option<f64> {
    match quantity {
        CalibratedQuantity::Fp16Flops => record.flops.fp16,
        _ => None,
    }
}

/// The precision whose peak a FLOP quantity is held against; `None` for bytes.
pub fn precision_of(quantity: CalibratedQuantity) -> Option<Precision> {
    use CalibratedQuantity as Q;
    Some(match quantity {
        Q::DramBytesRead | Q::DramBytesWrite => return None,
        Q::Fp16Flops => Precision::Fp16,
        Q::Fp32Flops => Precision::Fp32,
        Q::Fp64Flops => Precision::Fp64,
        Q::TensorFp16Flops => Precision::TensorFp16,
        Q::TensorBf16Flops => Precision::TensorBf16,
        Q::TensorTf32Flops => Precision::TensorTf32,
        Q::TensorFp8Flops => Precision::TensorFp8,
    })
}

/// The known work's rate over the peak at the clock the launch ran at: bytes read and written
/// together against the DRAM bandwidth, FLOPs against their precision's peak.
fn share_of_peak(
    planned: &CalibrationKernel,
    expected: &[(CalibratedQuantity, f64)],
    record: &KernelRecord,
    duration_ns: f64,
    peaks: &DevicePeaks,
) -> Option<f64> {
    if planned.kernel == KernelKind::Copy {
        let bytes: f64 = expected.iter().map(|(_, work)| work).sum();
        // Bytes per ns are GB/s.
        let bandwidth = peaks.bandwidth_at(record.metric(DRAM_CLOCK));
        return (bandwidth > 0.0).then(|| bytes / duration_ns / bandwidth);
    }
    let (quantity, flops) = expected.first()?;
    let peak_tflops = peaks.peak_at(precision_of(*quantity)?, record.metric(SM_CLOCK))?;
    // FLOPs per ns are GFLOP/s; a TFLOP/s is 10^3 of them.
    Some(flops / duration_ns / (peak_tflops * 1e3))
}

/// Checks whose known work ran faster than the device table's peak allows.
pub fn above_peak(checks: &[CalibrationCheck]) -> Vec<&CalibrationCheck> {
    let mut seen = Vec::new();
    let mut above = Vec::new();
    for check in checks {
        if check.share_of_peak.is_some_and(|s| s > PEAK_TOLERANCE) && !seen.contains(&&check.kernel)
        {
            seen.push(&check.kernel);
            above.push(check);
        }
    }
    above
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::calibration::CounterTrust;
    use crate::model::record::{FlopCounts, Metric, MetricValue};
    use crate::results::calibration_kernels::Amount;
    use crate::results::devices::DeviceTable;

    fn launch(function: &str, duration_ns: f64) -> KernelRecord {
        KernelRecord {
            profiler: "ncu".into(),
            name: format!("{function}(int, unsigned int, unsigned int *)"),
            short_name: function.into(),
            duration_ns: Some(duration_ns),
            ..Default::default()
        }
    }

    fn with_clock(mut record: KernelRecord, name: &str, hz: f64) -> KernelRecord {
        record.metrics.insert(
            name.into(),
            Metric {
                value: MetricValue::Number(hz),
                unit: "hz".into(),
            },
        );
        record
    }

    fn plan() -> Vec<CalibrationKernel> {
        vec![
            crate::results::calibration_kernels::floor_kernel(),
            CalibrationKernel {
                kernel: KernelKind::Copy,
                amount: Amount::Bytes { bytes: 1 << 30 },
            },
            CalibrationKernel {
                kernel: KernelKind::FmaFp16x2,
                amount: Amount::Grid {
                    blocks: 1056,
                    threads: 256,
                    iterations: 16384,
                },
            },
            CalibrationKernel {
                kernel: KernelKind::MmaBf16,
                amount: Amount::Grid {
                    blocks: 1056,
                    threads: 256,
                    iterations: 4096,
                },
            },
        ]
    }

    fn h200() -> DevicePeaks {
        DeviceTable::builtin()
            .unwrap()
            .lookup("NVIDIA H200")
            .unwrap()
            .clone()
    }

    #[test]
    fn counters_are_held_against_the_known_work_and_the_floor_is_the_median() {
        let gib = (1u64 << 30) as f64;
        let mut records: Vec<KernelRecord> = [2100.0, 1900.0, 2000.0]
            .iter()
            .map(|d| launch("calib_empty", *d))
            .collect();
        let mut copy = with_clock(launch("calib_copy", 500_000.0), DRAM_CLOCK, 3.201e9);
        copy.dram_bytes_read = Some(gib * 1.001);
        copy.dram_bytes_write = Some(gib * 0.97);
        records.push(copy);
        // fp16x2: 1056·256·16384·32 FLOPs known; the counter reads half (a packed HFMA2
        // counted as one FMA) and nothing is excluded as HFMA2.MMA.
        let known = 1056.0 * 256.0 * 16384.0 * 32.0;
        let mut half2 = with_clock(launch("calib_fma_fp16x2", 2.0e6), SM_CLOCK, 1.98e9);
        half2.flops = FlopCounts {
            fp16: Some(known / 2.0),
            fp16_hfma2_mma: Some(0.0),
            ..Default::default()
        };
        records.push(half2);
        // The bf16 MMA is not in the records at all.
        let judged = judge(&plan(), &records, Some(&h200()));
        assert_eq!(judged.launch_floor_ns, Some(2000.0));
        assert_eq!(judged.missing, ["mma_bf16"]);
        let trust: Vec<(&str, CalibratedQuantity, CounterTrust)> = judged
            .checks
            .iter()
            .map(|c| (c.kernel.as_str(), c.quantity, c.trust()))
            .collect();
        assert_eq!(
            trust,
            [
                (
                    "copy",
                    CalibratedQuantity::DramBytesRead,
                    CounterTrust::Good
                ),
                (
                    "copy",
                    CalibratedQuantity::DramBytesWrite,
                    CounterTrust::Usable
                ),
                (
                    "fma_fp16x2",
                    CalibratedQuantity::Fp16Flops,
                    CounterTrust::Untrusted
                ),
                (
                    "mma_bf16",
                    CalibratedQuantity::TensorBf16Flops,
                    CounterTrust::Untrusted
                ),
            ]
        );
        // 2 GiB in 0.5 ms is 4295 GB/s of 4800 at the table's own DRAM clock.
        let copy_share = judged.checks[0].share_of_peak.unwrap();
        assert!((copy_share - 2.0 * gib / 500_000.0 / 4800.0).abs() < 1e-9);
        assert_eq!(judged.checks[1].share_of_peak, Some(copy_share));
        // 1.13e14 FLOPs in 2 ms = 56.7 TFLOP/s of FP16's 133.8 at the 1.98 GHz the peak assumes.
        let half2_share = judged.checks[2].share_of_peak.unwrap();
        assert!((half2_share - known / 2.0e6 / 133_800.0).abs() < 1e-9);
        assert_eq!(judged.checks[3].measured, None);
        assert_eq!(judged.checks[3].share_of_peak, None);
        assert!(above_peak(&judged.checks).is_empty());
    }

    #[test]
    fn a_rate_above_the_clock_scaled_peak_is_named_once_per_kernel() {
        let gib = (1u64 << 30) as f64;
        // 2 GiB in 0.3 ms at half the DRAM clock: 7158 GB/s against 2400.
        let mut copy = with_clock(launch("calib_copy", 300_000.0), DRAM_CLOCK, 1.6005e9);
        copy.dram_bytes_read = Some(gib);
        copy.dram_bytes_write = Some(gib);
        let judged = judge(&plan()[1..2], &[copy], Some(&h200()));
        assert!(judged.checks[0].share_of_peak.unwrap() > 2.9);
        let above = above_peak(&judged.checks);
        assert_eq!(above.len(), 1);
        assert_eq!(above[0].kernel, "copy");
        // Without a device table entry there is no share to judge.
        let judged = judge(&plan()[1..2], &[launch("calib_copy", 1.0)], None);
        assert_eq!(judged.checks[0].share_of_peak, None);
        assert_eq!(judged.launch_floor_ns, None);
    }

    #[test]
    fn a_kernel_recorded_twice_is_judged_on_its_first_launch_and_said() {
        let mut first = launch("calib_copy", 1000.0);
        first.dram_bytes_read = Some(1.0);
        let second = launch("calib_copy", 1000.0);
        let judged = judge(&plan()[1..2], &[first, second], None);
        assert_eq!(judged.repeated, ["copy"]);
        assert_eq!(judged.checks[0].measured, Some(1.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(Vec::new()), None);
    }
}
