//! Whether the timing was taken under conditions fit to score: when more than half of either
//! side's blocks were unscored (throttling, another process on the GPU, no L2 reset), the score
//! rests on too little and the eval should be run again on a quiet GPU.

use serde_json::json;

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::evidence::{Side, TimingBlock};
use crate::eval::sample_scoring::{side_name, unscored_reasons};
use crate::eval::verdict::{Finding, FindingKind};

pub const CHECK: &str = "sample_conditions";

/// Above this share of a side's blocks unscored, the samples are a finding.
pub const MAX_UNSCORED_SHARE: f64 = 0.5;

pub fn check(facts: &Facts) -> RuleOutcome {
    let samples = &facts.evidence.samples;
    if samples.is_empty() {
        return RuleOutcome::skipped(CHECK, "no timing block was recorded");
    }
    let findings = [Side::Reference, Side::Candidate]
        .into_iter()
        .filter_map(|side| side_finding(samples, side))
        .collect();
    RuleOutcome::ran(CHECK, findings)
}

fn side_finding(samples: &[TimingBlock], side: Side) -> Option<Finding> {
    let blocks: Vec<&TimingBlock> = samples.iter().filter(|b| b.side == side).collect();
    let unscored: Vec<(u32, Vec<String>)> = blocks
        .iter()
        .map(|b| (b.block, unscored_reasons(b)))
        .filter(|(_, reasons)| !reasons.is_empty())
        .collect();
    if blocks.is_empty() {
        return None;
    }
    let share = unscored.len() as f64 / blocks.len() as f64;
    (share > MAX_UNSCORED_SHARE).then(|| {
        finding(
            FindingKind::UnscoredSamples,
            CHECK,
            format!(
                "{} of {} {} timing blocks were taken under conditions unfit to score ({}): \
                 run the eval again on a quiet GPU",
                unscored.len(),
                blocks.len(),
                side_name(side),
                unscored[0].1.join("; ")
            ),
            Measure {
                measured: share,
                limit: MAX_UNSCORED_SHARE,
                unit: "share of blocks",
            },
            json!({
                "side": side,
                "blocks": unscored.iter().map(|(block, reasons)| {
                    json!({ "block": block, "reasons": reasons })
                }).collect::<Vec<_>>(),
            }),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::{conditions, evidence};

    fn throttled() -> Option<crate::eval::evidence::Conditions> {
        Some(crate::eval::evidence::Conditions {
            throttle_reasons: vec!["hw_slowdown".into()],
            ..conditions()
        })
    }

    #[test]
    fn half_the_blocks_unscored_is_still_fine() {
        let mut e = evidence();
        e.samples[1].conditions_after = throttled();
        let outcome = run(check, &e);
        assert!(outcome.check.ran && outcome.findings.is_empty());
    }

    #[test]
    fn more_than_half_unscored_is_found_per_side() {
        let mut e = evidence();
        e.samples[1].conditions_after = throttled();
        e.samples[2].conditions_before = throttled();
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::UnscoredSamples]);
        let f = &outcome.findings[0];
        assert_eq!(f.measured, Some(1.0));
        assert_eq!(f.evidence["side"], "candidate");
        assert_eq!(
            f.evidence["blocks"][1]["reasons"][0],
            "throttled before (hw_slowdown)"
        );
    }

    #[test]
    fn without_blocks_it_does_not_run() {
        let mut e = evidence();
        e.samples.clear();
        assert!(!run(check, &e).check.ran);
    }
}
