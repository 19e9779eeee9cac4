//! Did the kernel do the work? The work pass's counters of each call against the least a
//! correct kernel must do: DRAM bytes read against the bytes its inputs hold (the work pass
//! flushes the caches before each kernel, so every input byte a kernel uses is a DRAM read),
//! DRAM bytes written against the outputs beyond what the L2 can keep, and FLOPs against the
//! user's analytic count.

use serde_json::{Value, json};

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::array_floor::call_floor;
use crate::eval::counter_trust::{calibration_note, precision_name, untrusted, untrusted_flops};
use crate::eval::device_peaks::device_peaks;
use crate::eval::evidence::{EvalEvidence, TrialEvidence, TrialPhase};
use crate::eval::verdict::{Finding, FindingKind};
use crate::eval::work_pass::{WorkCall, candidate_work, work_calls};
use crate::model::calibration::CalibratedQuantity;

pub const CHECK: &str = "work_floor";
/// A call that read, wrote or computed less than this share of its floor did too little work.
/// Honest H200 kernels read 1.0000–1.0007 of their inputs (tests/fixtures/eval-work); a trusted
/// counter may read 5 % low (`model::calibration::TRUSTED_WITHIN`): 0.9 leaves twice that.
pub const MARGIN: f64 = 0.9;
/// Floors under this many bytes are not judged: the captures behind the margin all move 8 MB or
/// more, and a kernel that skips part of less gains nothing worth the risk of a false alarm.
pub const MIN_FLOOR_BYTES: f64 = 1024.0 * 1024.0;

pub fn check(facts: &Facts) -> RuleOutcome {
    let evidence = facts.evidence;
    if let Some(outcome) = no_kernel_in_the_calls(evidence) {
        return outcome;
    }
    let pass = match candidate_work(evidence) {
        Ok(pass) => pass,
        Err(why) => return RuleOutcome::skipped(CHECK, why),
    };
    if pass.cache_control.as_deref() != Some("all") {
        return RuleOutcome::skipped(
            CHECK,
            format!(
                "the work pass did not flush the caches before each kernel (cache control {}): \
                 its DRAM reads are not first touches",
                pass.cache_control.as_deref().unwrap_or("not recorded")
            ),
        );
    }
    let calls = work_calls(evidence, pass);
    if calls.is_empty() {
        return RuleOutcome::skipped(CHECK, "the work pass recorded no launch in a call");
    }
    let judged: Vec<(&WorkCall, &TrialEvidence)> = calls
        .iter()
        .filter_map(|call| Some((call, call.trial?)))
        .collect();
    if judged.is_empty() {
        let ids: Vec<String> = calls.iter().map(|c| c.call.to_string()).collect();
        return RuleOutcome::skipped(
            CHECK,
            format!(
                "no trial records the inputs of the work pass's calls ({})",
                ids.join(", ")
            ),
        );
    }
    let mut parts = Parts::default();
    reads(evidence, &judged, &mut parts);
    writes(evidence, &judged, &mut parts);
    if let Some((expected, source)) = flop_floor(evidence) {
        flops(evidence, &judged, expected, source, &mut parts);
    }
    if parts.judged == 0 {
        return RuleOutcome::skipped(CHECK, parts.not_judged.join("; "));
    }
    RuleOutcome::ran_in_part(CHECK, parts.findings, parts.not_judged)
}

/// The share of the reference's analytic FLOPs a legitimate algorithm may do: Winograd
/// F(4×4, 3×3) does 36 multiplications per 4×4 tile of a 3×3 convolution where the direct one
/// does 144 (0.25); Strassen does 7/8 of a matmul's per level (0.77 at two). Counted FLOPs
/// include the transforms' additions, so a Winograd kernel reads above this. An FFT
/// convolution with large filters can go lower: give `--flops` for such a problem.
pub const ALGORITHM_SHARE: f64 = 0.25;

/// The FLOPs one call must do and where the count came from: the user's `--flops` as given, or
/// `ALGORITHM_SHARE` of the reference's analytic count (`FlopCounterMode`).
pub fn flop_floor(evidence: &EvalEvidence) -> Option<(f64, &'static str)> {
    let positive = |f: &f64| f.is_finite() && *f > 0.0;
    if let Some(given) = evidence.settings.flops_per_call.filter(positive) {
        return Some((given, "flops_per_call"));
    }
    let counted = evidence.problem.reference_flops.filter(positive)?;
    Some((ALGORITHM_SHARE * counted, "reference_flops"))
}

