//! Times no kernel can take: a score below the floor a launch costs (`min_plausible_ms`, or the
//! device's calibrated launch floor when it is higher), or a candidate block whose median is
//! zero or negative (a timer that was stopped early, patched, or underflowed).

use serde_json::json;

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::counter_trust::calibration_note;
use crate::eval::evidence::Side;
use crate::eval::verdict::FindingKind;
use crate::results::stats::percentile_of_sorted;

pub const CHECK: &str = "plausible_time";

pub fn check(facts: &Facts) -> RuleOutcome {
    let evidence = facts.evidence;
    let blocks: Vec<_> = evidence
        .samples
        .iter()
        .filter(|b| b.side == Side::Candidate && !b.times_ms.is_empty())
        .collect();
    if blocks.is_empty() {
        return RuleOutcome::skipped(CHECK, "no candidate timing block was recorded");
    }
    let mut findings = Vec::new();
    let setting = evidence.settings.min_plausible_ms;
    // The device's own floor, when calibrated: an empty kernel's time.
    let launch_floor_ms = evidence
        .calibration
        .as_ref()
        .and_then(|c| c.launch_floor_ns)
        .filter(|ns| ns.is_finite() && *ns > 0.0)
        .map(|ns| ns / 1e6);
    let (floor, source) = match launch_floor_ms {
        Some(launch) if launch > setting => (
            launch,
            "an empty kernel takes on this device (calibration)".to_string(),
        ),
        _ => (setting, "any kernel launch takes".to_string()),
    };
    if let Ok(timing) = facts.timing
        && (timing.score_ms <= 0.0 || timing.score_ms < floor)
    {
        findings.push(finding(
            FindingKind::ImplausibleTime,
            CHECK,
            format!(
                "the candidate's score, {:.6} ms, is below the {floor} ms {source}",
                timing.score_ms
            ),
            Measure {
                measured: timing.score_ms,
                limit: floor,
                unit: "ms",
            },
            json!({
                "score_ms": timing.score_ms,
                "min_plausible_ms": setting,
                "launch_floor_ms": launch_floor_ms,
                "calibration": evidence.calibration.as_ref().map(|_| calibration_note(evidence)),
            }),
        ));
    }
    let zero_blocks: Vec<(u32, f64)> = blocks
        .iter()
        .map(|b| (b.block, block_median(&b.times_ms)))
        .filter(|(_, median)| !(median.is_finite() && *median > 0.0))
        .collect();
    if !zero_blocks.is_empty() {
        let lowest = zero_blocks
            .iter()
            .map(|(_, m)| *m)
            .filter(|m| m.is_finite())
            .fold(0.0, f64::min);
        findings.push(finding(
            FindingKind::ImplausibleTime,
            CHECK,
            format!(
                "{} candidate timing block(s) have a median time of zero or less (or no number): \
                 the timer did not time the kernel",
                zero_blocks.len()
            ),
            Measure {
                measured: lowest,
                limit: 0.0,
                unit: "ms",
            },
            json!({
                "blocks": zero_blocks.iter().map(|(block, median)| {
                    json!({ "block": block, "median_ms": median.is_finite().then_some(*median) })
                }).collect::<Vec<_>>(),
            }),
        ));
    }
    RuleOutcome::ran(CHECK, findings)
}

/// The median of a block's raw samples; NaN sorts last, so a block of NaN has a NaN median.
fn block_median(times: &[f64]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    percentile_of_sorted(&sorted, 50.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::{block, evidence};

    #[test]
    fn real_times_find_nothing() {
        let outcome = run(check, &evidence());
        assert!(outcome.check.ran && outcome.findings.is_empty());
    }

    #[test]
    fn a_score_below_the_floor_is_implausible() {
        let mut e = evidence();
        e.settings.min_plausible_ms = 0.5;
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::ImplausibleTime]);
        assert_eq!(outcome.findings[0].limit, Some(0.5));
    }

    #[test]
    fn a_score_below_the_calibrated_launch_floor_is_implausible() {
        let mut e = evidence();
        e.calibration = Some(crate::eval::test_support::calibration());
        // 2 µs per empty kernel: 0.2 ms is plausible.
        assert!(run(check, &e).findings.is_empty());
        for b in e.samples.iter_mut().filter(|b| b.side == Side::Candidate) {
            b.times_ms = vec![0.0015; b.times_ms.len()];
        }
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::ImplausibleTime]);
        let f = &outcome.findings[0];
        assert_eq!(f.limit, Some(0.002));
        assert_eq!(f.evidence["min_plausible_ms"], 0.001);
        assert_eq!(f.evidence["calibration"]["tool"], "ncu 2025.3.1.0");
        assert!(
            f.message.contains("an empty kernel takes on this device"),
            "{}",
            f.message
        );
        // Without the calibration, 1.5 µs is above the 1 µs setting.
        e.calibration = None;
        assert!(run(check, &e).findings.is_empty());
    }

    #[test]
    fn a_block_of_zeros_is_implausible_even_without_a_score() {
        let mut e = evidence();
        e.samples[1] = block(Side::Candidate, 0, &[0.0, 0.0, 0.0]);
        e.samples[2] = block(Side::Candidate, 1, &[0.0, -0.001, 0.0]);
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::ImplausibleTime]);
        let f = &outcome.findings[0];
        assert_eq!(f.measured, Some(0.0));
        assert_eq!(f.evidence["blocks"][1]["block"], 1);
    }

    #[test]
    fn without_candidate_blocks_it_does_not_run() {
        let mut e = evidence();
        e.samples.retain(|b| b.side == Side::Reference);
        assert!(!run(check, &e).check.ran);
    }
}
