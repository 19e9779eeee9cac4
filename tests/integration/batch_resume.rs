//! A batch SIGKILLed half way resumes: jobs that ran to their end are kept, the ones cut off
//! and the ones never started run (once more), counted by the runs the jobs record.

use crate::support;

use std::time::{Duration, Instant};

use polyprof::model::batch::{BatchEntry, EntryState};
use predicates::str::contains;
use serde_json::json;
use support::batch::{
    batch, counting, index, interrupt, runs_of, sh_job, spawn_cpu_batch, write_jobs,
};
use support::polyprof;

#[test]
fn a_killed_batch_resumes_with_only_the_missing_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ids: Vec<String> = (0..10).map(|i| format!("r{i}")).collect();
    let jobs: Vec<_> = ids
        .iter()
        .map(|id| sh_job(id, &counting(d, id, "sleep 0.3")))
        .collect();
    let file = write_jobs(d, &jobs);
    let root = d.join("out");
    let mut child = spawn_cpu_batch(&file, &root);
    // Wait (generously: a loaded machine is slow) until some jobs are done, then kill it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let finished = |id: &String| {
        BatchEntry::read(&root.join("runs").join(id)).is_ok_and(|e| e.state.is_final())
    };
    while ids.iter().filter(|id| finished(id)).count() < 3 {
        assert!(Instant::now() < deadline, "the batch made no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();
    let done_before: Vec<&String> = ids.iter().filter(|id| finished(id)).collect();
    assert!(done_before.len() < ids.len(), "killed half way");
    let before = index(&root);
    assert!(
        before.jobs.values().any(|e| e.state == EntryState::Pending),
        "jobs not started yet are pending in batch.json"
    );
    batch(&file, &root)
        .args(["--jobs", "2", "--devices", "cpu", "--resume"])
        .assert()
        .success()
        .stderr(contains(format!("({} kept", done_before.len())));
    let after = index(&root);
    for id in &ids {
        assert_eq!(after.jobs[id].state, EntryState::Succeeded, "{id}");
        let runs = runs_of(d, id);
        if done_before.contains(&id) {
            assert_eq!(runs, 1, "{id} ran to its end before the kill: not rerun");
        } else {
            // Never started (0 runs before) or cut off by the kill (1 run before).
            assert!((1..=2).contains(&runs), "{id}: {runs} runs");
        }
    }
    let reruns: usize = ids.iter().map(|id| runs_of(d, id)).sum::<usize>() - ids.len();
    assert!(
        reruns <= 2,
        "at most the two running jobs ran twice: {reruns}"
    );
}

#[test]
fn resume_reruns_crashed_jobs_and_keeps_failed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = write_jobs(
        d,
        &[
            sh_job("failed", &counting(d, "failed", "exit 2")),
            // An ncu job whose ncu cannot exist: polyprof could not do the pass (crashed).
            json!({"id": "crashed", "target": ["true"], "profiler": "ncu",
                   "ncu": {"binary": "polyprof-test-no-such-ncu"}}),
            sh_job("ok", &counting(d, "ok", "true")),
        ],
    );
    let root = d.join("out");
    let run = |resume: bool| {
        let mut cmd = polyprof();
        cmd.arg("batch")
            .arg(&file)
            .args(["--devices", "0", "-q", "--output-dir"])
            .arg(&root);
        if resume {
            cmd.arg("--resume");
        }
        cmd.assert().code(1);
    };
    run(false);
    assert_eq!(index(&root).jobs["crashed"].state, EntryState::Crashed);
    let first = index(&root).jobs["crashed"].finished_unix_s.unwrap();
    run(true);
    let after = index(&root);
    assert_eq!(runs_of(d, "failed"), 1, "a job's own failure is its result");
    assert_eq!(runs_of(d, "ok"), 1);
    assert!(
        after.jobs["crashed"].finished_unix_s.unwrap() > first,
        "rerun"
    );
}

#[test]
fn a_task_index_runs_one_job_on_the_device_its_environment_pins() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_jobs(
        dir.path(),
        &[
            sh_job("first", "true"),
            sh_job("second", "echo \"cuda=$CUDA_VISIBLE_DEVICES\"; exit 5"),
        ],
    );
    let root = dir.path().join("out");
    polyprof()
        .env("CUDA_VISIBLE_DEVICES", "3")
        .arg("batch")
        .arg(&file)
        .args(["--task-index", "1", "-q", "--output-dir"])
        .arg(&root)
        .assert()
        .success();
    let e = support::batch::entry(&root, "second");
    assert_eq!(e.state, EntryState::Failed);
    assert_eq!(e.exit_code, Some(5));
    assert_eq!(e.device.as_deref(), Some("nvidia:3"));
    assert!(!root.join("runs/first").exists());
    assert!(
        !root.join("batch.json").exists(),
        "only the driver writes the index"
    );
    let log = std::fs::read_to_string(root.join("runs/second/run.1.stdout.log")).unwrap();
    assert_eq!(log, "cuda=3\n");
    batch(&file, &root)
        .args(["--task-index", "2"])
        .assert()
        .code(2)
        .stderr(contains("past the end"));
}

#[test]
fn ctrl_c_leaves_an_index_with_the_running_jobs_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ids: Vec<String> = (0..6).map(|i| format!("c{i}")).collect();
    let jobs: Vec<_> = ids
        .iter()
        .map(|id| sh_job(id, &counting(d, id, "sleep 30")))
        .collect();
    let file = write_jobs(d, &jobs);
    let root = d.join("out");
    let mut child = spawn_cpu_batch(&file, &root);
    // Both slots busy: two jobs have started their command.
    let deadline = Instant::now() + Duration::from_secs(60);
    while ids.iter().map(|id| runs_of(d, id)).sum::<usize>() < 2 {
        assert!(Instant::now() < deadline, "the batch started nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(interrupt(&mut child), Some(130));
    let index = index(&root);
    let counts = index.counts();
    assert_eq!(counts.get(&EntryState::Cancelled), Some(&2), "{counts:?}");
    assert_eq!(counts.get(&EntryState::Pending), Some(&4), "{counts:?}");
    assert!(!counts.contains_key(&EntryState::Running));
    for e in index
        .jobs
        .values()
        .filter(|e| e.state == EntryState::Cancelled)
    {
        assert_eq!(
            support::batch::entry(&root, &e.id).state,
            EntryState::Cancelled
        );
    }
}
