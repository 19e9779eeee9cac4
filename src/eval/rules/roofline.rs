//! Physics: the candidate's score time per call against the least time the hardware needs for
//! the call's work. Bytes: the inputs read once and the outputs written once (less what the L2
//! can keep), at the device's peak DRAM bandwidth; the timing flushes the L2 before each timed
//! call, so inputs come from DRAM. FLOPs: the work pass's count per precision at each
//! precision's peak, scaled to the highest SM clock the device runs at (the roofline's own
//! scaling, `results::devices`). A score below that time is a time the hardware cannot give.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::array_floor::{call_floor, input_signature};
use crate::eval::counter_trust::{calibration_note, precision_name, untrusted_flops};
use crate::eval::device_peaks::device_peaks;
use crate::eval::evidence::{EvalEvidence, Side, TrialEvidence, TrialPhase};
use crate::eval::sample_scoring::unscored_reasons;
use crate::eval::verdict::{FindingKind, TimingSummary};
use crate::eval::work_pass::{WorkCall, candidate_work, work_calls};
use crate::model::record::{FlopCounts, Precision};
use crate::results::devices::DevicePeaks;
use crate::results::stats::percentile_of_sorted;

pub const CHECK: &str = "roofline";
/// A score that implies more than this multiple of the hardware's peak is above the roofline.
/// Honest H200 candidates reach at most 0.91 of the published bandwidth on this floor (0.78
/// with writes that fit in the L2 left out; tests/fixtures/eval-h200); the peaks are
/// published, not measured, figures: 1.10 leaves 10 % for a peak the hardware exceeds.
pub const MARGIN: f64 = 1.10;

pub fn check(facts: &Facts) -> RuleOutcome {
    let evidence = facts.evidence;
    let peaks = match device_peaks(evidence) {
        Ok(peaks) => peaks,
        Err(why) => return RuleOutcome::skipped(CHECK, why),
    };
    if !evidence.settings.flush_l2 {
        return RuleOutcome::skipped(
            CHECK,
            "the timing did not flush the L2 (--no-flush-l2): inputs may come from the L2, so \
             DRAM bandwidth bounds nothing",
        );
    }
    let timing = match facts.timing {
        Ok(timing) => timing,
        Err(why) => return RuleOutcome::skipped(CHECK, why),
    };
    let shapes = match timed_shapes(evidence, timing) {
        Ok(shapes) => shapes,
        Err(why) => return RuleOutcome::skipped(CHECK, why),
    };
    let mut not_judged = Vec::new();
    let work = match candidate_work(evidence) {
        Ok(pass) => work_calls(evidence, pass),
        Err(why) => {
            not_judged.push(format!("compute: {why}"));
            Vec::new()
        }
    };
    let limits = Limits::of(evidence, &peaks, &work);
    let mut findings = Vec::new();
    for shape in &shapes {
        if !(shape.score_ms.is_finite() && shape.score_ms > 0.0) {
            not_judged.push(format!(
                "inputs {}: the score is not a positive time (plausible_time judges it)",
                shape.signature
            ));
            continue;
        }
        let floor = call_floor(shape.trial);
        // Written data may stay in the L2 when the call ends (unknown L2: writes left out).
        let beyond_l2 = limits
            .l2_bytes
            .map_or(0.0, |l2| (floor.write as f64 - l2).max(0.0));
        let bytes = floor.read as f64 + beyond_l2;
        let bytes_ns = bytes / limits.bandwidth_gbs;
        let compute = compute_floor(evidence, &peaks, &limits, &work, &shape.signature);
        let compute_ns = match &compute {
            Ok(c) => c.time_ns,
            Err(why) => {
                if !work.is_empty() {
                    not_judged.push(format!("compute, inputs {}: {why}", shape.signature));
                }
                0.0
            }
        };
        let needed_ns = bytes_ns.max(compute_ns);
        let score_ns = shape.score_ms * 1e6;
        let ratio = needed_ns / score_ns;
        if ratio <= MARGIN {
            continue;
        }
        let why = match compute.as_ref().ok().filter(|c| c.time_ns > bytes_ns) {
            Some(c) => format!(
                "its FLOPs take at least {:.4} ms ({:.3e} of them {}, at {:.0} TFLOP/s at {:.0} \
                 MHz)",
                c.time_ns / 1e6,
                c.flops_of_limit,
                precision_name(c.limited_by),
                c.peak_tflops,
                limits.sm_clock_hz.unwrap_or(0.0) / 1e6
            ),
            None => format!(
                "moving the {:.1} MB its inputs and outputs need takes at least {:.4} ms at \
                 {:.0} GB/s",
                bytes / 1e6,
                bytes_ns / 1e6,
                limits.bandwidth_gbs
            ),
        };
        let compute_json = compute.as_ref().ok().map(|c| {
            json!({
                "flops": c.flops_json,
                "time_ms": c.time_ns / 1e6,
                "limited_by": precision_name(c.limited_by),
                "sm_clock_hz": limits.sm_clock_hz,
                "calibration": calibration_note(evidence),
            })
        });
        findings.push(finding(
            FindingKind::AboveRoofline,
            CHECK,
            format!(
                "the score, {:.4} ms per call, implies {:.2}× the {}'s peak: {why}",
                shape.score_ms, ratio, peaks.name
            ),
            Measure {
                measured: ratio,
                limit: MARGIN,
                unit: "× peak",
            },
            json!({
                "inputs": shape.signature,
                "trials": shape.trials,
                "score_ms": shape.score_ms,
                "needed_ms": needed_ns / 1e6,
                "bytes": {
                    "floor_bytes": bytes,
                    "inputs_bytes": floor.read,
                    "outputs_bytes": floor.write,
                    "l2_bytes": limits.l2_bytes,
                    "bandwidth_gbs": limits.bandwidth_gbs,
                    "dram_clock_hz": limits.dram_clock_hz,
                    "time_ms": bytes_ns / 1e6,
                    "implied_gbs": bytes / score_ns,
                },
                "compute": compute_json,
                "device": peaks.name,
            }),
        ));
    }
    RuleOutcome::ran_in_part(CHECK, findings, not_judged)
}

