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

/// Clock-event reasons a kernel's own load sets: the board at its power limit lowers the clock
/// for both sides alike (their blocks interleave), and a power-hungry kernel runs there in its
/// steady state (seen on the H200 with KernelBench's level1/69, a transposed 2-D convolution).
/// Recorded in the evidence, but they do not unscore a block.
const LOAD_REASONS: [&str; 1] = ["sw_power_cap"];

fn condition_reasons(conditions: &Conditions, when: &str, reasons: &mut Vec<String>) {
    let slowing: Vec<&str> = conditions
        .throttle_reasons
        .iter()
        .map(String::as_str)
        .filter(|reason| !LOAD_REASONS.contains(reason))
        .collect();
    if !slowing.is_empty() {
        reasons.push(format!("throttled {when} ({})", slowing.join(", ")));
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
    fn the_power_cap_a_kernel_runs_into_does_not_unscore_a_block() {
        let mut b = block(Side::Candidate, 0, &[1.0]);
        b.conditions_before = Some(Conditions {
            throttle_reasons: vec!["sw_power_cap".into()],
            ..conditions()
        });
        assert!(unscored_reasons(&b).is_empty());
        b.conditions_after = Some(Conditions {
            throttle_reasons: vec!["sw_power_cap".into(), "hw_slowdown".into()],
            ..conditions()
        });
        assert_eq!(unscored_reasons(&b), ["throttled after (hw_slowdown)"]);
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
