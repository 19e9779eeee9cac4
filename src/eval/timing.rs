//! The timing summary: both sides' scored samples, the candidate's score time (their median)
//! and the speedup with its interval.

use crate::results::stats::Stats;

use super::evidence::{EvalEvidence, Side, TimingBlock};
use super::sample_scoring::{block_label, side_name, unscored_reasons};
use super::speedup::hodges_lehmann_speedup;
use super::verdict::{SideTimes, TimingSummary};

/// The summary of `evidence`'s timing blocks, or why there is none (no blocks, no scored
/// sample on a side).
pub fn timing_summary(evidence: &EvalEvidence) -> Result<TimingSummary, String> {
    if evidence.samples.is_empty() {
        return Err("no timing block was recorded".to_string());
    }
    let mut reference = Vec::new();
    let mut candidate = Vec::new();
    let mut unscored = 0usize;
    let mut reasons = Vec::new();
    for block in &evidence.samples {
        let block_reasons = unscored_reasons(block);
        if !block_reasons.is_empty() {
            unscored += block.times_ms.len();
            reasons.push(format!(
                "{}: {}",
                block_label(block),
                block_reasons.join("; ")
            ));
            continue;
        }
        let usable = usable_times(block);
        let dropped = block.times_ms.len() - usable.len();
        if dropped > 0 {
            unscored += dropped;
            reasons.push(format!(
                "{}: {dropped} sample(s) not a positive finite time",
                block_label(block)
            ));
        }
        match block.side {
            Side::Reference => reference.extend(usable),
            Side::Candidate => candidate.extend(usable),
        }
    }
    let reference_times = side_times(&reference, Side::Reference)?;
    let candidate_times = side_times(&candidate, Side::Candidate)?;
    let speedup = hodges_lehmann_speedup(&reference, &candidate).map_err(|e| e.to_string())?;
    Ok(TimingSummary {
        method: methods(&evidence.samples),
        score_ms: candidate_times.median_ms,
        reference: reference_times,
        candidate: candidate_times,
        speedup,
        scored_samples: count(reference.len() + candidate.len()),
        unscored_samples: count(unscored),
        unscored_reasons: reasons,
    })
}

/// A block's samples that are times at all (a zero or negative time cannot be a kernel's).
fn usable_times(block: &TimingBlock) -> Vec<f64> {
    block
        .times_ms
        .iter()
        .copied()
        .filter(|t| t.is_finite() && *t > 0.0)
        .collect()
}

fn side_times(samples: &[f64], side: Side) -> Result<SideTimes, String> {
    let stats = Stats::from_samples(samples)
        .map_err(|e| format!("no scored {} sample: {e}", side_name(side)))?;
    Ok(SideTimes {
        samples: count(stats.count),
        median_ms: stats.median,
        min_ms: stats.min,
        mean_ms: stats.mean,
        stddev_ms: stats.stddev,
    })
}

/// The timing methods the blocks used, each once, in first-use order.
fn methods(blocks: &[TimingBlock]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for block in blocks {
        if !seen.contains(&block.method.as_str()) {
            seen.push(&block.method);
        }
    }
    seen.join(", ")
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::test_support::{block, conditions, evidence};

    #[test]
    fn scored_samples_give_the_score_and_the_speedup() {
        let summary = timing_summary(&evidence()).unwrap();
        assert_eq!(summary.method, "graph_pairs");
        assert_eq!(summary.reference.samples, 6);
        assert!((summary.reference.median_ms - 1.0).abs() < 1e-12);
        assert!((summary.score_ms - 0.2).abs() < 1e-12);
        assert!(
            (summary.speedup.value - 5.0).abs() < 0.01,
            "{:?}",
            summary.speedup
        );
        assert_eq!((summary.scored_samples, summary.unscored_samples), (12, 0));
        assert!(summary.unscored_reasons.is_empty());
    }

    #[test]
    fn unscored_blocks_and_bad_samples_are_left_out_with_their_reasons() {
        let mut e = evidence();
        e.samples[1].conditions_before = Some(crate::eval::evidence::Conditions {
            other_processes: vec![77],
            ..conditions()
        });
        e.samples[2].times_ms = vec![0.3, 0.0, 0.3];
        let summary = timing_summary(&e).unwrap();
        // Block 1's two usable samples only.
        assert_eq!(summary.candidate.samples, 2);
        assert!((summary.score_ms - 0.3).abs() < 1e-12);
        assert_eq!(summary.unscored_samples, 4);
        assert_eq!(
            summary.unscored_reasons,
            [
                "candidate block 0: other processes on the GPU before (pid 77)",
                "candidate block 1: 1 sample(s) not a positive finite time",
            ]
        );
    }

    #[test]
    fn no_blocks_or_no_scored_side_gives_why_not() {
        let mut e = evidence();
        e.samples.clear();
        assert_eq!(
            timing_summary(&e).unwrap_err(),
            "no timing block was recorded"
        );
        e.samples = vec![block(Side::Reference, 0, &[1.0])];
        assert!(
            timing_summary(&e)
                .unwrap_err()
                .starts_with("no scored candidate sample")
        );
    }
}