/// A work pass that ran its calls to correct outputs and recorded no kernel at all: no kernel
/// read the inputs (a memset, a copy engine or the host made the outputs; seen on the H200 for
/// a `torch.zeros` candidate). Judged only for inputs of `MIN_FLOOR_BYTES` or more and counters
/// the calibration trusts; `None` when the pass recorded launches, failed or ran no call.
fn no_kernel_in_the_calls(evidence: &EvalEvidence) -> Option<RuleOutcome> {
    let pass = evidence.work.as_ref()?;
    if pass.error.is_some() || !pass.launches.is_empty() {
        return None;
    }
    let calls: Vec<&TrialEvidence> = evidence
        .trials
        .iter()
        .filter(|t| t.phase == TrialPhase::Work)
        .collect();
    let (call, floor) = calls
        .iter()
        .map(|t| (t.index, call_floor(t).read as f64))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if floor < MIN_FLOOR_BYTES {
        return None;
    }
    if let Some(why) = untrusted(evidence, CalibratedQuantity::DramBytesRead) {
        return Some(RuleOutcome::skipped(CHECK, format!("reads: {why}")));
    }
    let shortfall = Shortfall {
        call,
        measured: 0.0,
        floor,
        launch_ids: Vec::new(),
    };
    let finding = shortfall_finding(
        evidence,
        vec![shortfall],
        "B",
        |s| {
            format!(
                "no kernel ran inside the work pass's {} call(s) ({}): no kernel read the inputs' \
                 {} (call {}); the outputs came from a memset, a copy or the host",
                calls.len(),
                pass.profiler,
                megabytes(s.floor),
                s.call
            )
        },
        json!({ "quantity": "dram_bytes_read", "launches": 0 }),
    );
    Some(RuleOutcome::ran_in_part(
        CHECK,
        finding.into_iter().collect(),
        Vec::new(),
    ))
}

/// What the three comparisons found, and which could not be made.
#[derive(Default)]
struct Parts {
    judged: usize,
    findings: Vec<Finding>,
    not_judged: Vec<String>,
}

/// One call's counter against its floor.
struct Shortfall {
    call: u32,
    measured: f64,
    floor: f64,
    launch_ids: Vec<u64>,
}

impl Shortfall {
    fn share(&self) -> f64 {
        self.measured / self.floor
    }

    fn json(&self) -> Value {
        json!({
            "call": self.call,
            "measured": self.measured,
            "floor": self.floor,
            "share": self.share(),
            "launch_ids": self.launch_ids,
        })
    }
}

/// Why no call could be compared.
enum NotCompared {
    /// Every floor was under the minimum judged; the largest of them.
    Small(f64),
    /// The calls whose launches lack the counter.
    Uncounted(Vec<String>),
}

/// Compare each call's `counter` with its `floor`, both in one unit: the calls that fell short,
/// or why none could be compared.
fn compare(
    judged: &[(&WorkCall, &TrialEvidence)],
    floor: impl Fn(&WorkCall, &TrialEvidence) -> f64,
    counter: impl Fn(&WorkCall) -> Option<f64>,
    minimum: f64,
) -> Result<Vec<Shortfall>, NotCompared> {
    let mut compared = 0;
    let mut shortfalls = Vec::new();
    let mut largest_small = f64::NEG_INFINITY;
    let mut uncounted = Vec::new();
    for (call, trial) in judged {
        let floor = floor(call, trial);
        if floor < minimum || floor <= 0.0 {
            largest_small = largest_small.max(floor);
            continue;
        }
        let Some(measured) = counter(call) else {
            uncounted.push(call.call.to_string());
            continue;
        };
        compared += 1;
        if measured < MARGIN * floor {
            shortfalls.push(Shortfall {
                call: call.call,
                measured,
                floor,
                launch_ids: call.launch_ids(),
            });
        }
    }
    if compared > 0 {
        Ok(shortfalls)
    } else if !uncounted.is_empty() {
        Err(NotCompared::Uncounted(uncounted))
    } else {
        Err(NotCompared::Small(largest_small))
    }
}

