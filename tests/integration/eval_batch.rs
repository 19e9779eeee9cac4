//! Evals as batch jobs (`eval` tables in a job file) on CPU slots with the numpy problems of
//! tests/programs/eval/: each job's entry carries its verdict in brief, a judged candidate is a
//! succeeded job, a candidate that raised is a failed one, and `--resume` reruns nothing.

use std::path::Path;

use polyprof::model::batch::EntryState;

use crate::support::assert_exit;
use crate::support::batch::{batch, entry, index, write_jobs};
use crate::support::eval::{problem, python_with_numpy};

fn eval_job(id: &str, candidate: &Path, python: &Path) -> serde_json::Value {
    serde_json::json!({
        "id": id,
        "timeout_s": 60,
        "eval": {
            "reference": problem("reference.py"),
            "candidate": candidate,
            "device": "cpu",
            "trials": 3,
            "timing_blocks": 2,
            "repeat": 3,
            "python": python,
        }
    })
}

#[test]
fn eval_jobs_carry_their_verdicts_and_resume_reruns_none() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // The honest candidate writes what it saw beside itself: a copy of its own.
    let honest = tmp.path().join("honest.py");
    std::fs::copy(problem("honest.py"), &honest).unwrap();
    let file = write_jobs(
        tmp.path(),
        &[
            eval_job("honest", &honest, &python),
            eval_job("inplace", &problem("inplace.py"), &python),
            eval_job("raises", &problem("raises.py"), &python),
        ],
    );
    let root = tmp.path().join("out");
    let out = batch(&file, &root)
        .args(["--devices", "cpu", "--jobs", "2", "-q"])
        .output()
        .unwrap();
    // The raising candidate is a failed job.
    assert_exit(&out, 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let index = index(&root);

    let honest = &index.jobs["honest"];
    assert_eq!(honest.state, EntryState::Succeeded, "{honest:?}");
    let summary = honest.eval.as_ref().expect("an eval summary");
    assert_eq!(summary.status, "correct");
    assert_eq!(
        (summary.device.as_str(), summary.failure.as_deref()),
        ("cpu", None)
    );
    assert_eq!(summary.framework.as_deref(), Some("numpy"));
    let speedup = summary.speedup.expect("a speedup");
    assert!(speedup.ci_low <= speedup.value && speedup.value <= speedup.ci_high);
    assert!(summary.score_ms.is_some_and(|ms| ms > 0.0));
    assert!(root.join("runs/honest/verdict.json").is_file());
    assert!(root.join("runs/honest/evidence.json").is_file());

    // Judged and not passed: a result, so the job succeeded.
    let inplace = &index.jobs["inplace"];
    assert_eq!(inplace.state, EntryState::Succeeded, "{inplace:?}");
    let summary = inplace.eval.as_ref().unwrap();
    assert!(!summary.passed);
    assert!(
        summary.findings.iter().any(|f| f == "inputs_modified") || summary.findings.is_empty(),
        "{summary:?}"
    );

    let raises = &index.jobs["raises"];
    assert_eq!(raises.state, EntryState::Failed, "{raises:?}");
    let summary = raises.eval.as_ref().unwrap();
    assert_eq!(
        (summary.status.as_str(), summary.failure.as_deref()),
        ("failed", Some("raised"))
    );
    assert!(
        raises.errors[0].starts_with("the candidate failed: raised during correctness"),
        "{:?}",
        raises.errors
    );
    assert_eq!(&entry(&root, "raises"), raises);

    // The table shows each eval's status, speedup and findings.
    assert!(
        stdout.contains("passed") || stdout.contains("not passed"),
        "{stdout}"
    );
    assert!(stdout.contains("speedup"), "{stdout}");
    assert!(stdout.contains("not passed (failed)"), "{stdout}");
    assert!(stdout.contains("3 jobs: 2 succeeded, 1 failed"), "{stdout}");

    // Every job ran to its end: a resume keeps all three (fresh evals would draw new seeds).
    let evidence = |id: &str| std::fs::read(root.join("runs").join(id).join("evidence.json")).ok();
    let before: Vec<_> = ["honest", "inplace", "raises"].map(evidence).into();
    let again = batch(&file, &root)
        .args(["--devices", "cpu", "--jobs", "2", "-q", "--resume"])
        .output()
        .unwrap();
    assert_exit(&again, 1);
    let after: Vec<_> = ["honest", "inplace", "raises"].map(evidence).into();
    assert_eq!(before, after);
    assert!(before.iter().all(Option::is_some));
    assert!(String::from_utf8_lossy(&again.stdout).contains("3 jobs"));
}

#[test]
fn a_job_with_both_a_target_and_an_eval_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut job = eval_job("both", &problem("honest.py"), Path::new("python3"));
    job["target"] = serde_json::json!(["true"]);
    let file = write_jobs(tmp.path(), &[job]);
    let out = batch(&file, &tmp.path().join("out")).output().unwrap();
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("either `target`"), "{stderr}");
    assert!(!tmp.path().join("out/batch.json").exists());
}

