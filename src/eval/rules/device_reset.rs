//! The persisting-L2 set-aside each worker resets (limit 0) before it times: a limit still
//! above 0 after the reset means a set-aside a candidate left can keep data in L2 across the
//! flush, speeding up one side's samples (or slowing the other's).

use serde_json::json;

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::sample_scoring::block_label;
use crate::eval::verdict::FindingKind;

pub const CHECK: &str = "device_reset";

pub fn check(facts: &Facts) -> RuleOutcome {
    let samples = &facts.evidence.samples;
    if samples.iter().all(|b| b.device_state.is_none()) {
        return RuleOutcome::skipped(CHECK, "no timing block recorded its device state");
    }
    let not_reset: Vec<_> = samples
        .iter()
        .filter_map(|b| {
            let state = b.device_state.as_ref()?;
            let limit = state.persisting_l2_limit_bytes.filter(|&l| l > 0)?;
            Some((b, limit, state.note.clone()))
        })
        .collect();
    if not_reset.is_empty() {
        return RuleOutcome::ran(CHECK, Vec::new());
    }
    let largest = not_reset.iter().map(|(_, l, _)| *l).max().unwrap_or(0);
    let finding = finding(
        FindingKind::DeviceNotReset,
        CHECK,
        format!(
            "the persisting-L2 limit was still {largest} B after the reset ({}{})",
            block_label(not_reset[0].0),
            if not_reset.len() > 1 {
                format!(" and {} more block(s)", not_reset.len() - 1)
            } else {
                String::new()
            }
        ),
        Measure {
            measured: largest as f64,
            limit: 0.0,
            unit: "bytes",
        },
        json!({
            "blocks": not_reset.iter().map(|(b, limit, note)| json!({
                "side": b.side,
                "block": b.block,
                "persisting_l2_limit_bytes": limit,
                "note": note,
            })).collect::<Vec<_>>(),
        }),
    );
    RuleOutcome::ran(CHECK, vec![finding])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::evidence;

    #[test]
    fn a_limit_of_zero_finds_nothing() {
        let outcome = run(check, &evidence());
        assert!(outcome.check.ran && outcome.findings.is_empty());
    }

    #[test]
    fn a_limit_left_after_the_reset_is_found() {
        let mut e = evidence();
        if let Some(state) = e.samples[3].device_state.as_mut() {
            state.persisting_l2_limit_bytes = Some(30 << 20);
        }
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::DeviceNotReset]);
        let f = &outcome.findings[0];
        assert_eq!(f.measured, Some((30u64 << 20) as f64));
        assert_eq!(f.evidence["blocks"][0]["side"], "reference");
        assert_eq!(f.evidence["blocks"][0]["block"], 1);
    }

    #[test]
    fn without_device_state_it_does_not_run() {
        let mut e = evidence();
        for b in &mut e.samples {
            b.device_state = None;
        }
        assert!(!run(check, &e).check.ran);
    }
}
