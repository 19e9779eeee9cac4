//! `work_matches_scored`: the work pass (counters, under the profiler) must launch the scored
//! pass's kernels and take about as long (`work_match`); a candidate that behaves differently
//! when it is profiled (`cudaProfilerStop` around its real kernel, a check of its environment)
//! shows it here.

use super::{Facts, RuleOutcome};
use crate::eval::calls::place_launches;
use crate::eval::work_match::{CHECK, CallKernels, base_name, judge_work_match, scored_calls};
use crate::eval::work_pass::candidate_work;

pub fn check(facts: &Facts) -> RuleOutcome {
    let timeline = match facts.timeline {
        Ok(timeline) => timeline,
        Err(why) => return RuleOutcome::skipped(CHECK, why),
    };
    let evidence = facts.evidence;
    // A work pass that recorded no launch at all is the comparison's strongest case: the
    // profiler saw none of the scored pass's kernels.
    let pass = match (&evidence.work, candidate_work(evidence)) {
        (_, Ok(pass)) => pass,
        (Some(pass), Err(_)) if pass.error.is_none() => pass,
        (_, Err(why)) => return RuleOutcome::skipped(CHECK, why),
    };
    let placed = place_launches(&pass.launches, &[]);
    let mut work: Vec<CallKernels> = placed
        .calls
        .values()
        .map(|launches| CallKernels {
            kernels: launches
                .iter()
                .map(|l| {
                    let ns = l.duration_ns.unwrap_or(0.0).max(0.0) as u64;
                    (base_name(&l.name), ns)
                })
                .collect(),
        })
        .collect();
    if work.is_empty() {
        // The work pass made its calls (its trials are in the evidence) but none launched.
        let calls = evidence
            .trials
            .iter()
            .filter(|t| t.phase == crate::eval::evidence::TrialPhase::Work)
            .count();
        work = vec![CallKernels { kernels: vec![] }; calls.max(1)];
    }
    let scored = scored_calls(&timeline.trace, &timeline.requests, &timeline.timeline);
    RuleOutcome::ran(CHECK, judge_work_match(&scored, &work))
}