/// One input shape's timed calls and their score.
#[derive(Debug)]
struct TimedShape<'a> {
    signature: String,
    /// A timed trial of this shape (its inputs and reference outputs give the floor).
    trial: &'a TrialEvidence,
    trials: Vec<u32>,
    score_ms: f64,
}

/// The timed trials grouped by their inputs' shapes, each with its score: the verdict's score
/// when every timed call had the same shapes; else the median of each shape's scored samples
/// (the n-th timed trial is the output of the n-th candidate block).
fn timed_shapes<'a>(
    evidence: &'a EvalEvidence,
    timing: &TimingSummary,
) -> Result<Vec<TimedShape<'a>>, String> {
    let timed: Vec<&TrialEvidence> = evidence
        .trials
        .iter()
        .filter(|t| t.phase == TrialPhase::Timed)
        .collect();
    let Some(first) = timed.first() else {
        return Err("no timed trial records the inputs that were timed".to_string());
    };
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (n, trial) in timed.iter().enumerate() {
        groups.entry(input_signature(trial)).or_default().push(n);
    }
    if groups.len() == 1 {
        return Ok(vec![TimedShape {
            signature: input_signature(first),
            trial: first,
            trials: trial_indices(&timed),
            score_ms: timing.score_ms,
        }]);
    }
    let blocks: Vec<_> = evidence
        .samples
        .iter()
        .filter(|b| b.side == Side::Candidate)
        .collect();
    if blocks.len() != timed.len() {
        return Err(format!(
            "the timed trials have {} input shapes, and their {} outputs do not pair with the {} \
             candidate blocks",
            groups.len(),
            timed.len(),
            blocks.len()
        ));
    }
    let mut shapes = Vec::new();
    for (signature, members) in groups {
        let mut times: Vec<f64> = members
            .iter()
            .map(|&n| blocks[n])
            .filter(|block| unscored_reasons(block).is_empty())
            .flat_map(|block| block.times_ms.iter().copied())
            .filter(|t| t.is_finite() && *t > 0.0)
            .collect();
        if times.is_empty() {
            continue;
        }
        times.sort_by(f64::total_cmp);
        let trials: Vec<&TrialEvidence> = members.iter().map(|&n| timed[n]).collect();
        shapes.push(TimedShape {
            signature,
            trial: trials[0],
            trials: trial_indices(&trials),
            score_ms: percentile_of_sorted(&times, 50.0),
        });
    }
    Ok(shapes)
}

