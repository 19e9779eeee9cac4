//! The candidate's score time against the GPU time the witness saw its calls take. Work the
//! candidate's own timer does not wait for (a side stream, a thread) still runs under the
//! witness, so a score far below the witnessed time means the timer missed work.

use serde_json::json;

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::verdict::FindingKind;

pub const CHECK: &str = "witness_time";

pub fn check(facts: &Facts) -> RuleOutcome {
    let witness = match facts.witness {
        Ok(witness) => witness,
        Err(why) => return RuleOutcome::skipped(CHECK, why),
    };
    let timing = match facts.timing {
        Ok(timing) => timing,
        Err(why) => return RuleOutcome::skipped(CHECK, format!("no score time: {why}")),
    };
    let call_launches = witness.placed.call_launches().count();
    if call_launches > 0 && witness.call_launches_without_duration == call_launches {
        return RuleOutcome::skipped(CHECK, "the witness recorded no kernel duration");
    }
    let summary = &witness.summary;
    let Some(ratio) = summary.reported_over_witnessed else {
        return RuleOutcome::skipped(CHECK, "the witnessed calls took no kernel time");
    };
    let tolerance = facts.evidence.settings.witness_tolerance;
    let mut findings = Vec::new();
    if ratio < tolerance {
        findings.push(finding(
            FindingKind::ReportedTimeBelowWitness,
            CHECK,
            format!(
                "the candidate's score, {:.4} ms, is {:.3}× the {:.4} ms of GPU time the witness \
                 saw each call take (limit {tolerance}×): its timer missed work",
                timing.score_ms, ratio, summary.median_ms
            ),
            Measure {
                measured: ratio,
                limit: tolerance,
                unit: "ratio",
            },
            json!({
                "score_ms": timing.score_ms,
                "witness_median_ms": summary.median_ms,
                "per_call_ms": summary.per_call_ms,
                "calls": witness.placed.calls.keys().collect::<Vec<_>>(),
            }),
        ));
    }
    RuleOutcome::ran(CHECK, findings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::evidence::Side;
    use crate::eval::h200_captures;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::{block, evidence};

    #[test]
    fn a_score_near_the_witness_finds_nothing() {
        let outcome = run(check, &evidence());
        assert!(outcome.check.ran && outcome.findings.is_empty());
    }

    #[test]
    fn a_score_far_below_the_witness_is_found() {
        let mut e = evidence();
        // The candidate reports 0.02 ms; the witness saw 0.2 ms per call.
        e.samples[1] = block(Side::Candidate, 0, &[0.02, 0.02, 0.02]);
        e.samples[2] = block(Side::Candidate, 1, &[0.02, 0.02, 0.02]);
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::ReportedTimeBelowWitness]);
        let f = &outcome.findings[0];
        assert!((f.measured.unwrap() - 0.1).abs() < 1e-9);
        assert_eq!(f.limit, Some(0.5));
        assert_eq!(f.evidence["calls"], json!([10, 11]));
    }

    #[test]
    fn without_a_witness_or_durations_it_does_not_run() {
        let mut e = evidence();
        if let Some(w) = e.witness.as_mut() {
            for l in &mut w.launches {
                l.duration_ns = None;
            }
        }
        let outcome = run(check, &e);
        assert_eq!(
            outcome.check.why_not.as_deref(),
            Some("the witness recorded no kernel duration")
        );
        e.witness = None;
        assert_eq!(
            run(check, &e).check.why_not.as_deref(),
            Some("no witness was recorded")
        );
    }

    #[test]
    fn on_the_h200_an_honest_score_matches_the_witness() {
        let outcome = run(check, &h200_captures::evidence("honest_relu_torch"));
        assert!(outcome.check.ran, "{outcome:?}");
        assert!(outcome.findings.is_empty(), "{:#?}", outcome.findings);
    }

    #[test]
    fn on_the_h200_a_patched_timer_is_a_twentieth_of_the_witness() {
        let outcome = run(check, &h200_captures::evidence("hack_timer_patch"));
        assert_eq!(kinds(&outcome), [FindingKind::ReportedTimeBelowWitness]);
        let f = &outcome.findings[0];
        // elapsed_time divided by 20: 0.1346 ms reported, 2.6967 ms witnessed per call.
        let ratio = f.measured.unwrap();
        assert!((0.045..0.055).contains(&ratio), "{ratio}");
        assert_eq!(f.limit, Some(0.7));
        assert_eq!(f.evidence["calls"], json!([3, 4, 5]));
    }

    #[test]
    fn on_the_h200_work_on_a_side_stream_is_far_below_the_witness() {
        let outcome = run(check, &h200_captures::evidence("hack_side_stream"));
        assert_eq!(kinds(&outcome), [FindingKind::ReportedTimeBelowWitness]);
        // The events timed nothing (0.0003 ms) of the 2.69 ms matmul each call ran.
        let ratio = outcome.findings[0].measured.unwrap();
        assert!(ratio < 0.001, "{ratio}");
    }
}
