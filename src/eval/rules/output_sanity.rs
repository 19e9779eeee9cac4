//! Cheap checks on what the candidate returned, from the statistics the trusted worker took of
//! every output (min, max, digest): an output that is one value everywhere, that does not change
//! when the inputs do, or that is one of the inputs handed back. Each can pass a loose tolerance
//! on one input (a memset of the mean, a constant, an identity on an input close to the answer);
//! none is a finding when the reference does the same.

use std::collections::BTreeMap;

use serde_json::json;

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::evidence::{TensorSpec, TrialEvidence};
use crate::eval::verdict::FindingKind;

pub const CHECK: &str = "output_sanity";

fn digest(spec: &TensorSpec) -> Option<&str> {
    spec.stats.as_ref().map(|s| s.digest.as_str())
}

fn elements(spec: &TensorSpec) -> u64 {
    spec.shape.iter().product()
}

/// One value everywhere (more than one element, no NaN, min equal to max).
fn constant(spec: &TensorSpec) -> bool {
    spec.stats.as_ref().is_some_and(|s| {
        elements(spec) > 1 && s.nan_count == 0 && s.min.is_some() && s.min == s.max
    })
}

fn same_array(a: &TensorSpec, b: &TensorSpec) -> bool {
    a.dtype == b.dtype && a.shape == b.shape && digest(a).is_some() && digest(a) == digest(b)
}

