//! Batch eval jobs through the local pool's warm evaluators (docs/batch.md, "Warm evals"):
//! the candidates of one CPU problem judged warm and with `--cold-evals` get the same verdicts,
//! warm ones share one trusted worker, and the later ones say that they reused the
//! reference's blocks after a drift probe.

use std::collections::BTreeSet;
use std::path::Path;

use polyprof::eval::evidence::EvalEvidence;
use polyprof::eval::verdict::EvalVerdict;

use crate::support::assert_exit;
use crate::support::batch::{batch, index, write_jobs};
use crate::support::eval::{documents, problem, python_with_numpy};

/// Candidates of the numpy problem: honest, slow, incorrect, raising, one that modifies its
/// inputs, one going after the long-lived trusted worker, and the honest one again.
const CANDIDATES: [&str; 7] = [
    "honest",
    "slow",
    "wrong_shape",
    "raises",
    "inplace",
    "hostile_warm",
    "numpy_rewrite",
];

fn eval_job(id: &str, candidate: &Path, python: &Path) -> serde_json::Value {
    serde_json::json!({
        "id": id,
        "timeout_s": 60,
        "eval": {
            "reference": problem("reference.py"),
            "candidate": candidate,
            "device": "cpu",
            "trials": 3,
            "timing_blocks": 3,
            "repeat": 4,
            "python": python,
        }
    })
}

/// What must not differ between a warm and a cold eval of one candidate.
pub fn judged(verdict: &EvalVerdict, evidence: &EvalEvidence) -> String {
    let kinds: BTreeSet<String> = verdict
        .findings
        .iter()
        .map(|f| format!("{:?}", f.kind))
        .collect();
    format!(
        "passed {} status {:?} failure {:?} findings {kinds:?}",
        verdict.passed,
        verdict.status,
        evidence.failure.as_ref().map(|f| (f.kind, f.stage)),
    )
}

/// Whether the sandbox here lets a trusted worker outlive a candidate (else the warm path
/// judges cold by design).
pub fn confines_signals(evidence: &EvalEvidence) -> bool {
    evidence
        .sandbox
        .as_ref()
        .is_some_and(|s| s.confines.iter().any(|c| c == "signals"))
}

#[test]
fn a_problems_candidates_judged_warm_in_the_pool_match_cold_and_reuse_the_reference() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let jobs: Vec<serde_json::Value> = CANDIDATES
        .iter()
        .map(|c| eval_job(c, &problem(&format!("{c}.py")), &python))
        .collect();
    let file = write_jobs(tmp.path(), &jobs);
    let warm = tmp.path().join("warm");
    let cold = tmp.path().join("cold");
    // One slot: the candidates one after another through one evaluator.
    let out = batch(&file, &warm)
        .args(["--devices", "cpu", "--jobs", "1", "-q"])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let out = batch(&file, &cold)
        .args(["--devices", "cpu", "--jobs", "1", "-q", "--cold-evals"])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let (warm_index, cold_index) = (index(&warm), index(&cold));

    let mut reused = 0;
    let mut trusted_runs = BTreeSet::new();
    for id in CANDIDATES {
        let (w, c) = (&warm_index.jobs[id], &cold_index.jobs[id]);
        assert_eq!(w.state, c.state, "{id}: {:?} / {:?}", w.errors, c.errors);
        let (ws, cs) = (w.eval.as_ref().unwrap(), c.eval.as_ref().unwrap());
        assert_eq!(
            (&ws.status, ws.passed, &ws.findings, &ws.failure),
            (&cs.status, cs.passed, &cs.findings, &cs.failure),
            "{id}: warm and cold summaries differ"
        );
        let (warm_evidence, warm_verdict) = documents(&warm.join("runs").join(id));
        let (cold_evidence, cold_verdict) = documents(&cold.join("runs").join(id));
        assert_eq!(
            judged(&warm_verdict, &warm_evidence),
            judged(&cold_verdict, &cold_evidence),
            "{id}: warm and cold verdicts differ"
        );
        // Cold: a trusted worker beside each candidate, nothing said of warmth.
        assert!(cold_evidence.trusted_run.is_none() && cold_evidence.reference_timing.is_none());
        assert!(cold.join("runs").join(id).join("reference.000").is_dir());
        if !confines_signals(&warm_evidence) {
            crate::support::record_skip(
                &crate::support::this_test(),
                "the sandbox does not confine signals here: the warm path judges cold (checked: the same verdicts)",
            );
            return;
        }
        assert!(!warm.join("runs").join(id).join("reference.000").exists());
        let trusted = warm_evidence
            .trusted_run
            .clone()
            .expect("the warm run named");
        assert!(
            Path::new(&trusted).starts_with(warm.join("warm")),
            "{id}: {trusted}"
        );
        trusted_runs.insert(trusted);
        if let Some(timing) = &warm_evidence.reference_timing
            && !timing.reused_blocks.is_empty()
        {
            reused += 1;
            let probe = timing.probe.as_ref().expect("a reuse follows a probe");
            assert!(!probe.drifted, "{id}: {probe:?}");
            assert_ne!(
                timing.measured_in,
                warm.join("runs").join(id).display().to_string()
            );
        }
    }
    // The attacker did not bring the trusted worker down: one for the whole problem.
    assert_eq!(trusted_runs.len(), 1, "{trusted_runs:?}");
    if reused == 0 {
        crate::support::record_skip(
            &crate::support::this_test(),
            "no drift probe agreed with the stored blocks on this machine (reuse not exercised)",
        );
    }
}
