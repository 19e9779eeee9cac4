//! `polyprof calibrate`: known-work micro-kernels on a GPU under ncu, each counter held against
//! the work, the result cached per device, driver and ncu version for the eval's audit
//! (docs/calibrate.md). Exit 0 when every checked counter is trusted (within 5 %), 1 when one is
//! not (named on stderr), 3 when the calibration could not be made (nvcc, ncu or the GPU
//! missing, a failed build or pass), 130 when cancelled.

use std::fmt::Write as _;
use std::path::PathBuf;

use comfy_table::{Cell, CellAlignment};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use polyprof::model::calibration::{
    CalibratedQuantity, Calibration, CalibrationCheck, CounterTrust, GOOD_WITHIN, TRUSTED_WITHIN,
};
use polyprof::pipeline::calibrate::{CalibrateError, CalibrateOptions, Calibrated, calibrate};
use polyprof::results::calibration::above_peak;

/// A checked counter read further than 5 % from the known work.
pub const EXIT_UNTRUSTED: u8 = 1;
/// The calibration could not be made.
pub const EXIT_CANNOT_CALIBRATE: u8 = 3;
const EXIT_CANCELLED: u8 = 130;

/// Every quantity a calibration can check, for saying which were not.
const QUANTITIES: [CalibratedQuantity; 9] = [
    CalibratedQuantity::DramBytesRead,
    CalibratedQuantity::DramBytesWrite,
    CalibratedQuantity::Fp32Flops,
    CalibratedQuantity::Fp64Flops,
    CalibratedQuantity::Fp16Flops,
    CalibratedQuantity::TensorFp16Flops,
    CalibratedQuantity::TensorBf16Flops,
    CalibratedQuantity::TensorTf32Flops,
    CalibratedQuantity::TensorFp8Flops,
];

/// Arguments of `polyprof calibrate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The GPU, as nvidia-smi numbers it (or its UUID); default: the first GPU that
    /// CUDA_VISIBLE_DEVICES names, else GPU 0.
    #[arg(long, value_name = "N")]
    pub device: Option<String>,
    /// Measure again even when this device, driver and ncu version have a cached calibration.
    #[arg(long)]
    pub force: bool,
    /// Print the calibration as JSON (with which counters are untrusted) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The cache folder (default: $XDG_CACHE_HOME/polyprof/calibration, else
    /// ~/.cache/polyprof/calibration); the build and the ncu runs go under its `work/`.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The profiler that measures (one with a calibration capability; default: the first
    /// that has one, ncu).
    #[arg(long, value_name = "NAME", value_parser = super::values::profilers())]
    pub profiler: Option<String>,
}

/// The `--json` document.
#[derive(Debug, Serialize)]
struct Report<'a> {
    calibration: &'a Calibration,
    from_cache: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    work_dir: Option<String>,
    /// Quantities the audit will not judge from: a check further than 5 % off, or unread.
    untrusted: Vec<CalibratedQuantity>,
    /// Quantities no kernel checked on this GPU (untrusted too).
    not_checked: Vec<CalibratedQuantity>,
    /// Kernels whose known work ran faster than the device table's clock-scaled peak.
    above_peak: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    missing: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    repeated: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let cancel = CancellationToken::new();
    super::run::cancel_on_signals(cancel.clone(), CancellationToken::new());
    let options = CalibrateOptions {
        profiler: args.profiler.clone(),
        device: args.device.clone(),
        force: args.force,
        cache_dir: match &args.cache_dir {
            Some(dir) => Some(dir.clone()),
            None => polyprof::pipeline::config::Config::load()?.cache_dir.value,
        },
        cancel,
        progress: Some(std::sync::Arc::new(|step: &str| {
            super::output::eprintln_text(&format!("polyprof calibrate: {step}"));
        })),
    };
    let calibrated = match calibrate(&options).await {
        Ok(calibrated) => calibrated,
        Err(CalibrateError::Cancelled) => {
            super::report_error(&anyhow::anyhow!("calibration cancelled"));
            return Ok(EXIT_CANCELLED);
        }
        Err(error) => {
            super::report_error(&anyhow::Error::new(error));
            return Ok(EXIT_CANNOT_CALIBRATE);
        }
    };
    let untrusted = untrusted(&calibrated.calibration);
    if args.json {
        let report = Report {
            calibration: &calibrated.calibration,
            from_cache: calibrated.from_cache,
            work_dir: calibrated
                .work_dir
                .as_ref()
                .map(|d| d.display().to_string()),
            untrusted: untrusted.clone(),
            not_checked: not_checked(&calibrated.calibration),
            above_peak: above_peak(&calibrated.calibration.checks)
                .iter()
                .map(|c| c.kernel.clone())
                .collect(),
            missing: calibrated.missing.clone(),
            repeated: calibrated.repeated.clone(),
            warnings: calibrated.warnings.clone(),
        };
        super::output::println(&serde_json::to_string_pretty(&report)?)?;
    } else {
        // Device and kernel names, tools' warnings: shown, never sent.
        super::output::print_text(&render(&calibrated, now_unix_s()))?;
    }
    if untrusted.is_empty() {
        return Ok(0);
    }
    let named: Vec<String> = untrusted
        .iter()
        .map(|q| {
            let why = calibrated
                .calibration
                .checks
                .iter()
                .filter(|c| c.quantity == *q && c.trust() == CounterTrust::Untrusted)
                .map(|c| match c.measured {
                    Some(m) => format!(
                        "{} read {:.1} % of its known work",
                        c.kernel,
                        100.0 * m / c.expected
                    ),
                    None => format!("{} was not read", c.kernel),
                })
                .collect::<Vec<_>>()
                .join(", ");
            format!("{} ({why})", q.as_str())
        })
        .collect();
    super::report_error(&anyhow::anyhow!(
        "untrusted counters: {}; the audit will not judge from them",
        named.join("; ")
    ));
    Ok(EXIT_UNTRUSTED)
}

