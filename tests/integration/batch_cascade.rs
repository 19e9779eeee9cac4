//! The cascade of a job file's `problem`s, driving the real binary: candidates of one problem
//! go through their stages cheapest first; a stage runs only after the one before passed, the
//! profile stage only within the margin (or the top K) of the best time; skipped jobs are
//! entries that say why; the summary counts each stage; `--resume` reruns no stage.

use std::path::Path;

use polyprof::model::batch::EntryState;

use crate::support::assert_exit;
use crate::support::batch::{
    CommandProblem, batch, counts, entry, index, stage_counts, write_jobs,
};
use crate::support::eval::{problem, python_with_numpy};

/// Lines in `path` (one per run of what appends to it).
fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// The numpy reference as a candidate (`ModelNew`), with `edit` applied to its source.
fn candidate(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> std::path::PathBuf {
    let source = std::fs::read_to_string(problem("reference.py"))
        .unwrap()
        .replace("class Model:", "class ModelNew:");
    let path = dir.join(format!("{name}.py"));
    std::fs::write(&path, edit(source)).unwrap();
    path
}

#[test]
fn eval_candidates_go_through_the_stages_cheapest_first_and_resume_reruns_none() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path().join("c");
    std::fs::create_dir(&c).unwrap();
    let same = |s: String| s;
    let fast1 = candidate(&c, "fast1", same);
    let fast2 = candidate(&c, "fast2", same);
    // Correct, and a hundred times slower than the others: out by the margin.
    let slow = candidate(&c, "slow", |s| {
        s.replace("import numpy as np", "import time\nimport numpy as np")
            .replace(
                "        return (np.tanh",
                "        time.sleep(0.005)\n        return (np.tanh",
            )
    });
    let wrong = candidate(&c, "wrong", |s| {
        s.replace("* self.scale)", "* self.scale * 2)")
    });
    let syntax = c.join("syntax.py");
    std::fs::write(&syntax, "class ModelNew(:\n").unwrap();
    // The compile stage counts its runs beside each candidate.
    let compile = format!(
        "echo run >> \"$1.compiled\"; exec '{}' -m py_compile \"$1\"",
        python.display()
    );
    let file = write_jobs(
        tmp.path(),
        &[serde_json::json!({"problem": {
            "id": "mm",
            "reference": problem("reference.py"),
            "candidates": [fast1, fast2, slow, wrong, syntax],
            "stages": ["compile", "check", "time", "profile"],
            "compile": ["sh", "-c", compile, "compile", "{candidate}"],
            "profile": {"margin": 20.0},
            "eval": {"device": "cpu", "witness_profiler": "none", "trials": 2,
                     "timing_blocks": 2, "repeat": 3, "python": python},
            "timeout_s": 60
        }})],
    );
    let root = tmp.path().join("out");
    let out = batch(&file, &root)
        .args(["--devices", "cpu", "--jobs", "2"])
        .output()
        .unwrap();
    // The candidate that does not compile is a failed job.
    assert_exit(&out, 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = index(&root);
    let state = |id: &str| first.jobs[id].state;

    for name in ["fast1", "fast2"] {
        for stage in ["compile", "check", "time", "profile"] {
            let id = format!("mm.{name}.{stage}");
            assert_eq!(state(&id), EntryState::Succeeded, "{:?}", first.jobs[&id]);
        }
    }
    assert!(
        first.jobs["mm.fast1.time"]
            .eval
            .as_ref()
            .unwrap()
            .score_ms
            .is_some()
    );
    // Each stage did its own part only: the check and the profile stage took no time.
    assert!(
        first.jobs["mm.fast1.check"]
            .eval
            .as_ref()
            .unwrap()
            .speedup
            .is_none()
    );
    assert!(
        first.jobs["mm.fast1.profile"]
            .eval
            .as_ref()
            .unwrap()
            .speedup
            .is_none()
    );

    // Timed, then left out of profiling by the margin, with its figure and the limit.
    assert_eq!(state("mm.slow.time"), EntryState::Succeeded);
    let slow_profile = &first.jobs["mm.slow.profile"];
    assert_eq!(slow_profile.state, EntryState::Skipped);
    assert_eq!(slow_profile.attempts, 0);
    let skip = slow_profile
        .cascade
        .as_ref()
        .unwrap()
        .skip
        .as_ref()
        .unwrap();
    assert_eq!(skip.decided_by, "profile");
    let best = ["mm.fast1.time", "mm.fast2.time"]
        .map(|id| first.jobs[id].eval.as_ref().unwrap().score_ms.unwrap())
        .into_iter()
        .fold(f64::INFINITY, f64::min);
    assert_eq!(
        skip.figure,
        first.jobs["mm.slow.time"].eval.as_ref().unwrap().score_ms
    );
    assert!((skip.limit.unwrap() - best * 21.0).abs() < 1e-9, "{skip:?}");
    assert!(skip.reason.contains("+ 2000 % margin"), "{}", skip.reason);
    assert!(!root.join("runs/mm.slow.profile/verdict.json").exists());
    // The entry on disk says the same.
    assert_eq!(&entry(&root, "mm.slow.profile"), slow_profile);

    // Judged incorrect at the check: never timed nor profiled.
    assert_eq!(state("mm.wrong.check"), EntryState::Succeeded);
    assert!(!first.jobs["mm.wrong.check"].eval.as_ref().unwrap().passed);
    for stage in ["time", "profile"] {
        let e = &first.jobs[&format!("mm.wrong.{stage}")];
        assert_eq!(e.state, EntryState::Skipped, "{e:?}");
        let skip = e.cascade.as_ref().unwrap().skip.as_ref().unwrap();
        assert_eq!(skip.decided_by, "check");
        assert!(skip.reason.contains("verdict incorrect"), "{}", skip.reason);
    }
    // Did not compile: nothing after it ran.
    assert_eq!(state("mm.syntax.compile"), EntryState::Failed);
    for stage in ["check", "time", "profile"] {
        let e = &first.jobs[&format!("mm.syntax.{stage}")];
        assert_eq!(e.state, EntryState::Skipped);
        assert_eq!(
            e.cascade
                .as_ref()
                .unwrap()
                .skip
                .as_ref()
                .unwrap()
                .decided_by,
            "compile"
        );
    }

    assert_eq!(
        stage_counts(&first),
        counts(&[
            ("compile", 5, 4, 0),
            ("check", 4, 3, 1),
            ("time", 3, 3, 2),
            ("profile", 2, 2, 3),
        ])
    );
    let summary = first.cascade.as_ref().unwrap();
    assert!(summary.saved_device_s > 0.0, "{summary:?}");
    assert!(summary.saved_by_cache_s.is_none());
    assert!(stdout.contains("cascade: stage"), "{stdout}");
    assert!(stdout.contains("the cascade saved about"), "{stdout}");
    assert!(
        stdout.contains("20 jobs: 13 succeeded, 1 failed, 6 skipped"),
        "{stdout}"
    );

    // A resume runs no stage again (the skips are decided again, to the same answers).
    let evidence = |id: &str| std::fs::read(root.join("runs").join(id).join("evidence.json")).ok();
    let ran = [
        "mm.fast1.check",
        "mm.fast1.time",
        "mm.fast2.profile",
        "mm.wrong.check",
    ];
    let before: Vec<_> = ran.map(evidence).into();
    let again = batch(&file, &root)
        .args(["--devices", "cpu", "--jobs", "2", "-q", "--resume"])
        .output()
        .unwrap();
    assert_exit(&again, 1);
    let after: Vec<_> = ran.map(evidence).into();
    assert!(before.iter().all(Option::is_some));
    assert_eq!(before, after);
    for name in ["fast1", "fast2", "slow", "wrong", "syntax"] {
        assert_eq!(lines(&c.join(format!("{name}.py.compiled"))), 1, "{name}");
    }
    let second = index(&root);
    assert_eq!(stage_counts(&second), stage_counts(&first));
    assert_eq!(second.jobs["mm.slow.profile"].state, EntryState::Skipped);

    // Without the cascade every stage runs for every candidate: the baseline it saves against.
    let all = tmp.path().join("all");
    let out = batch(&file, &all)
        .args(["--devices", "cpu", "--jobs", "2", "-q", "--all-stages"])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let every = index(&all);
    assert!(every.jobs.values().all(|e| e.state != EntryState::Skipped));
    assert_eq!(every.jobs["mm.slow.profile"].state, EntryState::Succeeded);
    let summary = every.cascade.as_ref().unwrap();
    assert_eq!(summary.saved_device_s, 0.0);
    assert!(summary.stages.iter().all(|s| s.ran == 5 && s.skipped == 0));
}

#[test]
fn command_candidates_are_profiled_only_in_the_top_k_and_resume_reruns_none() {
    let tmp = tempfile::tempdir().unwrap();
    let problem = CommandProblem::new(tmp.path());
    let root = tmp.path().join("out");
    let out = batch(&problem.file, &root)
        .args(["--devices", "cpu", "--jobs", "2", "-q"])
        .output()
        .unwrap();
    // `bad` failed its check (grep exits 1): a failed job.
    assert_exit(&out, 1);
    let first = index(&root);
    problem.assert_decided(&first);

    let again = batch(&problem.file, &root)
        .args(["--devices", "cpu", "--jobs", "2", "-q", "--resume"])
        .output()
        .unwrap();
    assert_exit(&again, 1);
    assert_eq!(problem.runs(), [2, 1, 1, 0]);
    assert_eq!(stage_counts(&index(&root)), stage_counts(&first));
}
