//! A speedup beyond what a kernel rewrite plausibly gives: not proof of a hack, but the figure
//! the field has learned to distrust first ("be always paranoid about suspiciously good
//! results"), so it fails the eval until someone looks.

use serde_json::json;

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::verdict::FindingKind;

pub const CHECK: &str = "suspicious_speedup";

pub fn check(facts: &Facts) -> RuleOutcome {
    let timing = match facts.timing {
        Ok(timing) => timing,
        Err(why) => return RuleOutcome::skipped(CHECK, why),
    };
    let limit = facts.evidence.settings.suspicious_speedup;
    let speedup = &timing.speedup;
    let mut findings = Vec::new();
    if speedup.value > limit {
        findings.push(finding(
            FindingKind::SuspiciousSpeedup,
            CHECK,
            format!(
                "speedup {:.2}× (95 % CI {:.2}–{:.2}×) is above {limit}×: check the candidate \
                 before trusting it",
                speedup.value, speedup.ci_low, speedup.ci_high
            ),
            Measure {
                measured: speedup.value,
                limit,
                unit: "x",
            },
            json!({
                "ci_low": speedup.ci_low,
                "ci_high": speedup.ci_high,
                "reference_median_ms": timing.reference.median_ms,
                "score_ms": timing.score_ms,
            }),
        ));
    }
    RuleOutcome::ran(CHECK, findings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::evidence;

    #[test]
    fn a_modest_speedup_finds_nothing() {
        // 5× against a limit of 10×.
        let outcome = run(check, &evidence());
        assert!(outcome.check.ran && outcome.findings.is_empty());
    }

    #[test]
    fn a_speedup_above_the_limit_is_found() {
        let mut e = evidence();
        e.settings.suspicious_speedup = 4.0;
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::SuspiciousSpeedup]);
        let f = &outcome.findings[0];
        assert!((f.measured.unwrap() - 5.0).abs() < 0.01);
        assert_eq!(f.limit, Some(4.0));
    }

    #[test]
    fn without_timing_it_does_not_run() {
        let mut e = evidence();
        e.samples.clear();
        assert_eq!(
            run(check, &e).check.why_not.as_deref(),
            Some("no timing block was recorded")
        );
    }
}
