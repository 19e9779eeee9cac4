//! `polyprof eval --device cpu` end to end, with real workers on numpy problems
//! (tests/programs/eval/): an honest candidate and hostile ones (it modifies its input, raises,
//! hangs, dies of SIGSEGV, answers with the wrong shape), a broken reference, bad paths.

use std::path::Path;
use std::time::{Duration, Instant};

use polyprof::eval::evidence::{FailureKind, Stage, TrialPhase};
use polyprof::eval::verdict::{FindingKind, Status};
use polyprof::model::run::ProfileRun;

use crate::support::assert_exit;
use crate::support::eval::{
    CpuEval, audited, documents, eval_cpu, eval_problem, problem, python_with_numpy,
};

/// The candidate copied into a fresh directory (the honest one writes what it saw beside
/// itself).
fn staged(tmp: &Path, name: &str) -> std::path::PathBuf {
    let path = tmp.join(name);
    std::fs::copy(problem(name), &path).unwrap();
    path
}

#[test]
fn an_honest_candidate_is_judged_correct_and_never_sees_a_seed() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let candidate = staged(tmp.path(), "honest.py");
    let dir = tmp.path().join("eval");
    let out = eval_cpu(&python, &problem("reference.py"), &candidate, &dir, &[]);
    let (evidence, verdict) = documents(&dir);
    assert_exit(&out, if verdict.passed { 0 } else { 1 });
    if audited(&verdict) {
        assert!(verdict.passed, "{verdict:#?}");
    }
    assert_eq!(verdict.status, Status::Correct);
    assert!(evidence.failure.is_none(), "{:?}", evidence.failure);
    assert_eq!(evidence.problem.framework, "numpy");
    assert_eq!(evidence.problem.device, "cpu");
    assert_eq!(evidence.problem.reference.sha256.len(), 64);

    // Three correctness trials on distinct secret seeds, each compared and passed, the inputs
    // untouched; timed outputs drawn after each candidate block and checked.
    let correctness: Vec<_> = evidence
        .trials
        .iter()
        .filter(|t| t.phase == TrialPhase::Correctness)
        .collect();
    assert_eq!(correctness.len(), 3);
    let mut seeds: Vec<u64> = correctness.iter().map(|t| t.seed).collect();
    seeds.dedup();
    assert_eq!(seeds.len(), 3, "seeds differ per trial: {seeds:?}");
    for trial in &evidence.trials {
        let comparison = trial.comparison.as_ref().expect("compared");
        assert!(comparison.passed, "{trial:?}");
        assert_eq!(comparison.total_elements, 32 * 64);
        assert_eq!(trial.inputs_unchanged, Some(true));
    }
    let timed = evidence
        .trials
        .iter()
        .filter(|t| t.phase == TrialPhase::Timed)
        .count();
    // Each candidate block's draw: 3 of its 3 calls (at least 3 a block, all when fewer).
    assert_eq!(timed, 2 * 3);
    // Blocks interleaved, each side first in turn.
    let order: Vec<String> = evidence
        .samples
        .iter()
        .map(|b| format!("{:?}{}", b.side, b.block))
        .collect();
    assert_eq!(
        order,
        ["Reference0", "Candidate0", "Candidate1", "Reference1"]
    );
    assert!(
        evidence
            .samples
            .iter()
            .all(|b| b.times_ms.len() == 3 && b.method == "host")
    );

    // What the candidate's process could see: no seed in its argv, /proc cmdline or environ,
    // nor in any worker's recorded argv.
    let seen: Vec<String> = std::fs::read_to_string(dir.join("candidate.000/run.1.stderr.log"))
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("SEEN "))
        .map(str::to_string)
        .collect();
    assert_eq!(seen.len(), 1, "the candidate's worker ran once");
    let mut recorded = seen.clone();
    for run_dir in ["reference.000", "candidate.000"] {
        let run = ProfileRun::read(&dir.join(run_dir)).unwrap();
        let argv: Vec<String> = run.target.iter().map(ToString::to_string).collect();
        assert!(argv.contains(&"--socket".to_string()), "{argv:?}");
        recorded.push(argv.join(" "));
        recorded.push(serde_json::to_string(&run.plan).unwrap());
    }
    assert!(
        seen[0].contains("MALLOC_PERTURB_"),
        "the candidate's environment is set"
    );
    let all_seeds = evidence
        .trials
        .iter()
        .map(|t| t.seed)
        .chain([evidence.settings.init_seed]);
    for seed in all_seeds.filter(|&s| s >= 10_000_000) {
        let text = seed.to_string();
        for what in &recorded {
            // Whole numbers only: a seed inside a longer number is no leak.
            let leaked = what.match_indices(&text).any(|(at, _)| {
                let before = what[..at].chars().next_back();
                let after = what[at + text.len()..].chars().next();
                !before.is_some_and(|c| c.is_ascii_digit())
                    && !after.is_some_and(|c| c.is_ascii_digit())
            });
            assert!(!leaked, "seed {seed} is visible to a worker: {what}");
        }
    }
    // The seeds of the trials are not the init seed's (which both sides know).
    assert!(!seeds.contains(&evidence.settings.init_seed));
    // `--json` prints the verdict document itself.
    let dir2 = tmp.path().join("eval2");
    let out = eval_cpu(
        &python,
        &problem("reference.py"),
        &candidate,
        &dir2,
        &["--json", "--seed-init", "7"],
    );
    let printed: polyprof::eval::EvalVerdict = serde_json::from_slice(&out.stdout).unwrap();
    let (evidence2, verdict2) = documents(&dir2);
    assert_eq!(printed, verdict2);
    assert_eq!(evidence2.settings.init_seed, 7);
}