fn trial_indices(trials: &[&TrialEvidence]) -> Vec<u32> {
    let mut indices: Vec<u32> = trials.iter().map(|t| t.index).collect();
    indices.dedup();
    indices
}

/// The device's limits the floors are taken at.
struct Limits {
    /// Peak DRAM bandwidth at the highest DRAM clock known (published or seen).
    bandwidth_gbs: f64,
    dram_clock_hz: Option<f64>,
    /// The highest SM clock the device runs at: the compute peaks are scaled to it.
    sm_clock_hz: Option<f64>,
    l2_bytes: Option<f64>,
}

impl Limits {
    /// Upper bounds: the timing may run at clocks the work pass did not see, so each clock is
    /// the highest of the table's and the ones recorded (the work pass's DRAM clock,
    /// `nvidia-smi`'s SM clocks around the timing blocks).
    fn of(evidence: &EvalEvidence, peaks: &DevicePeaks, work: &[WorkCall]) -> Limits {
        let seen_dram = work.iter().filter_map(|c| c.dram_clock_hz).reduce(f64::max);
        let table_dram = peaks.memory_clock_mhz.map(|mhz| mhz * 1e6);
        let dram_clock_hz = max_of(seen_dram, table_dram);
        let bandwidth_gbs = match (seen_dram, table_dram) {
            (Some(seen), Some(table)) if seen > table => peaks.bandwidth_at(Some(seen)),
            _ => peaks.memory_bandwidth_gbs,
        };
        let seen_sm = evidence
            .samples
            .iter()
            .filter(|b| b.side == Side::Candidate)
            .flat_map(|b| [&b.conditions_before, &b.conditions_after])
            .flatten()
            .flat_map(|c| [c.sm_clock_mhz, c.max_sm_clock_mhz])
            .flatten()
            .filter(|mhz| mhz.is_finite() && *mhz > 0.0)
            .reduce(f64::max);
        let sm_clock_hz = max_of(seen_sm, peaks.boost_clock_mhz).map(|mhz| mhz * 1e6);
        Limits {
            bandwidth_gbs,
            dram_clock_hz,
            sm_clock_hz,
            l2_bytes: peaks.l2_cache_bytes(),
        }
    }
}

fn max_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The least time the counted FLOPs of one shape's calls take.
struct ComputeFloor {
    time_ns: f64,
    limited_by: Precision,
    flops_of_limit: f64,
    peak_tflops: f64,
    flops_json: Value,
}

/// The least compute time of the work pass's calls on `signature`'s inputs (the call that
/// counted the least), or why it cannot be taken.
fn compute_floor(
    evidence: &EvalEvidence,
    peaks: &DevicePeaks,
    limits: &Limits,
    work: &[WorkCall],
    signature: &str,
) -> Result<ComputeFloor, String> {
    let calls: Vec<&WorkCall> = work
        .iter()
        .filter(|c| c.trial.is_some_and(|t| input_signature(t) == signature))
        .collect();
    if calls.is_empty() {
        return Err("no work-pass call had these inputs".to_string());
    }
    let mut best: Option<ComputeFloor> = None;
    for call in calls {
        let counted = counted(&call.flops);
        if counted.is_empty() {
            continue;
        }
        if let Some(why) = counted
            .iter()
            .find_map(|(precision, _)| untrusted_flops(evidence, *precision))
        {
            return Err(why);
        }
        let Some((time_ns, limited_by)) =
            peaks.min_compute_time_ns(&call.flops, limits.sm_clock_hz)
        else {
            let missing: Vec<&str> = counted
                .iter()
                .filter(|(p, _)| peaks.peak(*p).is_none())
                .map(|(p, _)| precision_name(*p))
                .collect();
            return Err(format!(
                "the device table has no peak for {}",
                missing.join(", ")
            ));
        };
        let flops_of_limit = counted
            .iter()
            .find(|(p, _)| *p == limited_by)
            .map_or(0.0, |(_, n)| *n);
        let floor = ComputeFloor {
            time_ns,
            limited_by,
            flops_of_limit,
            peak_tflops: peaks.peak_at(limited_by, limits.sm_clock_hz).unwrap_or(0.0),
            flops_json: counted
                .iter()
                .map(|(p, n)| (precision_name(*p).to_string(), json!(n)))
                .collect::<serde_json::Map<_, _>>()
                .into(),
        };
        if best.as_ref().is_none_or(|b| floor.time_ns < b.time_ns) {
            best = Some(floor);
        }
    }
    best.ok_or_else(|| "the work pass counted no FLOPs".to_string())
}