/// The call that fell furthest short, as a finding.
fn shortfall_finding(
    evidence: &EvalEvidence,
    mut shortfalls: Vec<Shortfall>,
    unit: &'static str,
    describe: impl Fn(&Shortfall) -> String,
    extra: Value,
) -> Option<Finding> {
    shortfalls.sort_by(|a, b| a.share().total_cmp(&b.share()));
    let worst = shortfalls.first()?;
    let mut record = json!({
        "calls": shortfalls.iter().map(Shortfall::json).collect::<Vec<_>>(),
        "margin": MARGIN,
        "calibration": calibration_note(evidence),
    });
    if let (Some(record), Value::Object(extra)) = (record.as_object_mut(), extra) {
        record.extend(extra);
    }
    Some(finding(
        FindingKind::TooLittleWork,
        CHECK,
        describe(worst),
        Measure {
            measured: worst.measured,
            limit: MARGIN * worst.floor,
            unit,
        },
        record,
    ))
}

fn reads(evidence: &EvalEvidence, judged: &[(&WorkCall, &TrialEvidence)], parts: &mut Parts) {
    if let Some(why) = untrusted(evidence, CalibratedQuantity::DramBytesRead) {
        parts.not_judged.push(format!("reads: {why}"));
        return;
    }
    let compared = compare(
        judged,
        |_, trial| call_floor(trial).read as f64,
        |call| call.dram_bytes_read,
        MIN_FLOOR_BYTES,
    );
    match compared {
        Err(NotCompared::Small(largest)) => parts.not_judged.push(format!(
            "reads: the inputs hold {} at most, under the {} judged",
            megabytes(largest),
            megabytes(MIN_FLOOR_BYTES)
        )),
        Err(NotCompared::Uncounted(calls)) => parts.not_judged.push(format!(
            "reads: call(s) {} have launches without a DRAM read counter",
            calls.join(", ")
        )),
        Ok(shortfalls) => {
            parts.judged += 1;
            let describe = |s: &Shortfall| {
                format!(
                    "call {} read {} from DRAM, {:.0} % of the {} its inputs hold: a correct \
                     kernel reads every input at least once, and the caches were flushed before \
                     each kernel",
                    s.call,
                    megabytes(s.measured),
                    s.share() * 100.0,
                    megabytes(s.floor)
                )
            };
            parts.findings.extend(shortfall_finding(
                evidence,
                shortfalls,
                "bytes",
                describe,
                json!({ "quantity": "dram_bytes_read" }),
            ));
        }
    }
}

fn writes(evidence: &EvalEvidence, judged: &[(&WorkCall, &TrialEvidence)], parts: &mut Parts) {
    if let Some(why) = untrusted(evidence, CalibratedQuantity::DramBytesWrite) {
        parts.not_judged.push(format!("writes: {why}"));
        return;
    }
    let l2 = match device_peaks(evidence) {
        Ok(peaks) => peaks.l2_cache_bytes(),
        Err(why) => {
            parts.not_judged.push(format!(
                "writes: {why}, so the L2 size (output that may stay there unwritten) is unknown"
            ));
            return;
        }
    };
    let Some(l2) = l2 else {
        parts.not_judged.push(
            "writes: the device table gives no L2 size (output that may stay there unwritten)"
                .to_string(),
        );
        return;
    };
    // Written data may still sit dirty in the L2 when a kernel ends, and the profiler's flush
    // before the next kernel writes it back outside any kernel's counters: a call of n launches
    // may leave up to n L2s unwritten (seen on the H200: a grouped 3-D transposed convolution
    // wrote its 113 MB output in four cuDNN launches, 34 MB of it counted).
    let compared = compare(
        judged,
        |call, trial| call_floor(trial).write as f64 - l2 * call.launches.len().max(1) as f64,
        |call| call.dram_bytes_write,
        MIN_FLOOR_BYTES,
    );
    match compared {
        Err(NotCompared::Small(_)) => parts.not_judged.push(format!(
            "writes: the outputs exceed the L2 ({}) times the call's launches by less than {}: \
             they may stay there, unwritten, when each kernel ends",
            megabytes(l2),
            megabytes(MIN_FLOOR_BYTES)
        )),
        Err(NotCompared::Uncounted(calls)) => parts.not_judged.push(format!(
            "writes: call(s) {} have launches without a DRAM write counter",
            calls.join(", ")
        )),
        Ok(shortfalls) => {
            parts.judged += 1;
            let describe = |s: &Shortfall| {
                format!(
                    "call {} wrote {} to DRAM, {:.0} % of the {} by which its outputs exceed the \
                     L2 ({}) times its launches: a correct kernel writes every output once",
                    s.call,
                    megabytes(s.measured),
                    s.share() * 100.0,
                    megabytes(s.floor),
                    megabytes(l2)
                )
            };
            parts.findings.extend(shortfall_finding(
                evidence,
                shortfalls,
                "bytes",
                describe,
                json!({ "quantity": "dram_bytes_write", "l2_bytes": l2 }),
            ));
        }
    }
}

