//! The inputs handed to the candidate, compared byte for byte with the trusted worker's copy
//! after each call: a candidate that writes into its inputs (zeroes them, stores its answer
//! there) changed what the reference and the next call see.

use serde_json::json;

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::verdict::FindingKind;

pub const CHECK: &str = "inputs_unchanged";

pub fn check(facts: &Facts) -> RuleOutcome {
    let trials = &facts.evidence.trials;
    if trials.iter().all(|t| t.inputs_unchanged.is_none()) {
        return RuleOutcome::skipped(CHECK, "no trial compared its inputs after the call");
    }
    let modified: Vec<u32> = trials
        .iter()
        .filter(|t| t.inputs_unchanged == Some(false))
        .map(|t| t.index)
        .collect();
    let findings = if modified.is_empty() {
        Vec::new()
    } else {
        vec![finding(
            FindingKind::InputsModified,
            CHECK,
            format!(
                "the candidate changed its inputs in {} trial(s) (trial {})",
                modified.len(),
                modified
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Measure {
                measured: modified.len() as f64,
                limit: 0.0,
                unit: "trials",
            },
            json!({ "trials": modified }),
        )]
    };
    RuleOutcome::ran(CHECK, findings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::h200_captures;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::evidence;

    #[test]
    fn unchanged_inputs_find_nothing() {
        let outcome = run(check, &evidence());
        assert!(outcome.check.ran && outcome.findings.is_empty());
    }

    #[test]
    fn changed_inputs_are_found_with_their_trials() {
        let mut e = evidence();
        e.trials[2].inputs_unchanged = Some(false);
        e.trials[4].inputs_unchanged = Some(false);
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::InputsModified]);
        assert_eq!(outcome.findings[0].evidence["trials"], json!([2, 10]));
        assert_eq!(outcome.findings[0].measured, Some(2.0));
    }

    #[test]
    fn no_input_comparison_is_no_check() {
        let mut e = evidence();
        for t in &mut e.trials {
            t.inputs_unchanged = None;
        }
        assert!(!run(check, &e).check.ran);
    }

    #[test]
    fn on_the_h200_zeroed_inputs_are_found_in_every_trial() {
        let outcome = run(check, &h200_captures::evidence("hack_inputs_modified"));
        assert_eq!(kinds(&outcome), [FindingKind::InputsModified]);
        // 3 correctness trials, 3 timed blocks on trial 2's inputs, 3 witness calls.
        let f = &outcome.findings[0];
        assert_eq!(f.measured, Some(9.0));
        assert_eq!(
            f.evidence["trials"],
            serde_json::json!([0, 1, 2, 2, 2, 2, 3, 4, 5])
        );
    }
}
