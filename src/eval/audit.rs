//! The audit: a pure function from recorded evidence to a verdict. It derives the timing and
//! witness summaries, runs every rule (each says whether it could run), and decides the status:
//! failed when the eval stopped early, incorrect when any compared output did not match,
//! correct otherwise; passed only when correct with no finding.

use super::counter_trust::citation;
use super::evidence::EvalEvidence;
use super::rules::{Facts, RULES};
use super::timeline_facts::timeline_facts;
use super::timing::timing_summary;
use super::verdict::{Correctness, EvalVerdict, Status, VERDICT_VERSION};
use super::witness_summary::witness_facts;

/// Judge `evidence`. Pure: the same evidence always gives the same verdict.
pub fn judge(evidence: &EvalEvidence) -> EvalVerdict {
    let timing = timing_summary(evidence);
    let witness = witness_facts(evidence, timing.as_ref().ok().map(|t| t.score_ms));
    let timeline = timeline_facts(evidence);
    let facts = Facts {
        evidence,
        timing: timing.as_ref().map_err(String::as_str),
        witness: witness.as_ref().map_err(String::as_str),
        timeline: timeline.as_ref().map_err(String::as_str),
    };
    let mut checks = Vec::with_capacity(RULES.len());
    let mut findings = Vec::new();
    for rule in RULES {
        let outcome = rule(&facts);
        checks.push(outcome.check);
        findings.extend(outcome.findings);
    }
    let correctness = correctness(evidence);
    let status = if evidence.failure.is_some() {
        Status::Failed
    } else if correctness.passed < correctness.compared {
        Status::Incorrect
    } else {
        Status::Correct
    };
    let missing_checks = super::required_checks::missing(evidence, &checks);
    let pool = super::rules::fresh_inputs::figures(evidence);
    EvalVerdict {
        schema_version: VERDICT_VERSION,
        passed: status == Status::Correct && findings.is_empty() && missing_checks.is_empty(),
        status,
        correctness,
        timing: timing.ok(),
        witness: witness.ok().map(|w| w.summary),
        timeline: timeline.ok().map(|t| t.summary),
        checks,
        missing_checks,
        timed_input_sets: pool.map(|(sets, _, _)| count(sets)),
        timed_outputs_compared: pool.map(|(_, _, compared)| count(compared)),
        findings,
        failure: evidence.failure.clone(),
        calibration: evidence.calibration.as_ref().map(citation),
    }
}

