//! A check that did not run is not a pass: the checks an eval calls for, by what its settings
//! planned, and those of them the audit could not run. `passed` needs none missing.
//!
//! Called for: `correctness` and `inputs_unchanged` always; `fresh_inputs` when the timing planned random
//! draws of timed outputs (`timed_checks` > 0: the host path today); `witness_time` when a
//! witness pass was planned (CUDA, a witness profiler, witness calls) — or, when the scored pass
//! was traced instead, `gpu_timeline`, and `work_matches_scored` with a work pass; `work_floor` when a work
//! pass was planned and the problem has a FLOP count (`--flops`, or the reference's analytic
//! count): a problem with analytic FLOPs whose work pass counts none has not shown its work.
//! Checks not listed here may skip for reasons of the problem itself (a task with no float
//! output has no precision to keep): the verdict still lists each with why.

use super::evidence::EvalEvidence;
use super::rules::{correctness, fresh_inputs, inputs, witness_time, work_floor};
use super::verdict::CheckRun;
use super::{timeline_checks, work_match};

/// The checks `evidence`'s eval calls for.
pub fn called_for(evidence: &EvalEvidence) -> Vec<&'static str> {
    let s = &evidence.settings;
    let mut checks = vec![correctness::CHECK, inputs::CHECK];
    if s.timed_checks > 0 && s.timing_blocks > 0 {
        checks.push(fresh_inputs::CHECK);
    }
    if evidence.problem.device == "cuda" && s.scored_trace {
        checks.push(timeline_checks::CHECK);
        if s.work_pass {
            checks.push(work_match::CHECK);
        }
    } else if evidence.problem.device == "cuda"
        && s.witness_profiler.is_some()
        && s.witness_calls > 0
    {
        checks.push(witness_time::CHECK);
    }
    if s.work_pass && flop_count(evidence).is_some() {
        checks.push(work_floor::CHECK);
    }
    checks
}

/// The FLOPs one call must do: the user's `--flops`, else the reference's analytic count.
pub fn flop_count(evidence: &EvalEvidence) -> Option<f64> {
    evidence
        .settings
        .flops_per_call
        .or(evidence.problem.reference_flops)
        .filter(|f| f.is_finite() && *f > 0.0)
}

/// `check: why not` of each check called for that did not run.
pub fn missing(evidence: &EvalEvidence, checks: &[CheckRun]) -> Vec<String> {
    called_for(evidence)
        .into_iter()
        .filter_map(|name| {
            let run = checks.iter().find(|c| c.check == name);
            match run {
                Some(c) if c.ran => None,
                Some(c) => Some(format!(
                    "{name}: {}",
                    c.why_not.as_deref().unwrap_or("no reason recorded")
                )),
                None => Some(format!("{name}: not run")),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::test_support::evidence;

    #[test]
    fn what_an_eval_calls_for_follows_its_settings() {
        let mut e = evidence();
        assert_eq!(
            called_for(&e),
            ["correctness", "inputs_unchanged", "witness_time"]
        );
        e.settings.timed_checks = 3;
        e.settings.work_pass = true;
        // A work pass, but no FLOP count: its floor is judged on bytes where it can be.
        assert_eq!(
            called_for(&e),
            [
                "correctness",
                "inputs_unchanged",
                "fresh_inputs",
                "witness_time"
            ]
        );
        e.problem.reference_flops = Some(2.0e9);
        assert!(called_for(&e).contains(&"work_floor"));
        assert_eq!(flop_count(&e), Some(2.0e9));
        e.settings.flops_per_call = Some(1.0e9);
        assert_eq!(flop_count(&e), Some(1.0e9));
        e.problem.device = "cpu".into();
        assert!(!called_for(&e).contains(&"witness_time"));
    }

    #[test]
    fn a_check_called_for_that_did_not_run_is_missing_with_why() {
        let mut e = evidence();
        e.settings.timed_checks = 3;
        let checks = vec![
            CheckRun {
                check: "correctness".into(),
                ran: true,
                why_not: None,
                not_judged: Vec::new(),
            },
            CheckRun {
                check: "fresh_inputs".into(),
                ran: false,
                why_not: Some("one input set".into()),
                not_judged: Vec::new(),
            },
        ];
        assert_eq!(
            missing(&e, &checks),
            [
                "inputs_unchanged: not run",
                "fresh_inputs: one input set",
                "witness_time: not run"
            ]
        );
    }
}
