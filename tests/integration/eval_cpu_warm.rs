//! The warm evaluator on `--device cpu` (docs/eval-harness.md, "The warm evaluator"): a
//! directory of candidates (honest, slow, incorrect, raising, crashing, hanging, hostile ones,
//! one of them going after the long-lived trusted worker) judged through one trusted worker
//! and then cold, one trusted worker each: the same verdict for every candidate, the reference's
//! blocks reused only after their drift probe and said so in the evidence.

use std::collections::BTreeSet;
use std::path::Path;

use polyprof::eval::evidence::{EvalEvidence, Side};
use polyprof::eval::verdict::EvalVerdict;

use crate::support::eval::{documents, problem, python_with_numpy};

const CANDIDATES: [&str; 9] = [
    "honest.py",
    "slow.py",
    "hostile_warm.py",
    "wrong_shape.py",
    "raises.py",
    "segfaults.py",
    "hangs.py",
    "inplace.py",
    "hostile_cache_pointer.py",
];

fn judge_dir(python: &Path, candidates: &Path, out: &Path, extra: &[&str]) {
    let status = crate::support::polyprof()
        .args(["eval", "--device", "cpu", "--trials", "3", "--blocks", "3"])
        .args(["--repeat", "4", "--warmup", "1", "--timeout", "5"])
        .arg("--python")
        .arg(python)
        .arg("--reference")
        .arg(problem("reference.py"))
        .arg("--candidate")
        .arg(candidates)
        .arg("--output-dir")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    // Some candidates fail by design: 1 (judged, not all passed), never 2 (not run).
    assert_eq!(
        status.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
}

/// What must not differ between a warm and a cold eval of one candidate.
fn judged(verdict: &EvalVerdict, evidence: &EvalEvidence) -> String {
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

fn confines_signals(evidence: &EvalEvidence) -> bool {
    evidence
        .sandbox
        .as_ref()
        .is_some_and(|s| s.confines.iter().any(|c| c == "signals"))
}

#[test]
fn warm_and_cold_judge_every_candidate_alike_and_the_reuse_is_recorded() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let candidates = tmp.path().join("candidates");
    std::fs::create_dir(&candidates).unwrap();
    for name in CANDIDATES {
        std::fs::copy(problem(name), candidates.join(name)).unwrap();
    }
    let warm = tmp.path().join("warm");
    let cold = tmp.path().join("cold");
    judge_dir(&python, &candidates, &warm, &[]);
    judge_dir(&python, &candidates, &cold, &["--cold"]);

    let mut seeds = BTreeSet::new();
    let mut reused = 0;
    let mut names: Vec<&str> = CANDIDATES.to_vec();
    names.sort_unstable();
    for name in &names {
        let stem = name.trim_end_matches(".py");
        let (warm_evidence, warm_verdict) = documents(&warm.join(stem));
        let (cold_evidence, cold_verdict) = documents(&cold.join(stem));
        assert_eq!(
            judged(&warm_verdict, &warm_evidence),
            judged(&cold_verdict, &cold_evidence),
            "{name}: warm and cold verdicts differ"
        );
        // Same document shape: the cold one says nothing of warmth.
        assert!(cold_evidence.reference_timing.is_none() && cold_evidence.trusted_run.is_none());
        assert!(cold.join(stem).join("reference.000").is_dir());
        if !confines_signals(&warm_evidence) {
            crate::support::record_skip(
                &crate::support::this_test(),
                "the sandbox does not confine signals here: the warm path judges cold (checked: the same verdicts)",
            );
            continue;
        }
        // One trusted worker for all: none in the candidate's directory.
        assert!(!warm.join(stem).join("reference.000").exists(), "{name}");
        let trusted_run = warm_evidence
            .trusted_run
            .clone()
            .expect("the warm run named");
        assert!(
            trusted_run.ends_with("warm-reference.000/reference.000"),
            "{trusted_run}"
        );
        // Trial seeds are never repeated across the candidates of one trusted worker.
        for trial in &warm_evidence.trials {
            assert!(
                seeds.insert((trial.index, trial.seed)),
                "{name}: trial {} again",
                trial.index
            );
        }
        // A timed candidate says where its reference blocks came from; reused ones are the
        // stored blocks themselves, block 0 always measured here (the probe).
        let reference: Vec<_> = warm_evidence
            .samples
            .iter()
            .filter(|b| b.side == Side::Reference)
            .collect();
        if reference.is_empty() {
            continue;
        }
        let timing = warm_evidence
            .reference_timing
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: timed with no reference_timing"));
        assert_eq!(reference.len(), 3, "{name}");
        if timing.reused_blocks.is_empty() {
            assert!(timing.measured_because.is_some(), "{name}: {timing:?}");
            assert_eq!(timing.measured_in, warm.join(stem).display().to_string());
        } else {
            reused += 1;
            assert_eq!(timing.reused_blocks, [1, 2], "{name}");
            let probe = timing.probe.as_ref().expect("a reuse follows a probe");
            assert!(!probe.drifted, "{name}: {probe:?}");
            assert!(probe.median_ms <= probe.stored_high_ms * probe.bound);
            assert!(probe.median_ms >= probe.stored_low_ms / probe.bound);
            assert_ne!(timing.measured_in, warm.join(stem).display().to_string());
            let (source, _) = documents(Path::new(&timing.measured_in));
            for block in &timing.reused_blocks {
                let here = reference.iter().find(|b| b.block == *block).unwrap();
                let there = source
                    .samples
                    .iter()
                    .find(|b| b.side == Side::Reference && b.block == *block)
                    .unwrap();
                assert_eq!(*here, there, "{name}: reused block {block}");
            }
        }
    }
    if reused == 0 {
        // Every probe drifted (a loaded machine): the reference was re-measured each time, as
        // cold; the reuse itself went untested in this run.
        crate::support::record_skip(
            &crate::support::this_test(),
            "no drift probe agreed with the stored blocks on this machine (reuse not exercised)",
        );
    }
    // The attacker planted nothing and the trusted worker lived through it all.
    let warm_root = warm.join("warm-reference.000");
    assert!(!warm_root.join("harness/planted").exists());
    assert!(!warm.join("warm-reference.001").exists());
}

#[test]
fn without_the_sandbox_every_candidate_is_judged_cold() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let candidates = tmp.path().join("candidates");
    std::fs::create_dir(&candidates).unwrap();
    for name in ["honest.py", "raises.py", "same_as_reference.py"] {
        std::fs::copy(problem(name), candidates.join(name)).unwrap();
    }
    let out = tmp.path().join("out");
    judge_dir(&python, &candidates, &out, &["--sandbox", "off"]);
    for stem in ["honest", "raises", "same_as_reference"] {
        // A trusted worker of its own beside each unconfined candidate, nothing reused.
        assert!(out.join(stem).join("reference.000").is_dir(), "{stem}");
        let (evidence, _) = documents(&out.join(stem));
        assert!(evidence.reference_timing.is_none() && evidence.trusted_run.is_none());
    }
    let warm_dirs = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("warm-reference")
        })
        .count();
    assert_eq!(warm_dirs, 0);
}