#[test]
fn the_work_pass_options_are_recorded_and_the_cpu_takes_no_work_pass() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    // A staged copy: the honest candidate writes what it saw beside itself.
    let tmp = tempfile::tempdir().unwrap();
    let candidate = staged(tmp.path(), "honest.py");
    let reference = problem("reference.py");
    let dir = tmp.path().join("eval");
    let extra = ["--work-calls", "2", "--flops", "65536", "--allow-tf32"];
    let out = eval_cpu(&python, &reference, &candidate, &dir, &extra);
    let (evidence, verdict) = documents(&dir);
    assert_exit(&out, if verdict.passed { 0 } else { 1 });
    assert_eq!(verdict.status, Status::Correct);
    let settings = &evidence.settings;
    assert_eq!(settings.work_calls, 2);
    assert_eq!(settings.flops_per_call, Some(65536.0));
    assert!(settings.allow_tf32);
    // Asked for (the default), but there is no work pass on the CPU: none planned, none taken,
    // no run directory, no trial of its phase.
    assert!(!settings.work_pass);
    assert!(evidence.work.is_none() && evidence.reference_work.is_none());
    assert!(!dir.join("work.000").exists() && !dir.join("reference-work.000").exists());
    assert!(evidence.trials.iter().all(|t| t.phase != TrialPhase::Work));

    // The defaults, and `--no-work-pass`, recorded as given.
    let dir = tmp.path().join("eval-off");
    eval_cpu(&python, &reference, &candidate, &dir, &["--no-work-pass"]);
    let (evidence, _) = documents(&dir);
    assert_eq!(evidence.settings.work_calls, 1);
    assert_eq!(evidence.settings.flops_per_call, None);
    assert!(!evidence.settings.allow_tf32 && !evidence.settings.work_pass);
    let refused = crate::support::polyprof()
        .args([
            "eval",
            "--device",
            "cpu",
            "--reference",
            "r.py",
            "--candidate",
            "c.py",
            "--flops",
            "0",
        ])
        .output()
        .unwrap();
    assert_exit(&refused, 2);
    let text = String::from_utf8_lossy(&refused.stderr);
    assert!(text.contains("flops per call"), "{text}");
}

#[test]
fn a_candidate_that_writes_into_its_input_is_caught() {
    let Some(CpuEval {
        dir,
        out,
        keep: _keep,
    }) = eval_problem("inplace.py", &[])
    else {
        return;
    };
    assert_exit(&out, 1);
    let (evidence, verdict) = documents(&dir);
    let first = &evidence.trials[0];
    assert_eq!(first.inputs_unchanged, Some(false), "{first:?}");
    // Its output itself was right.
    assert!(first.comparison.as_ref().is_some_and(|c| c.passed));
    if audited(&verdict) {
        assert!(
            verdict
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::InputsModified),
            "{verdict:#?}"
        );
    }
}

