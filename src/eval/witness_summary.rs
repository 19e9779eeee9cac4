//! What the witness saw, summarized: each witnessed call's GPU time (the sum of its launches'
//! durations), how the candidate's score compares with it, and how much of it ran in the
//! candidate's own kernels.

use std::collections::BTreeSet;

use crate::results::stats::percentile_of_sorted;

use super::calls::{PlacedLaunches, place_launches};
use super::candidate_match::matching_candidate;
use super::evidence::{EvalEvidence, TrialPhase, WitnessLaunch};
use super::verdict::WitnessSummary;

/// The witness's launches placed, and their summary.
#[derive(Debug)]
pub struct WitnessFacts<'a> {
    pub placed: PlacedLaunches<'a>,
    pub summary: WitnessSummary,
    /// Launches in calls that have no duration (their time is missing from `per_call_ms`).
    pub call_launches_without_duration: usize,
}

/// The witness of `evidence`, or why there is none to judge. `score_ms`: the candidate's
/// score time, when timing gave one.
pub fn witness_facts(
    evidence: &EvalEvidence,
    score_ms: Option<f64>,
) -> Result<WitnessFacts<'_>, String> {
    let Some(witness) = &evidence.witness else {
        return Err(if evidence.problem.device == "cpu" {
            "no witness on cpu".to_string()
        } else if evidence.settings.scored_trace {
            "the scored pass was traced instead: its calls are judged on the GPU timeline \
             (gpu_timeline)"
                .to_string()
        } else if evidence.settings.witness_profiler.is_none() {
            "no witness profiler was set".to_string()
        } else {
            "no witness was recorded".to_string()
        });
    };
    if let Some(error) = &witness.error {
        return Err(format!("witness error: {error}"));
    }
    if witness.launches.is_empty() {
        return Err(format!(
            "the witness ({}) recorded no kernel launch",
            witness.profiler
        ));
    }
    let witness_trials: Vec<u32> = evidence
        .trials
        .iter()
        .filter(|t| t.phase == TrialPhase::Witness)
        .map(|t| t.index)
        .collect();
    let placed = place_launches(&witness.launches, &witness_trials);
    let per_call_ms: Vec<f64> = placed
        .calls
        .values()
        .map(|launches| launches.iter().filter_map(|l| l.duration_ns).sum::<f64>() / 1e6)
        .collect();
    let mut sorted = per_call_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let median_ms = if sorted.is_empty() {
        0.0
    } else {
        percentile_of_sorted(&sorted, 50.0)
    };
    let reported_over_witnessed = score_ms.filter(|_| median_ms > 0.0).map(|s| s / median_ms);
    let (coverage, launched) = coverage(placed.call_launches(), &evidence.candidate_kernels);
    let call_launches_without_duration = placed
        .call_launches()
        .filter(|l| l.duration_ns.is_none())
        .count();
    let summary = WitnessSummary {
        profiler: witness.profiler.clone(),
        per_call_ms,
        median_ms,
        reported_over_witnessed,
        coverage,
        candidate_kernels_launched: launched,
        launches_outside_calls: u32::try_from(placed.outside.len()).unwrap_or(u32::MAX),
    };
    Ok(WitnessFacts {
        placed,
        summary,
        call_launches_without_duration,
    })
}

/// The share of `launches`' time in the candidate's kernels, and which of them ran.
fn coverage<'a>(
    launches: impl Iterator<Item = &'a WitnessLaunch>,
    candidates: &[String],
) -> (f64, Vec<String>) {
    let mut total = 0.0;
    let mut own = 0.0;
    let mut launched = BTreeSet::new();
    for launch in launches {
        let duration = launch.duration_ns.unwrap_or(0.0);
        total += duration;
        if let Some(name) = matching_candidate(&launch.short_name, candidates) {
            own += duration;
            launched.insert(name.to_string());
        }
    }
    let share = if total > 0.0 { own / total } else { 0.0 };
    (share, launched.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::test_support::{evidence, launch};

    #[test]
    fn an_honest_witness_is_summarized() {
        let e = evidence();
        let facts = witness_facts(&e, Some(0.2)).unwrap();
        let s = &facts.summary;
        assert_eq!(s.per_call_ms, [0.2, 0.2]);
        assert!((s.median_ms - 0.2).abs() < 1e-12);
        assert!((s.reported_over_witnessed.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(s.coverage, 1.0);
        assert_eq!(s.candidate_kernels_launched, ["relu_kernel"]);
        assert_eq!(s.launches_outside_calls, 0);
        assert_eq!(facts.call_launches_without_duration, 0);
    }

    #[test]
    fn coverage_counts_time_not_launches() {
        let mut e = evidence();
        if let Some(w) = e.witness.as_mut() {
            w.launches.push(launch(
                9,
                "at::native::copy_kernel<float>",
                &["polyprof/call/11"],
                600_000.0,
            ));
        }
        let facts = witness_facts(&e, None).unwrap();
        // Calls: 0.2 ms and 0.8 ms; own time 0.4 of 1.0 ms.
        assert_eq!(facts.summary.per_call_ms, [0.2, 0.8]);
        assert!((facts.summary.coverage - 0.4).abs() < 1e-12);
        assert_eq!(facts.summary.reported_over_witnessed, None);
    }

    #[test]
    fn why_there_is_no_witness() {
        let mut e = evidence();
        e.witness = None;
        e.problem.device = "cpu".into();
        assert_eq!(witness_facts(&e, None).unwrap_err(), "no witness on cpu");
        e.problem.device = "cuda".into();
        assert_eq!(
            witness_facts(&e, None).unwrap_err(),
            "no witness was recorded"
        );
        e.witness = Some(crate::eval::test_support::witness());
        if let Some(w) = e.witness.as_mut() {
            w.error = Some("ncu not found".into());
        }
        assert_eq!(
            witness_facts(&e, None).unwrap_err(),
            "witness error: ncu not found"
        );
        if let Some(w) = e.witness.as_mut() {
            w.error = None;
            w.launches.clear();
        }
        assert_eq!(
            witness_facts(&e, None).unwrap_err(),
            "the witness (ncu) recorded no kernel launch"
        );
    }
}