fn flops(
    evidence: &EvalEvidence,
    judged: &[(&WorkCall, &TrialEvidence)],
    expected: f64,
    source: &'static str,
    parts: &mut Parts,
) {
    // Only the counters that counted something carry the judgment; an untrusted one of those
    // could under-read.
    let untrusted: Vec<String> = judged
        .iter()
        .flat_map(|(call, _)| call.flops.by_precision())
        .filter(|(_, count)| count.is_some_and(|c| c > 0.0))
        .filter_map(|(precision, _)| untrusted_flops(evidence, precision))
        .collect();
    if let Some(why) = untrusted.first() {
        parts.not_judged.push(format!("flops: {why}"));
        return;
    }
    // Launches that were counted (they carry counters) but show no FLOP: the call did none. A
    // problem with analytic FLOPs whose work pass counts none is a finding, not a skip.
    let counted = |call: &WorkCall| {
        counted_flops(call).or_else(|| {
            call.launches
                .iter()
                .any(|l| l.counters.is_some())
                .then_some(0.0)
        })
    };
    let compared = compare(judged, |_, _| expected, counted, 0.0);
    match compared {
        Err(_) => parts
            .not_judged
            .push("flops: the work pass has no FLOP counter".to_string()),
        Ok(shortfalls) => {
            parts.judged += 1;
            let describe = |s: &Shortfall| {
                let whence = match source {
                    "reference_flops" => format!(
                        "{:.0} % of the reference's analytic count, the least a legitimate \
                         algorithm does",
                        ALGORITHM_SHARE * 100.0
                    ),
                    _ => "flops_per_call".to_string(),
                };
                format!(
                    "call {} did {:.4e} FLOPs, {:.0} % of the {:.4e} one call must do ({whence})",
                    s.call,
                    s.measured,
                    s.share() * 100.0,
                    s.floor
                )
            };
            let split = |call: u32| -> Value {
                judged
                    .iter()
                    .find(|(c, _)| c.call == call)
                    .map(|(c, _)| {
                        c.flops
                            .by_precision()
                            .into_iter()
                            .filter_map(|(p, n)| Some((precision_name(p).to_string(), json!(n?))))
                            .collect::<serde_json::Map<_, _>>()
                            .into()
                    })
                    .unwrap_or(Value::Null)
            };
            let worst = shortfalls
                .iter()
                .min_by(|a, b| a.share().total_cmp(&b.share()))
                .map(|s| split(s.call))
                .unwrap_or(Value::Null);
            parts.findings.extend(shortfall_finding(
                evidence,
                shortfalls,
                "FLOPs",
                describe,
                json!({ "quantity": "flops", "by_precision": worst, "floor_from": source }),
            ));
        }
    }
}

/// Every FLOP (and tensor integer op) the call's counters read; `None` when none was counted.
/// FP16 at the upper end of its interval (`HFMA2.MMA` counted as FMAs): a floor must not
/// accuse a kernel of work it may have done.
fn counted_flops(call: &WorkCall) -> Option<f64> {
    let flops = &call.flops;
    let mut counts: Vec<f64> = flops
        .by_precision()
        .into_iter()
        .filter_map(|(_, count)| count)
        .collect();
    if let (Some(all), Some(vector)) = (flops.fp16, flops.vector_fp16()) {
        counts.push(all - vector);
    }
    (!counts.is_empty()).then(|| counts.iter().sum())
}