/// The precisions with a positive count.
fn counted(flops: &FlopCounts) -> Vec<(Precision, f64)> {
    flops
        .by_precision()
        .into_iter()
        .filter_map(|(p, n)| Some((p, n.filter(|n| *n > 0.0)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::calibration;
    use crate::eval::work_captures::{launch, set_score, tensor, work_evidence};
    use crate::model::calibration::CalibratedQuantity;

    const N: u64 = 1 << 24;

    /// The H200's 8192³ FP8 matmul (`torch._scaled_mm`) as each call's work, timed at `ms`.
    fn fp8_matmul_timed_at(ms: f64) -> EvalEvidence {
        let a = tensor("float8_e4m3fn", &[8192, 8192], 1);
        let mut b_t = a.clone();
        b_t.stride = vec![1, 8192];
        let scale = tensor("float32", &[], 4);
        let mut e = work_evidence(
            &[a, b_t, scale.clone(), scale],
            &[tensor("bfloat16", &[8192, 8192], 2)],
            &[launch("fp8_matmul", 4)],
        );
        set_score(&mut e, ms);
        e
    }

    /// An add of two `n`-float vectors timed at `ms`, with no work pass.
    fn add_timed_at(n: u64, ms: f64) -> EvalEvidence {
        let x = tensor("float32", &[n], 4);
        let mut e = work_evidence(&[x.clone(), x.clone()], &[x], &[]);
        e.work = None;
        e.settings.work_pass = false;
        set_score(&mut e, ms);
        e
    }

    #[test]
    fn the_captured_fp8_matmul_at_its_own_time_is_below_the_roofline() {
        // 750.6 µs: what ncu measured the kernel at.
        let outcome = run(check, &fp8_matmul_timed_at(0.7506));
        assert!(outcome.check.ran);
        assert!(outcome.findings.is_empty(), "{:#?}", outcome.findings);
        assert!(outcome.check.not_judged.is_empty(), "{:?}", outcome.check);
    }

    #[test]
    fn a_time_the_tensor_cores_cannot_give_is_above_the_roofline() {
        // Its 1.1017e12 FP8 FLOPs need 514.5 µs at 1979 TFLOP/s scaled from 1830 to 1980 MHz.
        let outcome = run(check, &fp8_matmul_timed_at(0.3));
        assert_eq!(kinds(&outcome), [FindingKind::AboveRoofline]);
        let f = &outcome.findings[0];
        let needed_ns = 1_101_659_111_424.0 / (1979.0 * 1980.0 / 1830.0 * 1e3);
        assert!(
            (f.measured.unwrap() - needed_ns / 0.3e6).abs() < 1e-9,
            "{f:#?}"
        );
        assert_eq!(f.limit, Some(MARGIN));
        assert_eq!(f.evidence["compute"]["limited_by"], "tensor_fp8");
        assert_eq!(f.evidence["compute"]["calibration"], "uncalibrated");
        assert_eq!(f.evidence["bytes"]["l2_bytes"], 62_914_560.0);
        // Inputs 2 × 64 MiB + two scales, the bf16 output beyond the L2.
        assert_eq!(
            f.evidence["bytes"]["floor_bytes"],
            2.0 * 67_108_864.0 + 8.0 + (134_217_728.0 - 62_914_560.0)
        );
        assert!(f.message.contains("tensor_fp8"), "{}", f.message);
    }

    #[test]
    fn the_bytes_floor_needs_no_work_pass() {
        // vector_add's own time on the H200 (58.8 µs) is within the roofline.
        let outcome = run(check, &add_timed_at(N, 0.058784));
        assert!(outcome.findings.is_empty(), "{:#?}", outcome.findings);
        assert_eq!(
            outcome.check.not_judged,
            ["compute: the work pass was not asked for (work_pass off)"]
        );
        // 20 µs for 138.4 MB (inputs, and the output beyond the L2) is 6.9 TB/s on a 4.8 TB/s GPU.
        let outcome = run(check, &add_timed_at(N, 0.02));
        assert_eq!(kinds(&outcome), [FindingKind::AboveRoofline]);
        let f = &outcome.findings[0];
        let floor = 2.0 * 67_108_864.0 + (67_108_864.0 - 62_914_560.0);
        assert!((f.measured.unwrap() - floor / 4800.0 / 20_000.0).abs() < 1e-9);
        assert!(f.evidence["compute"].is_null());
        assert!(f.message.contains("at 4800 GB/s"), "{}", f.message);
    }

    #[test]
    fn each_timed_shape_is_judged_apart() {
        let mut e = add_timed_at(N, 0.058784);
        // Timed trial 3 ran on vectors 16× shorter, and its block reads 0.5 µs.
        let small = tensor("float32", &[N / 16], 4);
        for trial in e.trials.iter_mut().filter(|t| t.index == 3) {
            trial.inputs = vec![small.clone(), small.clone()];
            trial.reference_outputs = vec![small.clone()];
        }
        for block in e
            .samples
            .iter_mut()
            .filter(|b| b.side == Side::Candidate && b.block == 1)
        {
            block.times_ms = vec![0.0005; block.times_ms.len()];
        }
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::AboveRoofline]);
        let f = &outcome.findings[0];
        assert_eq!(f.evidence["trials"], json!([3]));
        assert_eq!(f.evidence["score_ms"], 0.0005);
        // 8 MiB of inputs, the 4 MiB output left in the L2.
        assert_eq!(f.evidence["bytes"]["floor_bytes"], 8_388_608.0);
    }

    #[test]
    fn an_untrusted_flop_counter_leaves_the_bytes_floor() {
        let mut e = fp8_matmul_timed_at(0.3);
        let mut c = calibration();
        c.checks
            .retain(|c| c.quantity != CalibratedQuantity::TensorFp8Flops);
        e.calibration = Some(c);
        let outcome = run(check, &e);
        assert!(outcome.findings.is_empty(), "{:#?}", outcome.findings);
        assert_eq!(outcome.check.not_judged.len(), 1);
        assert!(
            outcome.check.not_judged[0].contains("marks the tensor_fp8_flops counter untrusted"),
            "{:?}",
            outcome.check.not_judged
        );
    }

    #[test]
    fn a_precision_without_a_peak_leaves_the_compute_floor_unjudged() {
        // The same FP8 work on an A100, whose table entry has no FP8 peak (no FP8 tensor cores).
        let mut e = fp8_matmul_timed_at(0.3);
        e.environment.device_name = Some("NVIDIA A100-SXM4-80GB".into());
        let outcome = run(check, &e);
        assert!(outcome.check.ran);
        assert_eq!(
            outcome.check.not_judged,
            [format!(
                "compute, inputs {}: the device table has no peak for tensor_fp8",
                input_signature(&e.trials[0])
            )]
        );
    }

    #[test]
    fn without_a_flush_a_known_device_or_a_timed_trial_it_does_not_run() {
        let mut e = add_timed_at(N, 0.02);
        e.settings.flush_l2 = false;
        assert!(
            run(check, &e)
                .check
                .why_not
                .unwrap()
                .contains("--no-flush-l2")
        );
        let mut e = add_timed_at(N, 0.02);
        e.environment.device_name = Some("GeForce GTX 480".into());
        assert!(!run(check, &e).check.ran);
        e.environment.device_name = None;
        assert_eq!(
            run(check, &e).check.why_not.as_deref(),
            Some("the evidence names no device")
        );
        let mut e = add_timed_at(N, 0.02);
        e.trials.retain(|t| t.phase != TrialPhase::Timed);
        assert_eq!(
            run(check, &e).check.why_not.as_deref(),
            Some("no timed trial records the inputs that were timed")
        );
    }

    #[test]
    fn real_h200_scores_are_below_the_roofline() {
        // 268 MB in, 268 MB out at 0.1275 ms: 0.77 of the bandwidth on this floor.
        for name in ["honest_relu_torch", "hack_decoy"] {
            let outcome = run(check, &crate::eval::h200_captures::evidence(name));
            assert!(outcome.check.ran, "{name}: {:?}", outcome.check);
            assert!(
                outcome.findings.is_empty(),
                "{name}: {:#?}",
                outcome.findings
            );
        }
    }
}