#[test]
fn a_candidate_that_raises_fails_with_its_traceback_in_the_kept_log() {
    let Some(CpuEval {
        dir,
        out,
        keep: _keep,
    }) = eval_problem("raises.py", &[])
    else {
        return;
    };
    assert_exit(&out, 1);
    let (evidence, verdict) = documents(&dir);
    let failure = evidence.failure.as_ref().expect("a failure");
    assert_eq!(failure.kind, FailureKind::Raised);
    assert_eq!(failure.stage, Stage::Correctness);
    assert!(
        failure.message.contains("candidate gave up on purpose"),
        "{failure:?}"
    );
    assert_eq!(verdict.status, Status::Failed);
    assert_eq!(verdict.failure.as_ref(), Some(failure));
    // The trial made before the failure is kept; the log is the candidate's and on disk.
    assert_eq!(evidence.trials.len(), 1);
    assert!(evidence.trials[0].comparison.is_none());
    let log = failure.log.as_deref().expect("a log");
    assert!(log.starts_with("candidate.000/"), "{log}");
    assert!(dir.join(log).is_file());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("the eval failed") && stdout.contains("raised during"),
        "{stdout}"
    );
}

#[test]
fn a_candidate_that_hangs_is_killed_at_the_call_limit() {
    let started = Instant::now();
    let Some(CpuEval {
        dir,
        out,
        keep: _keep,
    }) = eval_problem("hangs.py", &["--timeout", "2"])
    else {
        return;
    };
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the eval took {:?}",
        started.elapsed()
    );
    assert_exit(&out, 1);
    let (evidence, _) = documents(&dir);
    let failure = evidence.failure.as_ref().expect("a failure");
    assert_eq!(failure.kind, FailureKind::Timeout, "{failure:?}");
    assert!(failure.message.contains("`call` within 2 s"), "{failure:?}");
    // The hung worker is gone: its run ended (killed), not left behind.
    let run = ProfileRun::read(&dir.join("candidate.000")).unwrap();
    assert!(run.outcome.is_some_and(|o| !o.is_success()));
}

#[test]
fn a_candidate_that_segfaults_crashed_with_its_signal() {
    let Some(CpuEval {
        dir,
        out,
        keep: _keep,
    }) = eval_problem("segfaults.py", &[])
    else {
        return;
    };
    assert_exit(&out, 1);
    let (evidence, _) = documents(&dir);
    let failure = evidence.failure.as_ref().expect("a failure");
    assert_eq!(failure.kind, FailureKind::Crashed, "{failure:?}");
    assert!(failure.message.contains("SIGSEGV"), "{failure:?}");
}

#[test]
fn a_wrong_shape_is_incorrect_and_not_timed() {
    let Some(CpuEval {
        dir,
        out,
        keep: _keep,
    }) = eval_problem("wrong_shape.py", &[])
    else {
        return;
    };
    assert_exit(&out, 1);
    let (evidence, verdict) = documents(&dir);
    assert!(evidence.failure.is_none());
    for trial in &evidence.trials {
        let comparison = trial.comparison.as_ref().expect("compared");
        assert!(!comparison.passed);
        assert_eq!(comparison.mismatch.as_deref(), Some("shape"));
    }
    assert!(
        evidence.samples.is_empty(),
        "an incorrect candidate is not timed"
    );
    if audited(&verdict) {
        assert_eq!(verdict.status, Status::Incorrect);
    }
}

#[test]
fn a_broken_reference_or_a_missing_file_is_the_evals_failure() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let honest = staged(tmp.path(), "honest.py");
    let dir = tmp.path().join("eval");
    let out = eval_cpu(&python, &problem("broken_reference.py"), &honest, &dir, &[]);
    assert_exit(&out, 2);
    let (evidence, _) = documents(&dir);
    let failure = evidence.failure.as_ref().expect("a failure");
    assert_eq!(failure.kind, FailureKind::ReferenceError, "{failure:?}");
    assert_eq!(failure.stage, Stage::Reference);
    // The candidate never started.
    assert!(!dir.join("candidate.000").exists());

    let out = eval_cpu(
        &python,
        &tmp.path().join("missing.py"),
        &honest,
        &tmp.path().join("eval2"),
        &[],
    );
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing.py"), "{stderr}");

    // A Python that does not exist is named, with what to do.
    let out = eval_cpu(
        Path::new("/nonexistent/python3"),
        &problem("reference.py"),
        &honest,
        &tmp.path().join("eval3"),
        &[],
    );
    assert_exit(&out, 2);
    let (evidence, _) = documents(&tmp.path().join("eval3"));
    let failure = evidence.failure.expect("a failure");
    assert_eq!(failure.kind, FailureKind::Harness);
    assert!(failure.message.contains("--python"), "{failure:?}");

    // An output directory that already holds an eval is refused.
    let out = eval_cpu(&python, &problem("reference.py"), &honest, &dir, &[]);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not empty"));
}
