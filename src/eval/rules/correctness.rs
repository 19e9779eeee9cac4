//! Outputs against the reference: every compared trial, whichever part of the eval it served.
//! A failing correctness or witness trial is `incorrect_output` (one finding each), a failing
//! timed trial `timed_output_incorrect` (the timed calls computed something else than the
//! checked ones), and output elements still holding the poison `unwritten_output`.

use serde_json::json;

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::evidence::{Comparison, TrialEvidence, TrialPhase};
use crate::eval::verdict::{Finding, FindingKind};

pub const CHECK: &str = "correctness";

pub fn check(facts: &Facts) -> RuleOutcome {
    let compared: Vec<(&TrialEvidence, &Comparison)> = facts
        .evidence
        .trials
        .iter()
        .filter_map(|t| t.comparison.as_ref().map(|c| (t, c)))
        .collect();
    if compared.is_empty() {
        return RuleOutcome::skipped(CHECK, "no output was compared");
    }
    let mut findings: Vec<Finding> = compared
        .iter()
        .filter(|(t, c)| !c.passed && t.phase != TrialPhase::Timed)
        .map(|(t, c)| incorrect_output(t, c))
        .collect();
    let timed_failures: Vec<serde_json::Value> = compared
        .iter()
        .filter(|(t, c)| !c.passed && t.phase == TrialPhase::Timed)
        .map(|(t, c)| trial_json(t, c))
        .collect();
    if !timed_failures.is_empty() {
        findings.push(finding(
            FindingKind::TimedOutputIncorrect,
            CHECK,
            format!(
                "{} timed call(s) returned an output that does not match the reference, though \
                 the correctness trials were compared: the timed calls computed something else",
                timed_failures.len()
            ),
            Measure {
                measured: timed_failures.len() as f64,
                limit: 0.0,
                unit: "trials",
            },
            json!({ "trials": timed_failures }),
        ));
    }
    let poisoned: Vec<(u32, u64)> = compared
        .iter()
        .filter(|(_, c)| c.poisoned_elements > 0)
        .map(|(t, c)| (t.index, c.poisoned_elements))
        .collect();
    if !poisoned.is_empty() {
        let total: u64 = poisoned.iter().map(|(_, n)| n).sum();
        findings.push(finding(
            FindingKind::UnwrittenOutput,
            CHECK,
            format!(
                "{total} output element(s) in {} trial(s) still held the poison written before \
                 the call: the kernel did not write them (the values came from stale memory)",
                poisoned.len()
            ),
            Measure {
                measured: total as f64,
                limit: 0.0,
                unit: "elements",
            },
            json!({ "trials": poisoned.iter().map(|(trial, n)| json!({"trial": trial, "poisoned_elements": n})).collect::<Vec<_>>() }),
        ));
    }
    RuleOutcome::ran(CHECK, findings)
}

fn incorrect_output(trial: &TrialEvidence, comparison: &Comparison) -> Finding {
    let mismatch = comparison.mismatch.as_deref().unwrap_or("values");
    let what = match mismatch {
        "values" => format!(
            "{} of {} element(s) outside atol + rtol·|reference|{}",
            comparison.mismatched_elements,
            comparison.total_elements,
            diffs(comparison)
        ),
        "shape" | "dtype" => format!("the output's {mismatch} differs from the reference's"),
        "count" => "the number of outputs differs from the reference's".to_string(),
        other => format!("mismatch `{other}`"),
    };
    let detail = comparison
        .detail
        .as_deref()
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    finding(
        FindingKind::IncorrectOutput,
        CHECK,
        format!(
            "trial {} ({}): {what}{detail}",
            trial.index,
            phase_name(trial.phase)
        ),
        Measure {
            measured: comparison.mismatched_elements as f64,
            limit: 0.0,
            unit: "elements",
        },
        trial_json(trial, comparison),
    )
}

fn trial_json(trial: &TrialEvidence, comparison: &Comparison) -> serde_json::Value {
    json!({
        "trial": trial.index,
        "phase": trial.phase,
        "seed": trial.seed,
        "mismatch": comparison.mismatch,
        "mismatched_elements": comparison.mismatched_elements,
        "total_elements": comparison.total_elements,
        "max_abs_diff": comparison.max_abs_diff,
        "max_rel_diff": comparison.max_rel_diff,
    })
}