/// Every compared trial, whatever its phase.
fn correctness(evidence: &EvalEvidence) -> Correctness {
    let comparisons: Vec<_> = evidence
        .trials
        .iter()
        .filter_map(|t| t.comparison.as_ref())
        .collect();
    let largest = |values: &mut dyn Iterator<Item = Option<f64>>| {
        values
            .flatten()
            .filter(|v| v.is_finite())
            .fold(None, |max: Option<f64>, v| {
                Some(max.map_or(v, |m| m.max(v)))
            })
    };
    Correctness {
        compared: count(comparisons.len()),
        passed: count(comparisons.iter().filter(|c| c.passed).count()),
        max_abs_diff: largest(&mut comparisons.iter().map(|c| c.max_abs_diff)),
        max_rel_diff: largest(&mut comparisons.iter().map(|c| c.max_rel_diff)),
        atol: evidence.settings.atol,
        rtol: evidence.settings.rtol,
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::evidence::{Failure, FailureKind, Stage, TrialPhase};
    use crate::eval::test_support::{evidence, trial};
    use crate::eval::verdict::FindingKind;

    const NOT_TRACED: &str =
        "the scored pass was not traced (--scored-trace off, or evidence from before the tracer)";

    #[test]
    fn an_honest_eval_passes_with_every_check_run() {
        let verdict = judge(&evidence());
        assert_eq!(verdict.status, Status::Correct);
        assert!(verdict.findings.is_empty(), "{:#?}", verdict.findings);
        assert!(verdict.passed, "{:?}", verdict.missing_checks);
        assert_eq!(verdict.checks.len(), RULES.len());
        // Every check ran but the two that need a work pass (none was asked for) and the pool's
        // (the CUDA timing path times one input set; not called for there: `timed_checks` 0).
        let skipped: Vec<(&str, &str)> = verdict
            .checks
            .iter()
            .filter(|c| !c.ran)
            .map(|c| (c.check.as_str(), c.why_not.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(
            skipped,
            [
                (
                    "fresh_inputs",
                    "the timed calls of candidate block 0 reused one input set and only the \
                     block's last output was compared (the cuda timing path has no input pool)"
                ),
                ("gpu_timeline", NOT_TRACED),
                (
                    "work_floor",
                    "the work pass was not asked for (work_pass off)"
                ),
                ("work_matches_scored", NOT_TRACED),
                (
                    "precision",
                    "the work pass was not asked for (work_pass off)"
                ),
            ]
        );
        assert!(verdict.calibration.is_none());
        assert_eq!(verdict.correctness.compared, 6);
        assert_eq!(verdict.correctness.passed, 6);
        assert_eq!(verdict.correctness.max_abs_diff, Some(1e-4));
        let timing = verdict.timing.unwrap();
        assert!((timing.score_ms - 0.2).abs() < 1e-12);
        assert_eq!(verdict.witness.unwrap().coverage, 1.0);
    }

    #[test]
    fn a_failed_comparison_is_incorrect_and_not_passed() {
        let mut e = evidence();
        e.trials[0] = trial(0, TrialPhase::Correctness, false);
        let verdict = judge(&e);
        assert_eq!(verdict.status, Status::Incorrect);
        assert!(!verdict.passed);
        assert_eq!(verdict.correctness.passed, 5);
        assert_eq!(verdict.correctness.max_abs_diff, Some(0.5));
    }

    #[test]
    fn a_failure_wins_over_everything() {
        let mut e = evidence();
        e.trials[0] = trial(0, TrialPhase::Correctness, false);
        e.failure = Some(Failure {
            stage: Stage::Timing,
            kind: FailureKind::Crashed,
            message: "the candidate worker died (signal 11)".into(),
            log: Some("candidate.000/stderr.log".into()),
        });
        let verdict = judge(&e);
        assert_eq!(verdict.status, Status::Failed);
        assert_eq!(verdict.failure, e.failure);
        assert!(!verdict.passed);
    }

    #[test]
    fn a_finding_alone_fails_a_correct_candidate() {
        let mut e = evidence();
        e.settings.suspicious_speedup = 2.0;
        let verdict = judge(&e);
        assert_eq!(verdict.status, Status::Correct);
        assert!(!verdict.passed);
        assert_eq!(verdict.findings[0].kind, FindingKind::SuspiciousSpeedup);
    }

    #[test]
    fn a_cpu_eval_says_why_the_witness_checks_did_not_run() {
        let mut e = evidence();
        e.problem.device = "cpu".into();
        e.witness = None;
        for b in &mut e.samples {
            b.device_state = None;
        }
        let verdict = judge(&e);
        assert!(verdict.passed, "{:#?}", verdict.findings);
        assert!(verdict.witness.is_none());
        let skipped: Vec<(&str, &str)> = verdict
            .checks
            .iter()
            .filter(|c| !c.ran)
            .map(|c| (c.check.as_str(), c.why_not.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(
            skipped,
            [
                (
                    "fresh_inputs",
                    "the timed calls of candidate block 0 reused one input set and only the \
                     block's last output was compared (the cpu timing path has no input pool)"
                ),
                ("gpu_timeline", "no GPU timeline on cpu"),
                ("witness_time", "no witness on cpu"),
                ("witness_ranges", "no witness on cpu"),
                ("call_consistency", "no witness on cpu"),
                ("candidate_kernels", "no witness on cpu"),
                ("work_floor", "no work pass on cpu"),
                ("work_matches_scored", "no GPU timeline on cpu"),
                ("roofline", "no GPU peaks on cpu"),
                ("precision", "no work pass on cpu"),
                ("device_reset", "no timing block recorded its device state"),
            ]
        );
    }

    #[test]
    fn a_check_called_for_that_did_not_run_fails_passed_and_is_named() {
        // Draws of timed outputs were planned, but the blocks recorded no pool.
        let mut e = evidence();
        e.settings.timed_checks = 3;
        let verdict = judge(&e);
        assert_eq!(verdict.status, Status::Correct);
        assert!(verdict.findings.is_empty());
        assert!(!verdict.passed);
        assert_eq!(verdict.missing_checks.len(), 1);
        assert!(verdict.missing_checks[0].starts_with("fresh_inputs: the timed calls"));
        // A work pass planned on a problem with a FLOP count whose work pass recorded nothing.
        let mut e = evidence();
        e.settings.work_pass = true;
        e.problem.reference_flops = Some(1.0e9);
        let verdict = judge(&e);
        assert!(!verdict.passed);
        assert!(
            verdict.missing_checks[0].starts_with("work_floor: no work pass was recorded"),
            "{:?}",
            verdict.missing_checks
        );
    }

    #[test]
    fn a_kernel_that_did_half_the_work_is_correct_but_not_passed() {
        // The H200's vector_add as the work of an add twice its size: correct outputs (the
        // comparison is the test evidence's), half the bytes read and written.
        use crate::eval::work_captures::{launch, tensor, work_evidence};
        let x = tensor("float32", &[1 << 25], 4);
        let e = work_evidence(&[x.clone(), x.clone()], &[x], &[launch("kernels", 0)]);
        let verdict = judge(&e);
        assert_eq!(verdict.status, Status::Correct);
        assert!(!verdict.passed);
        let kinds: Vec<FindingKind> = verdict.findings.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [FindingKind::TooLittleWork, FindingKind::TooLittleWork]
        );
    }

    #[test]
    fn the_verdict_cites_the_calibration_it_used() {
        let mut e = evidence();
        e.calibration = Some(crate::eval::test_support::calibration());
        let cited = judge(&e).calibration.unwrap();
        assert_eq!(cited.device_name, "NVIDIA H200");
        assert_eq!(cited.tool, "ncu 2025.3.1.0");
        assert_eq!(cited.created_unix_s, 1_796_000_000);
        assert_eq!(cited.path.as_deref(), Some("calibration/h200.json"));
    }

    #[test]
    fn the_verdict_round_trips_through_json() {
        let verdict = judge(&evidence());
        let text = serde_json::to_string(&verdict).unwrap();
        let back: EvalVerdict = serde_json::from_str(&text).unwrap();
        assert_eq!(back, verdict);
    }
}