#[test]
fn a_directory_of_candidates_is_judged_one_by_one_into_one_table() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let candidates = tmp.path().join("candidates");
    std::fs::create_dir(&candidates).unwrap();
    for name in ["honest.py", "inplace.py", "raises.py"] {
        std::fs::copy(problem(name), candidates.join(name)).unwrap();
    }
    std::fs::write(candidates.join("README.txt"), "not a candidate").unwrap();
    let out_dir = tmp.path().join("evals");
    let out = crate::support::eval::eval_cpu(
        &python,
        &problem("reference.py"),
        &candidates,
        &out_dir,
        &[],
    );
    // Some judged not passed (the raising one at least): 1.
    assert_exit(&out, 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for name in ["honest.py", "inplace.py", "raises.py"] {
        assert!(stdout.contains(name), "{stdout}");
    }
    assert!(stdout.contains("failed (raised)"), "{stdout}");
    assert!(stdout.contains("candidate(s) passed"), "{stdout}");
    let rows: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("evals.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["candidate"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(names, ["honest.py", "inplace.py", "raises.py"]);
    assert_eq!(rows[0]["status"], "correct");
    assert!(rows[0]["speedup"]["ci_low"].is_number(), "{:?}", rows[0]);
    assert_eq!(rows[1]["passed"], false);
    assert_eq!(
        (&rows[2]["status"], &rows[2]["passed"]),
        (&"failed".into(), &false.into())
    );
    for stem in ["honest", "inplace", "raises"] {
        assert!(out_dir.join(stem).join("verdict.json").is_file(), "{stem}");
    }
}

#[test]
fn a_directory_none_of_whose_candidates_can_run_exits_2() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let candidates = tmp.path().join("c");
    std::fs::create_dir(&candidates).unwrap();
    std::fs::copy(problem("honest.py"), candidates.join("a.py")).unwrap();
    let out_dir = tmp.path().join("evals");
    let out = crate::support::eval::eval_cpu(
        &python,
        &problem("broken_reference.py"),
        &candidates,
        &out_dir,
        &[],
    );
    assert_exit(&out, 2);
    assert!(out_dir.join("evals.json").is_file());
}

#[test]
fn resume_reruns_an_eval_whose_candidate_was_replaced_under_the_same_path() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let candidate = tmp.path().join("cand.py");
    std::fs::copy(problem("honest.py"), &candidate).unwrap();
    let file = write_jobs(tmp.path(), &[eval_job("e", &candidate, &python)]);
    let root = tmp.path().join("out");
    let out = batch(&file, &root)
        .args(["--devices", "cpu", "-q"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert!(index(&root).jobs["e"].eval.as_ref().unwrap().passed);
    // Same path, other bytes: the earlier verdict is not this candidate's.
    std::fs::copy(problem("raises.py"), &candidate).unwrap();
    let again = batch(&file, &root)
        .args(["--devices", "cpu", "-q", "--resume"])
        .output()
        .unwrap();
    assert_exit(&again, 1);
    let summary = index(&root).jobs["e"].eval.clone().unwrap();
    assert_eq!(
        (summary.status.as_str(), summary.failure.as_deref()),
        ("failed", Some("raised"))
    );
}

#[test]
fn a_fifo_as_reference_or_candidate_is_refused_at_once_in_eval_and_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo.py");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    for (reference, candidate) in [
        (fifo.clone(), problem("honest.py")),
        (problem("reference.py"), fifo.clone()),
    ] {
        let started = std::time::Instant::now();
        let out = crate::support::polyprof()
            .args(["eval", "--device", "cpu", "--python", "python3"])
            .arg("--reference")
            .arg(&reference)
            .arg("--candidate")
            .arg(&candidate)
            .arg("--output-dir")
            .arg(tmp.path().join("e"))
            .timeout(std::time::Duration::from_secs(10))
            .output()
            .unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("FIFO (named pipe), not a regular file"),
            "{stderr}"
        );

        let job = serde_json::json!({
            "id": "fifo",
            "eval": {"reference": reference, "candidate": candidate, "device": "cpu"}
        });
        let dir = tempfile::tempdir().unwrap();
        let file = write_jobs(dir.path(), &[job]);
        let root = dir.path().join("out");
        let started = std::time::Instant::now();
        let out = batch(&file, &root)
            .args(["--devices", "cpu", "-q"])
            .timeout(std::time::Duration::from_secs(10))
            .output()
            .unwrap();
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_exit(&out, 1);
        let entry = &index(&root).jobs["fifo"];
        assert_eq!(entry.state, EntryState::Failed, "{entry:?}");
        assert!(
            entry.errors.iter().any(|e| e.contains("FIFO")),
            "{:?}",
            entry.errors
        );
    }
}