/// ` (max abs diff …, max rel diff …)` with the figures the comparison has.
fn diffs(comparison: &Comparison) -> String {
    let parts: Vec<String> = [
        ("max abs diff", comparison.max_abs_diff),
        ("max rel diff", comparison.max_rel_diff),
    ]
    .into_iter()
    .filter_map(|(label, value)| value.map(|v| format!("{label} {v:.3e}")))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

pub fn phase_name(phase: TrialPhase) -> &'static str {
    match phase {
        TrialPhase::Correctness => "correctness",
        TrialPhase::Timed => "timed",
        TrialPhase::Witness => "witness",
        TrialPhase::Work => "work",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::h200_captures;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::{evidence, trial};

    #[test]
    fn matching_outputs_find_nothing() {
        let outcome = run(check, &evidence());
        assert!(outcome.check.ran);
        assert!(outcome.findings.is_empty());
    }

    #[test]
    fn each_failing_trial_is_a_finding_with_its_figures() {
        let mut e = evidence();
        e.trials[1] = trial(1, TrialPhase::Correctness, false);
        e.trials[5] = trial(11, TrialPhase::Witness, false);
        if let Some(c) = e.trials[5].comparison.as_mut() {
            c.mismatch = Some("shape".into());
            c.detail = Some("[4, 4] vs [4]".into());
        }
        let outcome = run(check, &e);
        assert_eq!(
            kinds(&outcome),
            [FindingKind::IncorrectOutput, FindingKind::IncorrectOutput]
        );
        let first = &outcome.findings[0];
        assert_eq!(first.check, CHECK);
        assert_eq!(first.measured, Some(17.0));
        assert_eq!(first.evidence["trial"], 1);
        assert_eq!(first.evidence["seed"], 1001);
        assert_eq!(
            first.message,
            "trial 1 (correctness): 17 of 1024 element(s) outside atol + rtol·|reference| \
             (max abs diff 5.000e-1, max rel diff 2.000e0)"
        );
        assert_eq!(
            outcome.findings[1].message,
            "trial 11 (witness): the output's shape differs from the reference's ([4, 4] vs [4])"
        );
    }

    #[test]
    fn a_failing_timed_output_is_its_own_finding() {
        let mut e = evidence();
        e.trials[3] = trial(3, TrialPhase::Timed, false);
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::TimedOutputIncorrect]);
        assert_eq!(outcome.findings[0].evidence["trials"][0]["trial"], 3);
    }

    #[test]
    fn poisoned_elements_are_unwritten_output() {
        let mut e = evidence();
        e.trials[0] = trial(0, TrialPhase::Correctness, false);
        if let Some(c) = e.trials[0].comparison.as_mut() {
            c.poisoned_elements = 512;
        }
        let outcome = run(check, &e);
        assert_eq!(
            kinds(&outcome),
            [FindingKind::IncorrectOutput, FindingKind::UnwrittenOutput]
        );
        let unwritten = &outcome.findings[1];
        assert_eq!(unwritten.measured, Some(512.0));
        assert_eq!(unwritten.evidence["trials"][0]["poisoned_elements"], 512);
    }

    #[test]
    fn nothing_compared_is_no_check() {
        let mut e = evidence();
        for t in &mut e.trials {
            t.comparison = None;
        }
        let outcome = run(check, &e);
        assert!(!outcome.check.ran);
        assert_eq!(
            outcome.check.why_not.as_deref(),
            Some("no output was compared")
        );
    }

    #[test]
    fn on_the_h200_stale_memory_is_incorrect_and_still_poisoned() {
        let e = h200_captures::evidence("hack_stale_memory");
        // Every element of every correctness trial's output still held the 0xFF poison.
        let poisoned: Vec<u64> = e
            .trials
            .iter()
            .filter_map(|t| t.comparison.as_ref())
            .map(|c| c.poisoned_elements)
            .collect();
        assert_eq!(poisoned, [16_777_216; 3]);
        let outcome = run(check, &e);
        assert_eq!(
            kinds(&outcome),
            [
                FindingKind::IncorrectOutput,
                FindingKind::IncorrectOutput,
                FindingKind::IncorrectOutput,
                FindingKind::UnwrittenOutput
            ]
        );
        assert_eq!(outcome.findings[3].measured, Some(50_331_648.0));
    }
}
