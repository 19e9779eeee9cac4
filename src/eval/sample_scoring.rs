//! Which timing blocks count toward the score: a block taken while the GPU throttled, while
//! another process used it, or without the persisting-L2 reset its worker reports, measured
//! something other than the kernel, so its samples are kept in the evidence but not scored.

use super::evidence::{Conditions, Side, TimingBlock};

/// Why `block`'s samples are not scored; empty when they are.
pub fn unscored_reasons(block: &TimingBlock) -> Vec<String> {
    let mut reasons = Vec::new();
    for (when, conditions) in [
        ("before", &block.conditions_before),
        ("after", &block.conditions_after),
    ] {
        if let Some(conditions) = conditions {
            condition_reasons(conditions, when, &mut reasons);
        }
    }
    if let Some(state) = &block.device_state {
        if let Some(limit) = state.persisting_l2_limit_bytes.filter(|&limit| limit > 0) {
            reasons.push(format!("persisting-L2 limit {limit} B after the reset"));
        }
        if !state.persisting_l2_reset {
            reasons.push("persisting-L2 cache not reset".to_string());
        }
    }
    reasons
}

fn condition_reasons(conditions: &Conditions, when: &str, reasons: &mut Vec<String>) {
    if !conditions.throttle_reasons.is_empty() {
        reasons.push(format!(
            "throttled {when} ({})",
            conditions.throttle_reasons.join(", ")
        ));
    }
    if !conditions.other_processes.is_empty() {
        let pids: Vec<String> = conditions
            .other_processes
            .iter()
            .map(u32::to_string)
            .collect();
        reasons.push(format!(
            "other processes on the GPU {when} (pid {})",
            pids.join(", ")
        ));
    }
}

/// A block's name in messages: `candidate block 3`.
pub fn block_label(block: &TimingBlock) -> String {
    format!("{} block {}", side_name(block.side), block.block)
}

pub fn side_name(side: Side) -> &'static str {
    match side {
        Side::Reference => "reference",
        Side::Candidate => "candidate",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::evidence::DeviceState;
    use crate::eval::test_support::{block, conditions};

    #[test]
    fn a_clean_block_is_scored() {
        assert!(unscored_reasons(&block(Side::Candidate, 0, &[1.0])).is_empty());
    }

    #[test]
    fn throttling_other_processes_and_a_missing_reset_unscore_a_block() {
        let mut b = block(Side::Reference, 2, &[1.0]);
        b.conditions_after = Some(Conditions {
            throttle_reasons: vec!["sw_thermal_slowdown".into()],
            other_processes: vec![4242],
            ..conditions()
        });
        b.device_state = Some(DeviceState {
            persisting_l2_limit_bytes: Some(1 << 20),
            persisting_l2_reset: false,
            note: None,
        });
        assert_eq!(
            unscored_reasons(&b),
            [
                "throttled after (sw_thermal_slowdown)",
                "other processes on the GPU after (pid 4242)",
                "persisting-L2 limit 1048576 B after the reset",
                "persisting-L2 cache not reset",
            ]
        );
        assert_eq!(block_label(&b), "reference block 2");
    }
}