pub fn check(facts: &Facts) -> RuleOutcome {
    let trials: Vec<&TrialEvidence> = facts
        .evidence
        .trials
        .iter()
        .filter(|t| t.candidate_outputs.iter().any(|o| o.stats.is_some()))
        .collect();
    if trials.is_empty() {
        return RuleOutcome::skipped(CHECK, "no candidate output has statistics");
    }
    let mut findings = Vec::new();

    let constant_trials: Vec<u32> = trials
        .iter()
        .filter(|t| {
            t.candidate_outputs
                .iter()
                .enumerate()
                .any(|(i, out)| constant(out) && !t.reference_outputs.get(i).is_some_and(constant))
        })
        .map(|t| t.index)
        .collect();
    if !constant_trials.is_empty() {
        findings.push(finding(
            FindingKind::ConstantOutput,
            CHECK,
            format!(
                "the candidate returned one value everywhere in {} trial(s) where the reference's output varies",
                constant_trials.len()
            ),
            Measure {
                measured: constant_trials.len() as f64,
                limit: 0.0,
                unit: "trials",
            },
            json!({ "trials": constant_trials }),
        ));
    }

    // Trials with different reference outputs (different inputs) but one candidate output.
    let mut by_candidate: BTreeMap<Vec<&str>, BTreeMap<Vec<&str>, u32>> = BTreeMap::new();
    for t in &trials {
        let cand: Option<Vec<&str>> = t.candidate_outputs.iter().map(digest).collect();
        let reference: Option<Vec<&str>> = t.reference_outputs.iter().map(digest).collect();
        if let (Some(cand), Some(reference)) = (cand, reference) {
            by_candidate
                .entry(cand)
                .or_default()
                .entry(reference)
                .or_insert(t.index);
        }
    }
    let repeated: Vec<Vec<u32>> = by_candidate
        .values()
        .filter(|refs| refs.len() > 1)
        .map(|refs| refs.values().copied().collect())
        .collect();
    if let Some(trials_alike) = repeated.first() {
        findings.push(finding(
            FindingKind::OutputIndependentOfInputs,
            CHECK,
            format!(
                "the candidate returned the same output for {} different inputs (trials {}), where the reference's differ",
                trials_alike.len(),
                trials_alike
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Measure {
                measured: trials_alike.len() as f64,
                limit: 1.0,
                unit: "inputs",
            },
            json!({ "trials": repeated }),
        ));
    }

    let echoed: Vec<(u32, usize, usize)> = trials
        .iter()
        .flat_map(|t| {
            t.candidate_outputs
                .iter()
                .enumerate()
                .filter_map(move |(o, out)| {
                    let reference_echoes = t
                        .reference_outputs
                        .get(o)
                        .is_some_and(|r| t.inputs.iter().any(|i| same_array(r, i)));
                    (!reference_echoes)
                        .then(|| t.inputs.iter().position(|i| same_array(out, i)))
                        .flatten()
                        .map(|i| (t.index, o, i))
                })
        })
        .collect();
    if !echoed.is_empty() {
        findings.push(finding(
            FindingKind::OutputEqualsInput,
            CHECK,
            format!(
                "the candidate returned one of its inputs unchanged as an output in {} trial(s)",
                echoed.len()
            ),
            Measure {
                measured: echoed.len() as f64,
                limit: 0.0,
                unit: "outputs",
            },
            json!(
                echoed
                    .iter()
                    .map(|(t, o, i)| json!({"trial": t, "output": o, "input": i}))
                    .collect::<Vec<_>>()
            ),
        ));
    }
    RuleOutcome::ran(CHECK, findings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::evidence::TrialPhase;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::{array, evidence, trial};

    /// Trial `index` with input `input`, reference output `reference`, candidate `candidate`.
    fn with_arrays(
        index: u32,
        input: TensorSpec,
        reference: TensorSpec,
        candidate: TensorSpec,
    ) -> TrialEvidence {
        let mut t = trial(index, TrialPhase::Correctness, true);
        t.inputs = vec![input];
        t.reference_outputs = vec![reference];
        t.candidate_outputs = vec![candidate];
        t
    }

    fn evidence_of(trials: Vec<TrialEvidence>) -> crate::eval::evidence::EvalEvidence {
        let mut e = evidence();
        e.trials = trials;
        e
    }

    #[test]
    fn honest_outputs_find_nothing() {
        let e = evidence_of(vec![
            with_arrays(
                0,
                array("i0", -1.0, 1.0),
                array("r0", 0.0, 1.0),
                array("r0", 0.0, 1.0),
            ),
            with_arrays(
                1,
                array("i1", -1.0, 1.0),
                array("r1", 0.0, 1.0),
                array("r1", 0.0, 1.0),
            ),
        ]);
        let outcome = run(check, &e);
        assert!(
            outcome.check.ran && outcome.findings.is_empty(),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_constant_output_is_found_unless_the_reference_is_constant_too() {
        let e = evidence_of(vec![with_arrays(
            0,
            array("i0", -1.0, 1.0),
            array("r0", 0.0, 1.0),
            array("c", 0.5, 0.5),
        )]);
        assert_eq!(kinds(&run(check, &e)), [FindingKind::ConstantOutput]);
        let e = evidence_of(vec![with_arrays(
            0,
            array("i0", -1.0, 1.0),
            array("c", 0.5, 0.5),
            array("c", 0.5, 0.5),
        )]);
        assert!(run(check, &e).findings.is_empty());
    }

    #[test]
    fn one_output_for_different_inputs_is_found() {
        let e = evidence_of(vec![
            with_arrays(
                0,
                array("i0", -1.0, 1.0),
                array("r0", 0.0, 1.0),
                array("same", 0.0, 1.0),
            ),
            with_arrays(
                1,
                array("i1", -1.0, 1.0),
                array("r1", 0.0, 1.0),
                array("same", 0.0, 1.0),
            ),
        ]);
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::OutputIndependentOfInputs]);
        assert_eq!(outcome.findings[0].evidence["trials"], json!([[0, 1]]));
    }

    #[test]
    fn the_same_inputs_timed_again_are_not_independence() {
        // A timed trial repeats its correctness trial's inputs: same reference output, same
        // candidate output, nothing found.
        let e = evidence_of(vec![
            with_arrays(
                0,
                array("i0", -1.0, 1.0),
                array("r0", 0.0, 1.0),
                array("r0", 0.0, 1.0),
            ),
            with_arrays(
                0,
                array("i0", -1.0, 1.0),
                array("r0", 0.0, 1.0),
                array("r0", 0.0, 1.0),
            ),
        ]);
        assert!(run(check, &e).findings.is_empty());
    }

    #[test]
    fn an_input_handed_back_is_found_unless_the_reference_does_the_same() {
        let e = evidence_of(vec![with_arrays(
            0,
            array("i0", -1.0, 1.0),
            array("r0", 0.0, 1.0),
            array("i0", -1.0, 1.0),
        )]);
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::OutputEqualsInput]);
        assert_eq!(
            outcome.findings[0].evidence,
            json!([{"trial": 0, "output": 0, "input": 0}])
        );
        let e = evidence_of(vec![with_arrays(
            0,
            array("i0", -1.0, 1.0),
            array("i0", -1.0, 1.0),
            array("i0", -1.0, 1.0),
        )]);
        assert!(run(check, &e).findings.is_empty());
    }

    #[test]
    fn outputs_without_statistics_are_no_check() {
        let mut e = evidence();
        for t in &mut e.trials {
            for o in &mut t.candidate_outputs {
                o.stats = None;
            }
        }
        assert!(!run(check, &e).check.ran);
    }
}
