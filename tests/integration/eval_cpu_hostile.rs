//! Hostile CPU candidates of our own against the fresh-input timing (tests/programs/eval/):
//! caches by content, by address and in part, calls told apart by counting or by reading the
//! timing loop's frame, a warm-up memo. Each of them passed today's harness before the pool
//! (speedup 1.7-4.6x, no finding); now a cache cannot hit (every timed call has inputs of its
//! own) and a candidate that skips work on calls it guesses are not compared is caught by the
//! draw made after the block. Honest candidates pass with no finding.

use polyprof::eval::evidence::{EvalEvidence, Side, TrialPhase};
use polyprof::eval::verdict::{EvalVerdict, FindingKind, Status};

use crate::support::assert_exit;
use crate::support::eval::{documents, problem, python_with_numpy};

/// Enough calls and draws that a candidate wrong on every call it thinks unchecked is drawn:
/// 5 blocks x 4 of 20 calls.
const ARGS: [&str; 6] = ["--blocks", "5", "--repeat", "20", "--warmup", "2"];

fn judge(candidate: &str) -> Option<(EvalEvidence, EvalVerdict, tempfile::TempDir)> {
    let python = python_with_numpy()?;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("eval");
    let out = crate::support::polyprof()
        .args(["eval", "--device", "cpu", "--trials", "2"])
        .args(ARGS)
        .arg("--python")
        .arg(&python)
        .arg("--reference")
        .arg(problem("reference.py"))
        .arg("--candidate")
        .arg(problem(candidate))
        .arg("--output-dir")
        .arg(&dir)
        .output()
        .unwrap();
    let (evidence, verdict) = documents(&dir);
    assert_exit(&out, if verdict.passed { 0 } else { 1 });
    Some((evidence, verdict, tmp))
}

fn kinds(verdict: &EvalVerdict) -> Vec<FindingKind> {
    verdict.findings.iter().map(|f| f.kind).collect()
}

/// Not passed, with a finding of `kind`.
fn assert_caught(verdict: &EvalVerdict, kind: FindingKind) {
    assert!(!verdict.passed, "{verdict:#?}");
    assert!(kinds(verdict).contains(&kind), "{verdict:#?}");
}

/// The pool and the draw as the evidence records them: 20 distinct sets per block, none the
/// warm-up's, 4 calls compared per candidate block, each comparison a timed trial of its call.
fn assert_fresh_inputs(evidence: &EvalEvidence) {
    assert_eq!(evidence.settings.timed_checks, 4);
    let mut all_sets = Vec::new();
    for block in &evidence.samples {
        assert_eq!(block.input_trials.len(), 20, "{block:?}");
        let warm = block.warmup_trial.expect("a warm-up trial");
        assert!(!block.input_trials.contains(&warm));
        assert_eq!(block.other_side_stopped, Some(true));
        if block.side == Side::Candidate {
            assert_eq!(block.checked_calls.len(), 4);
            all_sets.extend(block.input_trials.iter().copied());
        } else {
            assert!(block.checked_calls.is_empty());
        }
    }
    // A fresh pool every round.
    let mut distinct = all_sets.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), all_sets.len());
    assert_eq!(distinct.len(), 100);
    let timed: Vec<_> = evidence
        .trials
        .iter()
        .filter(|t| t.phase == TrialPhase::Timed)
        .collect();
    assert_eq!(timed.len(), 20);
    assert!(
        timed
            .iter()
            .all(|t| t.timed_call.is_some() && t.block.is_some())
    );
}

#[test]
fn a_cache_by_content_never_hits_on_fresh_inputs() {
    let Some((evidence, verdict, _tmp)) = judge("hostile_cache_content.py") else {
        return;
    };
    assert_fresh_inputs(&evidence);
    // Every call misses and pays its (20x) honest path: no speedup left to claim.
    let timing = verdict.timing.expect("timed");
    assert!(timing.speedup.value < 0.5, "{:?}", timing.speedup);
}

#[test]
fn a_partial_cache_never_hits_on_fresh_inputs() {
    let Some((_, verdict, _tmp)) = judge("hostile_partial_cache.py") else {
        return;
    };
    let timing = verdict.timing.expect("timed");
    assert!(timing.speedup.value < 0.5, "{:?}", timing.speedup);
}

#[test]
fn a_cache_by_address_hands_back_stale_answers_and_is_caught() {
    let Some((evidence, verdict, _tmp)) = judge("hostile_cache_pointer.py") else {
        return;
    };
    assert_fresh_inputs(&evidence);
    // A later pool's arrays land at an earlier pool's addresses: the stored answer is wrong.
    assert!(!verdict.passed);
    assert_eq!(verdict.status, Status::Incorrect);
    assert!(
        kinds(&verdict).contains(&FindingKind::TimedOutputIncorrect),
        "{verdict:#?}"
    );
}

#[test]
fn calls_told_apart_by_counting_are_drawn_and_caught() {
    let Some((evidence, verdict, _tmp)) = judge("hostile_count_calls.py") else {
        return;
    };
    assert_fresh_inputs(&evidence);
    assert_caught(&verdict, FindingKind::TimedOutputIncorrect);
}

#[test]
fn calls_told_apart_by_the_timing_loops_frame_are_drawn_and_caught() {
    let Some((_, verdict, _tmp)) = judge("hostile_frame_locals.py") else {
        return;
    };
    assert_caught(&verdict, FindingKind::TimedOutputIncorrect);
}

#[test]
fn a_warm_up_memo_answers_for_other_inputs_and_is_caught() {
    let Some((_, verdict, _tmp)) = judge("hostile_warmup_memo.py") else {
        return;
    };
    assert_caught(&verdict, FindingKind::TimedOutputIncorrect);
}

#[test]
fn honest_candidates_pass_and_an_identical_one_reads_about_one() {
    for candidate in ["same_as_reference.py", "numpy_rewrite.py"] {
        let Some((evidence, verdict, _tmp)) = judge(candidate) else {
            return;
        };
        assert_fresh_inputs(&evidence);
        assert!(verdict.passed, "{candidate}: {verdict:#?}");
        assert!(verdict.findings.is_empty());
        assert_eq!(verdict.timed_input_sets, Some(100));
        assert_eq!(verdict.timed_outputs_compared, Some(20));
        // A numpy problem has no analytic FLOP count, and says so.
        let note = evidence.problem.flops_note.as_deref().unwrap_or("");
        assert!(note.contains("numpy problem"), "{note}");
        assert_eq!(evidence.problem.reference_flops, None);
        if candidate == "same_as_reference.py" {
            // One thread and one CPU for both sides, each side alone: the reference against
            // itself reads 1.0 within the shared machine's noise (0.9-1.12 measured here).
            let speedup = verdict.timing.expect("timed").speedup;
            assert!(
                (0.67..1.5).contains(&speedup.value),
                "an identical candidate read {speedup:?}"
            );
        }
    }
}
