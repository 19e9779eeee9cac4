//! Were the timed calls on fresh inputs, and were outputs of them compared at random? Each
//! candidate block's pool of distinct input sets (`input_trials`, each from its own secret seed),
//! the warm-up's trial outside it, and the calls drawn after the block (`checked_calls`) each
//! with its comparison. The comparisons' results are the correctness check's
//! (`timed_output_incorrect`); this check says whether the conditions that make them mean
//! something held, and with which figures.

use super::{Facts, RuleOutcome};
use crate::eval::evidence::{Side, TimingBlock, TrialPhase};

pub const CHECK: &str = "fresh_inputs";

pub fn check(facts: &Facts) -> RuleOutcome {
    let evidence = facts.evidence;
    let blocks: Vec<&TimingBlock> = evidence
        .samples
        .iter()
        .filter(|b| b.side == Side::Candidate)
        .collect();
    if blocks.is_empty() {
        return RuleOutcome::skipped(CHECK, "no candidate timing block was recorded");
    }
    if let Some(block) = blocks.iter().find(|b| b.input_trials.is_empty()) {
        return RuleOutcome::skipped(
            CHECK,
            format!(
                "the timed calls of candidate block {} reused one input set and only the block's \
                 last output was compared (the {} timing path has no input pool)",
                block.block, evidence.problem.device
            ),
        );
    }
    let mut not_judged = Vec::new();
    for block in &blocks {
        let calls = block.times_ms.len();
        let sets = block.input_trials.len();
        if sets < calls {
            not_judged.push(format!(
                "block {}: {sets} input sets for {calls} timed calls (the pool's memory budget): \
                 a cache by content or address can hit on {} of them",
                block.block,
                calls - sets
            ));
        }
        if block
            .warmup_trial
            .is_some_and(|w| block.input_trials.contains(&w))
        {
            not_judged.push(format!(
                "block {}: the warm-up ran on a timed input set: a memo of the warm-up can answer",
                block.block
            ));
        }
        let compared = evidence
            .trials
            .iter()
            .filter(|t| t.phase == TrialPhase::Timed && t.block == Some(block.block))
            .filter(|t| t.comparison.is_some())
            .count();
        if compared < block.checked_calls.len() || block.checked_calls.is_empty() {
            not_judged.push(format!(
                "block {}: {compared} of its {} drawn call(s) compared",
                block.block,
                block.checked_calls.len()
            ));
        }
    }
    RuleOutcome::ran_in_part(CHECK, Vec::new(), not_judged)
}

/// One line of figures for the verdict: distinct input sets and compared timed outputs.
pub fn figures(evidence: &crate::eval::evidence::EvalEvidence) -> Option<(usize, usize, usize)> {
    let blocks: Vec<&TimingBlock> = evidence
        .samples
        .iter()
        .filter(|b| b.side == Side::Candidate && !b.input_trials.is_empty())
        .collect();
    if blocks.is_empty() {
        return None;
    }
    let sets = blocks.iter().map(|b| b.input_trials.len()).sum();
    let calls = blocks.iter().map(|b| b.times_ms.len()).sum();
    let compared = evidence
        .trials
        .iter()
        .filter(|t| t.phase == TrialPhase::Timed && t.timed_call.is_some())
        .filter(|t| t.comparison.is_some())
        .count();
    Some((sets, calls, compared))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::evidence::EvalEvidence;
    use crate::eval::rules::testing::run;
    use crate::eval::test_support::{evidence, trial};

    /// The test evidence's candidate blocks on pools of three sets, one call of each drawn.
    fn pooled() -> EvalEvidence {
        let mut e = evidence();
        let mut next = 100;
        for b in &mut e.samples {
            b.input_trials = vec![next, next + 1, next + 2];
            b.warmup_trial = Some(1);
            if b.side == Side::Candidate {
                b.checked_calls = vec![2];
                let mut t = trial(next + 2, TrialPhase::Timed, true);
                t.timed_call = Some(2);
                t.block = Some(b.block);
                e.trials.push(t);
            }
            next += 3;
        }
        e.trials
            .retain(|t| t.phase != TrialPhase::Timed || t.block.is_some());
        e
    }

    #[test]
    fn a_pool_per_block_with_its_draw_compared_runs_clean() {
        let outcome = run(check, &pooled());
        assert!(outcome.check.ran, "{:?}", outcome.check);
        assert!(outcome.check.not_judged.is_empty(), "{:?}", outcome.check);
        assert_eq!(figures(&pooled()), Some((6, 6, 2)));
    }

    #[test]
    fn one_reused_input_set_is_a_check_that_did_not_run() {
        let outcome = run(check, &evidence());
        assert!(!outcome.check.ran);
        assert!(
            outcome
                .check
                .why_not
                .unwrap()
                .contains("reused one input set"),
        );
        assert_eq!(figures(&evidence()), None);
    }

    #[test]
    fn a_small_pool_a_warm_timed_set_and_a_missing_comparison_are_named() {
        let mut e = pooled();
        for b in &mut e.samples {
            b.input_trials.truncate(2);
            b.warmup_trial = b.input_trials.first().copied();
        }
        e.trials.retain(|t| t.block != Some(1));
        let outcome = run(check, &e);
        assert!(outcome.check.ran);
        let notes = outcome.check.not_judged.join("\n");
        assert!(notes.contains("2 input sets for 3 timed calls"), "{notes}");
        assert!(
            notes.contains("the warm-up ran on a timed input set"),
            "{notes}"
        );
        assert!(
            notes.contains("block 1: 0 of its 1 drawn call(s) compared"),
            "{notes}"
        );
    }
}