fn megabytes(bytes: f64) -> String {
    format!("{:.1} MB", bytes / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::calibration;
    use crate::eval::work_captures::{launch, tensor, work_evidence};

    const N: u64 = 1 << 24;

    /// `vector_add` of the H200 capture as each call's work, on inputs of `n` floats each.
    fn vector_add_on(n: u64) -> EvalEvidence {
        let x = tensor("float32", &[n], 4);
        work_evidence(&[x.clone(), x.clone()], &[x], &[launch("kernels", 0)])
    }

    #[test]
    fn a_memset_candidate_whose_calls_ran_no_kernel_is_flagged() {
        // H200 capture: `torch.zeros` outputs; the work pass's ncu saw no launch at all.
        let e = crate::eval::h200_captures::evidence("hack_memset");
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::TooLittleWork]);
        let finding = &outcome.findings[0];
        assert!(
            finding.message.contains("no kernel ran inside"),
            "{}",
            finding.message
        );
        // The mean problem, honest: its one reduction read its input once.
        let honest = crate::eval::h200_captures::evidence("honest_mean_torch");
        assert_eq!(kinds(&run(check, &honest)), []);
    }

    #[test]
    fn the_captured_vector_add_did_its_work() {
        let outcome = run(check, &vector_add_on(N));
        assert!(outcome.check.ran, "{:?}", outcome.check);
        assert!(outcome.findings.is_empty(), "{:#?}", outcome.findings);
        // Its 64 MiB output exceeds the H200's 60 MiB L2: writes were judged too.
        assert!(outcome.check.not_judged.is_empty(), "{:?}", outcome.check);
    }

    #[test]
    fn a_kernel_that_processed_half_its_input_is_flagged() {
        // The same real launch, now the call of a problem twice its size: it read and wrote half.
        let outcome = run(check, &vector_add_on(2 * N));
        assert_eq!(
            kinds(&outcome),
            [FindingKind::TooLittleWork, FindingKind::TooLittleWork]
        );
        let reads = &outcome.findings[0];
        assert_eq!(reads.measured, Some(134_228_992.0));
        assert_eq!(reads.limit, Some(0.9 * 2.0 * 2.0 * 4.0 * N as f64));
        assert_eq!(reads.evidence["quantity"], "dram_bytes_read");
        assert_eq!(reads.evidence["calls"].as_array().unwrap().len(), 2);
        assert_eq!(reads.evidence["calibration"], "uncalibrated");
        assert!(
            reads
                .message
                .starts_with("call 10 read 134.2 MB from DRAM, 50 % of the 268.4 MB"),
            "{}",
            reads.message
        );
        let writes = &outcome.findings[1];
        assert_eq!(writes.evidence["quantity"], "dram_bytes_write");
        // Output 134,217,728 B less the 62,914,560 B L2.
        assert_eq!(writes.limit, Some(0.9 * (134_217_728.0 - 62_914_560.0)));
    }

    #[test]
    fn a_small_output_is_not_judged_for_writes() {
        // reduce_sum: 64 MiB in, one float out.
        let x = tensor("float32", &[N], 4);
        let e = work_evidence(&[x], &[tensor("float32", &[], 4)], &[launch("kernels", 3)]);
        let outcome = run(check, &e);
        assert!(outcome.findings.is_empty(), "{:#?}", outcome.findings);
        assert_eq!(
            outcome.check.not_judged,
            [
                "writes: the outputs exceed the L2 (62.9 MB) times the call's launches by less \
                 than 1.0 MB: they may stay there, unwritten, when each kernel ends"
            ]
        );
    }

    #[test]
    fn without_flops_the_references_analytic_count_is_the_floor_with_its_margin() {
        // matmul_naive, N = 1024: 2·N³ FP32 FLOPs counted on the H200.
        let n3 = 1024f64.powi(3);
        let m = tensor("float32", &[1024, 1024], 4);
        let mut e = work_evidence(&[m.clone(), m.clone()], &[m], &[launch("kernels", 1)]);
        e.problem.reference_flops = Some(2.0 * n3);
        assert_eq!(flop_floor(&e), Some((0.5 * n3, "reference_flops")));
        assert!(run(check, &e).findings.is_empty());
        // A Strassen-like saving passes; a tenth of the work does not.
        e.problem.reference_flops = Some(2.0 * 2.0 * n3);
        assert!(run(check, &e).findings.is_empty());
        e.problem.reference_flops = Some(10.0 * 2.0 * n3);
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::TooLittleWork]);
        let f = &outcome.findings[0];
        assert_eq!(f.evidence["floor_from"], "reference_flops");
        assert!(
            f.message.contains("25 % of the reference's analytic count"),
            "{}",
            f.message
        );
        // The user's count wins, as given.
        e.settings.flops_per_call = Some(2.0 * n3);
        assert_eq!(flop_floor(&e), Some((2.0 * n3, "flops_per_call")));
        assert!(run(check, &e).findings.is_empty());
    }

    #[test]
    fn a_counted_call_with_no_flop_on_a_problem_that_has_some_is_a_finding() {
        let m = tensor("float32", &[1024, 1024], 4);
        let mut l = launch("kernels", 1);
        if let Some(c) = l.counters.as_mut() {
            c.flops = crate::model::FlopCounts::default();
        }
        let mut e = work_evidence(&[m.clone(), m.clone()], &[m], &[l]);
        e.problem.reference_flops = Some(2.0 * 1024f64.powi(3));
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::TooLittleWork]);
        assert_eq!(outcome.findings[0].measured, Some(0.0));
        // Without a FLOP count for the problem, nothing is said about FLOPs.
        e.problem.reference_flops = None;
        assert!(run(check, &e).findings.is_empty());
    }

    #[test]
    fn flops_are_compared_with_the_users_count() {
        // matmul_naive, N = 1024: 2·N³ FP32 FLOPs counted.
        let m = tensor("float32", &[1024, 1024], 4);
        let mut e = work_evidence(&[m.clone(), m.clone()], &[m], &[launch("kernels", 1)]);
        e.settings.flops_per_call = Some(2.0 * 1024f64.powi(3));
        let outcome = run(check, &e);
        assert!(outcome.findings.is_empty(), "{:#?}", outcome.findings);
        e.settings.flops_per_call = Some(4.0 * 1024f64.powi(3));
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::TooLittleWork]);
        let f = &outcome.findings[0];
        assert_eq!(f.unit.as_deref(), Some("FLOPs"));
        assert_eq!(f.measured, Some(2.0 * 1024f64.powi(3)));
        assert_eq!(f.evidence["by_precision"]["fp32"], 2.0 * 1024f64.powi(3));
    }

    #[test]
    fn a_calibration_that_distrusts_a_counter_leaves_it_unjudged_and_is_cited() {
        let mut e = vector_add_on(2 * N);
        e.calibration = Some(calibration());
        let outcome = run(check, &e);
        // Writes are 8 % off in the calibration: only the reads are judged.
        assert_eq!(kinds(&outcome), [FindingKind::TooLittleWork]);
        assert_eq!(outcome.findings[0].evidence["quantity"], "dram_bytes_read");
        assert_eq!(
            outcome.findings[0].evidence["calibration"]["tool"],
            "ncu 2025.3.1.0"
        );
        assert_eq!(outcome.check.not_judged.len(), 1);
        assert!(outcome.check.not_judged[0].starts_with("writes: the calibration (NVIDIA H200"));
        // With reads distrusted too nothing is judged: the check says why.
        if let Some(c) = e.calibration.as_mut() {
            c.checks
                .retain(|c| c.quantity != CalibratedQuantity::DramBytesRead);
        }
        let outcome = run(check, &e);
        assert!(!outcome.check.ran);
        assert!(
            outcome
                .check
                .why_not
                .unwrap()
                .starts_with("reads: the calibration")
        );
    }

    #[test]
    fn without_a_flushing_work_pass_it_does_not_run() {
        let mut e = vector_add_on(2 * N);
        if let Some(w) = e.work.as_mut() {
            w.cache_control = Some("none".into());
        }
        let outcome = run(check, &e);
        assert!(!outcome.check.ran);
        assert!(
            outcome
                .check
                .why_not
                .unwrap()
                .contains("cache control none")
        );
        e.work = None;
        assert!(
            run(check, &e)
                .check
                .why_not
                .unwrap()
                .starts_with("no work pass was recorded")
        );
    }

    #[test]
    fn an_unknown_device_leaves_writes_unjudged() {
        let mut e = vector_add_on(2 * N);
        e.environment.device_name = Some("GeForce GTX 480".into());
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::TooLittleWork]);
        assert!(outcome.check.not_judged[0].contains("is not in the device table"));
    }

    #[test]
    fn calls_without_a_recorded_trial_are_not_judged() {
        let mut e = vector_add_on(N);
        e.trials.retain(|t| t.index < 10);
        let outcome = run(check, &e);
        assert_eq!(
            outcome.check.why_not.as_deref(),
            Some("no trial records the inputs of the work pass's calls (10, 11)")
        );
    }
}