/// Quantities a check of this calibration reads further than 5 % off (or not at all).
fn untrusted(calibration: &Calibration) -> Vec<CalibratedQuantity> {
    QUANTITIES
        .into_iter()
        .filter(|q| calibration.checks.iter().any(|c| c.quantity == *q))
        .filter(|q| !calibration.trusts(*q))
        .collect()
}

fn not_checked(calibration: &Calibration) -> Vec<CalibratedQuantity> {
    QUANTITIES
        .into_iter()
        .filter(|q| !calibration.checks.iter().any(|c| c.quantity == *q))
        .collect()
}

/// The calibration for people: where it came from, a row per check, the launch floor, where it
/// is cached, and what is untrusted, unchecked or above the device table's peak.
fn render(calibrated: &Calibrated, now_unix_s: u64) -> String {
    let c = &calibrated.calibration;
    let mut out = String::new();
    let device = match &c.device_uuid {
        Some(uuid) => format!("{} ({uuid})", c.device_name),
        None => c.device_name.clone(),
    };
    let when = if calibrated.from_cache {
        format!(
            "cached, measured {} ago (--force measures again)",
            age(now_unix_s.saturating_sub(c.created_unix_s))
        )
    } else {
        "measured now".to_string()
    };
    let _ = writeln!(
        out,
        "calibration of {device}, driver {}, {}: {when}",
        c.driver.as_deref().unwrap_or("unknown"),
        c.tool
    );
    let mut table = super::width::table();
    table.set_header([
        "kernel",
        "quantity",
        "expected",
        "measured",
        "error",
        "trust",
        "share of peak",
    ]);
    for check in &c.checks {
        table.add_row(row(check));
    }
    super::width::keep_whole(&mut table, 0);
    let _ = writeln!(out, "{}", super::width::render(&table));
    let _ = writeln!(
        out,
        "trust: good within {:.0} %, usable within {:.0} %, untrusted beyond (the audit does not \
         judge from an untrusted counter); share of peak: the known work's rate over the device \
         table's peak at the clock the kernel ran at",
        GOOD_WITHIN * 100.0,
        TRUSTED_WITHIN * 100.0
    );
    match c.launch_floor_ns {
        Some(ns) => {
            let _ = writeln!(
                out,
                "launch floor:    {:.2} µs (median of the empty kernel's launches)",
                ns / 1e3
            );
        }
        None => {
            let _ = writeln!(out, "launch floor:    not measured");
        }
    }
    if let Some(path) = &c.path {
        let _ = writeln!(out, "cached at:       {path}");
    }
    if let Some(work) = &calibrated.work_dir {
        let _ = writeln!(
            out,
            "work directory:  {} (kernels.cu, the program, plan.json, the ncu runs)",
            work.display()
        );
    }
    let names = |quantities: Vec<CalibratedQuantity>| {
        quantities
            .iter()
            .map(|q| q.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let unchecked = not_checked(c);
    if !unchecked.is_empty() {
        let _ = writeln!(
            out,
            "not checked on this GPU (untrusted for the audit): {}",
            names(unchecked)
        );
    }
    for check in above_peak(&c.checks) {
        let _ = writeln!(
            out,
            "above the device table's peak: {} ran at {:.1} % of it; the table's figure or clock \
             for this device is too low (configs/devices.toml, or `--devices FILE`)",
            check.kernel,
            check.share_of_peak.unwrap_or_default() * 100.0
        );
    }
    if !calibrated.missing.is_empty() {
        let _ = writeln!(
            out,
            "not recorded by ncu: {} (see the counters run's logs)",
            calibrated.missing.join(", ")
        );
    }
    for warning in &calibrated.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    if !calibrated.repeated.is_empty() {
        let _ = writeln!(
            out,
            "recorded more than once (the first launch judged): {}",
            calibrated.repeated.join(", ")
        );
    }
    let untrusted = untrusted(c);
    if untrusted.is_empty() {
        let _ = writeln!(out, "every checked counter is trusted");
    } else {
        let _ = writeln!(out, "untrusted: {}", names(untrusted));
    }
    out
}

fn row(check: &CalibrationCheck) -> Vec<Cell> {
    let unit = match check.quantity {
        CalibratedQuantity::DramBytesRead | CalibratedQuantity::DramBytesWrite => "B",
        _ => "FLOP",
    };
    let right = |text: String| Cell::new(text).set_alignment(CellAlignment::Right);
    // Signed: below the reading is +, above it −; zero inside an interval reading.
    let error = match (check.measured, check.relative_error()) {
        (Some(measured), Some(off)) => {
            let sign = if measured > check.expected { 1.0 } else { -1.0 };
            format!("{:+.2} %", 100.0 * sign * off + 0.0)
        }
        _ => "—".to_string(),
    };
    let trust = match check.trust() {
        CounterTrust::Good => "good",
        CounterTrust::Usable => "usable",
        CounterTrust::Untrusted => "untrusted",
    };
    vec![
        Cell::new(&check.kernel),
        Cell::new(check.quantity.as_str()),
        right(format!("{:.4e} {unit}", check.expected)),
        right(check.measured.map_or_else(
            || "not read".to_string(),
            |m| match check.measured_upper.filter(|u| *u > m) {
                Some(upper) => format!("{m:.4e}–{upper:.4e} {unit}"),
                None => format!("{m:.4e} {unit}"),
            },
        )),
        right(error),
        Cell::new(trust),
        right(
            check
                .share_of_peak
                .map_or_else(|| "—".to_string(), |s| format!("{:.1} %", s * 100.0)),
        ),
    ]
}

fn age(seconds: u64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 2 * 3600 => format!("{} min", s / 60),
        s if s < 2 * 86_400 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

fn now_unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(
        kernel: &str,
        quantity: CalibratedQuantity,
        expected: f64,
        measured: Option<f64>,
        share: Option<f64>,
    ) -> CalibrationCheck {
        CalibrationCheck {
            kernel: kernel.into(),
            quantity,
            expected,
            measured,
            measured_upper: None,
            duration_ns: Some(1e6),
            share_of_peak: share,
        }
    }

    fn calibrated(checks: Vec<CalibrationCheck>) -> Calibrated {
        Calibrated {
            calibration: Calibration {
                device_name: "NVIDIA H200".into(),
                device_uuid: Some("GPU-1".into()),
                driver: Some("580.95.05".into()),
                tool: "ncu 2025.3.1.0".into(),
                created_unix_s: 1_000,
                path: Some("cache/calibration/x.json".into()),
                launch_floor_ns: Some(1850.0),
                checks,
            },
            from_cache: true,
            work_dir: None,
            missing: Vec::new(),
            repeated: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn the_table_says_each_checks_error_trust_and_share_and_what_is_untrusted() {
        use CalibratedQuantity as Q;
        let done = calibrated(vec![
            check("copy", Q::DramBytesRead, 1e9, Some(1.004e9), Some(0.91)),
            check("copy", Q::DramBytesWrite, 1e9, Some(0.97e9), Some(0.91)),
            check("fma_fp16x2", Q::Fp16Flops, 4e12, Some(2e12), Some(1.2)),
            check("mma_bf16", Q::TensorBf16Flops, 8e12, None, None),
        ]);
        let text = render(&done, 1_000 + 3 * 3600);
        assert!(text.contains("cached, measured 3 h ago"), "{text}");
        assert!(text.contains("+0.40 %"), "{text}");
        assert!(text.contains("-3.00 %"), "{text}");
        assert!(text.contains("usable"), "{text}");
        assert!(text.contains("not read"), "{text}");
        assert!(text.contains("91.0 %"), "{text}");
        assert!(text.contains("launch floor:    1.85 µs"), "{text}");
        assert!(
            text.contains("cached at:       cache/calibration/x.json"),
            "{text}"
        );
        assert!(
            text.contains("above the device table's peak: fma_fp16x2 ran at 120.0 %"),
            "{text}"
        );
        assert!(
            text.contains("untrusted: fp16_flops, tensor_bf16_flops"),
            "{text}"
        );
        assert!(text.contains("not checked on this GPU"), "{text}");
        assert_eq!(
            untrusted(&done.calibration),
            [Q::Fp16Flops, Q::TensorBf16Flops]
        );
        assert!(not_checked(&done.calibration).contains(&Q::TensorFp8Flops));
        let all_good = calibrated(vec![check("copy", Q::DramBytesRead, 1e9, Some(1e9), None)]);
        assert!(render(&all_good, 1_000).contains("every checked counter is trusted"));
    }
}
