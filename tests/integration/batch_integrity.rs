//! Shared state of a batch root: one driver at a time (its flock, released when it dies),
//! a `--resume` that reruns a job whose definition changed, and job files and options that
//! would run the wrong thing refused before anything runs.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use polyprof::model::batch::EntryState;
use predicates::str::contains;
use serde_json::json;

use crate::support::batch::{batch, counted_jobs, counting, index, runs_of, sh_job, write_jobs};

fn driver(file: &Path, root: &Path, resume: bool) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_polyprof"));
    command
        .arg("batch")
        .arg(file)
        .args(["--jobs", "2", "--devices", "cpu", "-q", "--output-dir"])
        .arg(root)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if resume {
        command.arg("--resume");
    }
    command.spawn().unwrap()
}

/// Until some job of `ids` has recorded a run in `dir`.
fn wait_for_a_start(dir: &Path, ids: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while ids.iter().all(|id| runs_of(dir, id) == 0) {
        assert!(
            Instant::now() < deadline,
            "the first driver started nothing"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_second_driver_on_a_live_root_is_refused_and_each_job_runs_once() {
    for (first_resume, second_resume) in
        [(false, true), (false, false), (true, false), (true, true)]
    {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (ids, file) = counted_jobs(d, "j", 6, "sleep 0.4");
        let root = d.join("out");
        let first = driver(&file, &root, first_resume);
        wait_for_a_start(d, &ids);
        let second = driver(&file, &root, second_resume)
            .wait_with_output()
            .unwrap();
        let text = String::from_utf8_lossy(&second.stderr);
        let case = format!("first --resume {first_resume}, second --resume {second_resume}");
        assert!(!second.status.success(), "{case}: {text}");
        assert!(
            text.contains("is in use by polyprof pid") && text.contains(&first.id().to_string()),
            "{case}: the error names the live driver: {text}"
        );
        let first = first.wait_with_output().unwrap();
        assert!(first.status.success(), "{case}: {first:?}");
        for id in &ids {
            assert_eq!(runs_of(d, id), 1, "{case}: {id} ran once");
            assert_eq!(index(&root).jobs[id].state, EntryState::Succeeded, "{case}");
        }
    }
}

#[test]
fn drivers_started_together_run_each_job_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ids, file) = counted_jobs(d, "t", 8, "sleep 0.2");
    let root = d.join("out");
    let drivers: Vec<Child> = (0..2).map(|_| driver(&file, &root, true)).collect();
    let outs: Vec<_> = drivers
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    assert_eq!(
        outs.iter().filter(|o| o.status.success()).count(),
        1,
        "{outs:?}"
    );
    for id in &ids {
        assert_eq!(runs_of(d, id), 1, "{id} ran once");
    }
}

#[test]
fn a_killed_drivers_lock_does_not_block_its_resume() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ids, file) = counted_jobs(d, "k", 4, "sleep 0.2");
    let root = d.join("out");
    let mut first = driver(&file, &root, false);
    wait_for_a_start(d, &ids);
    first.kill().unwrap();
    first.wait().unwrap();
    // The lock file of the dead driver is still there; its lock is not.
    assert!(root.join(".polyprof-batch.lock").exists());
    batch(&file, &root)
        .args(["--jobs", "2", "--devices", "cpu", "-q", "--resume"])
        .assert()
        .success();
}

#[test]
fn a_resume_reruns_a_job_whose_definition_changed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let same = sh_job("same", &counting(d, "same", "true"));
    let file = write_jobs(
        d,
        &[
            same.clone(),
            sh_job("edited", &counting(d, "edited", "true")),
        ],
    );
    let root = d.join("out");
    batch(&file, &root)
        .args(["--devices", "cpu", "-q"])
        .assert()
        .success();
    // The kernel was regenerated under the same id: a new command, new variables.
    let mut edited = sh_job("edited", &counting(d, "edited", "echo v2"));
    edited["env"] = json!({"KERNEL_VERSION": "2"});
    let file = write_jobs(d, &[same, edited]);
    batch(&file, &root)
        .args(["--devices", "cpu", "--resume"])
        .assert()
        .success()
        .stderr(contains(
            "1 kept from the earlier run, 1 rerun as their definition changed",
        ));
    assert_eq!(runs_of(d, "same"), 1);
    assert_eq!(runs_of(d, "edited"), 2);
    // Labels are not part of the definition: a relabelled job is kept.
    let mut relabelled = sh_job("same", &counting(d, "same", "true"));
    relabelled["labels"] = json!({"team": "b"});
    let mut edited = sh_job("edited", &counting(d, "edited", "echo v2"));
    edited["env"] = json!({"KERNEL_VERSION": "2"});
    let file = write_jobs(d, &[relabelled, edited]);
    batch(&file, &root)
        .args(["--devices", "cpu", "--resume"])
        .assert()
        .success()
        .stderr(contains("(2 kept from the earlier run)"));
    assert_eq!(runs_of(d, "same"), 1);
}

/// `polyprof batch` on a job file of `lines` (raw JSON Lines) fails naming `expected`.
fn refused(lines: &str, expected: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jobs.jsonl");
    std::fs::write(&file, lines).unwrap();
    batch(&file, &dir.path().join("out"))
        .args(["--devices", "cpu"])
        .assert()
        .failure()
        .stderr(contains(expected));
    assert!(!dir.path().join("out/runs").exists(), "nothing ran");
}

#[test]
fn job_files_that_would_run_something_else_are_refused() {
    refused(
        r#"{"id": "a", "target": ["true"], "env": {"X": "1", "X": "2"}}"#,
        "duplicate key `X`",
    );
    refused(
        r#"{"id": "a", "target": ["true"], "labels": {"k": "1", "k": "2"}}"#,
        "duplicate key `k`",
    );
    refused(
        r#"{"id": "a", "target": ["echo", "a\u0000b"]}"#,
        "contains a NUL character",
    );
    refused(
        r#"{"id": "a", "target": ["true"], "env": {"X": "a\u0000b"}}"#,
        "contains a NUL character",
    );
    refused(
        r#"{"id": "a", "target": ["true"], "env": {"A=B": "1"}}"#,
        "is not a variable name",
    );
    refused(
        r#"{"id": "a", "target": ["true"], "env": {"": "1"}}"#,
        "is not a variable name",
    );
}

#[test]
fn options_that_would_run_nothing_or_the_wrong_pool_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = write_jobs(d, &[sh_job("a", &counting(d, "a", "true"))]);
    for (args, expected) in [
        (&["--devices", "cpu,0"][..], "mixes `cpu` with GPU indices"),
        (
            &["--devices", "cpu", "--jobs", "0"][..],
            "would run nothing",
        ),
        (
            &["--devices", "cpu", "--timeout", "0"][..],
            "would stop every job",
        ),
    ] {
        batch(&file, &d.join("out"))
            .args(args)
            .assert()
            .failure()
            .stderr(contains(expected));
    }
    assert_eq!(runs_of(d, "a"), 0);
    let a_file = d.join("a-file");
    std::fs::write(&a_file, "x").unwrap();
    batch(&file, &a_file)
        .args(["--devices", "cpu"])
        .assert()
        .failure()
        .stderr(contains("is a file, not a directory"));
    let link = d.join("link");
    std::os::unix::fs::symlink(d.join("gone"), &link).unwrap();
    batch(&file, &link)
        .args(["--devices", "cpu"])
        .assert()
        .failure()
        .stderr(contains("which does not exist"));
    assert_eq!(runs_of(d, "a"), 0);
}
