//! Plan execution (retries, validators, stdout files, failure handling) and `profile(job)`
//! through the library; CLI usage errors through the binary.

use std::path::Path;

use polyprof::pipeline::job::main_step_index;
use polyprof::pipeline::{Job, Outcome, RunOptions, execute_plan, profile};
use polyprof::profilers::{CommandSpec, EndMarker, Graces, Plan, RetryPolicy, Step, Validator};
use polyprof::results::ProfileRun;

use crate::support;

fn sh(name: &str, script: &str) -> Step {
    Step::new(
        name,
        CommandSpec::new(vec!["sh".into(), "-c".into(), script.into()]),
        EndMarker::None,
        Graces::default(),
    )
}

fn plan(steps: Vec<Step>) -> Plan {
    Plan {
        profiler: "test".into(),
        target: vec!["true".into()],
        steps,
        outputs: Default::default(),
        capabilities: Vec::new(),
    }
}

#[tokio::test]
async fn retries_until_the_newest_file_is_long_enough_and_cleans_stale_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    // Attempt n writes metrics_<n>.csv with 1, 1, then 5 lines.
    let mut collect = sh(
        "collect",
        &format!(
            "n=$(( $(cat {d}/count 2>/dev/null || echo 0) + 1 )); echo $n > {d}/count; \
             if [ $n -ge 3 ]; then seq 5; else echo 1; fi > {d}/metrics_$n.csv; echo attempt $n"
        ),
    );
    collect.retry = Some(RetryPolicy {
        max_attempts: 4,
        validator: Validator::FileMinLines {
            dir: dir.path().to_path_buf(),
            prefix: "metrics_".into(),
            min_lines: 3,
        },
        clean_prefixes: vec!["metrics_".into()],
    });
    let mut report = sh("report", "printf 'a,b\\n1,2\\n\\377'");
    report.stdout_file = Some(dir.path().join("report.csv"));
    let runs = execute_plan(
        &plan(vec![collect, report]),
        &RunOptions::default(),
        dir.path(),
    )
    .await;

    assert!(runs[0].accepted, "{:?}", runs[0].rejection);
    assert_eq!(runs[0].attempts.len(), 3);
    assert_eq!(runs[0].attempts[2].stdout.head, ["attempt 3"]);
    // Each attempt logged separately; stale metrics removed before each attempt.
    for n in 1..=3 {
        assert!(dir.path().join(format!("collect.{n}.stdout.log")).exists());
    }
    assert!(!dir.path().join("metrics_1.csv").exists());
    assert!(dir.path().join("metrics_3.csv").exists());
    assert!(runs[1].accepted);
    assert_eq!(
        std::fs::read(dir.path().join("report.csv")).unwrap(),
        b"a,b\n1,2\n\xff"
    );
}

#[tokio::test]
async fn exhausted_retries_and_failures_skip_later_steps_unless_they_ask_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut flaky = sh("flaky", "exit 4");
    flaky.retry = Some(RetryPolicy {
        max_attempts: 2,
        validator: Validator::ExitZero,
        clean_prefixes: Vec::new(),
    });
    let skipped = sh("skipped", "echo never");
    let mut salvage = sh("salvage", "echo salvaged");
    salvage.run_after_failure = true;
    let runs = execute_plan(
        &plan(vec![flaky, skipped, salvage]),
        &RunOptions::default(),
        dir.path(),
    )
    .await;
    assert!(!runs[0].accepted);
    assert_eq!(runs[0].attempts.len(), 2);
    assert_eq!(
        runs[0].rejection.as_deref(),
        Some("attempt 2 of 2: exited with code 4")
    );
    assert!(runs[1].attempts.is_empty());
    assert_eq!(
        runs[1].rejection.as_deref(),
        Some("skipped: step `flaky` failed")
    );
    assert!(runs[2].accepted);
    assert_eq!(runs[2].attempts[0].stdout.head, ["salvaged"]);
}

#[test]
fn the_main_step_is_the_last_one_running_the_target() {
    let mut p = plan(vec![
        sh("prep", "true"),
        sh("collect", "true"),
        sh("report", "true"),
    ]);
    p.target = vec!["./app".into(), "1".into()];
    p.steps[1].command.argv = vec![
        "vtune".into(),
        "-collect".into(),
        "x".into(),
        "./app".into(),
        "1".into(),
    ];
    assert_eq!(main_step_index(&p), Some(1));
    p.steps[1].command.argv = vec!["other".into()];
    assert_eq!(main_step_index(&p), Some(0));
}

#[tokio::test]
async fn profile_records_the_outcome_and_writes_run_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("job");
    let job = Job::new(
        vec!["sh".into(), "-c".into(), "echo hello; exit 3".into()],
        &out,
    );
    let run = profile(&job).await;
    assert_eq!(run.outcome, Some(Outcome::Exited { code: 3 }));
    assert_eq!(run.label, "job");
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    assert_eq!(run.steps[0].attempts[0].stdout.head, ["hello"]);
    assert_eq!(ProfileRun::read(&out).unwrap(), run);
    assert!(Path::new(&out).join("run.1.stdout.log").exists());
}

#[tokio::test]
async fn profile_refuses_an_unknown_profiler_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let mut job = Job::new(vec!["true".into()], dir.path());
    job.profiler = "bogus".into();
    let run = profile(&job).await;
    assert_eq!(run.outcome, None);
    assert!(
        run.errors[0].message.contains("unknown profiler `bogus`"),
        "{:?}",
        run.errors
    );
    assert_eq!(run.errors[0].kind, polyprof::ErrorKind::Usage);
    assert_eq!(ProfileRun::read(dir.path()).unwrap(), run);
}

#[test]
fn cli_usage_errors_exit_2_and_an_unknown_profiler_is_one_of_them() {
    let dir = tempfile::tempdir().unwrap();
    support::polyprof().args(["run"]).assert().code(2);
    support::polyprof()
        .args(["run", "--end-marker", "pyest", "--", "true"])
        .assert()
        .code(2);
    support::polyprof()
        .args(["run", "--env", "NOEQUALS", "--", "true"])
        .assert()
        .code(2);
    support::polyprof()
        .args(["run", "--profiler", "bogus", "--output-dir"])
        .arg(dir.path())
        .args(["--", "true"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("unknown profiler `bogus`"));
}
