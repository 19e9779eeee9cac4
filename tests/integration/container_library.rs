//! The container target through the library: frames that are not lines, cancellation by
//! token, inactivity, and `profile_on` with a container target. Real engine, tiny image.

use std::time::Duration;

use crate::support::container::{assert_removed, containers, image, tempdir};
use polyprof::pipeline::container::{ContainerJob, Engine, run_in_container};
use polyprof::pipeline::{ExecutionTarget, Job, Outcome, RunOptions, profile_on};
use polyprof::profilers::{CommandSpec, EndMarker};

fn sh(script: &str) -> CommandSpec {
    CommandSpec::new(vec!["sh".into(), "-c".into(), script.into()])
}

#[tokio::test]
async fn frames_are_split_into_lines_and_a_marker_across_frames_is_found() {
    let engine = Engine::connect().await.unwrap();
    let dir = tempdir();
    let job = ContainerJob::new(image());
    let opts = RunOptions {
        end_marker: EndMarker::Literal("ALL DONE".into()),
        line_limit: 1 << 20,
        log_dir: Some(dir.path().to_path_buf()),
        ..RunOptions::default()
    };
    // A 3 MiB line with no newline until its end, then a marker written in two pieces.
    let script =
        "head -c 3145728 /dev/zero | tr '\\0' x; echo; printf 'ALL '; sleep 0.3; printf 'DONE\\n'";
    let ran = run_in_container(&engine, &job, &sh(script), &opts, dir.path()).await;
    let r = &ran.result;
    assert_eq!(r.outcome, Outcome::Exited { code: 0 }, "{:?}", r.warnings);
    assert_eq!(r.stdout.total_bytes, 3 * 1024 * 1024 + 1 + 9);
    assert_eq!(r.stdout.lines, 2);
    assert!(r.stdout.long_lines_split);
    assert_eq!(r.marker.as_ref().map(|m| m.line.as_str()), Some("ALL DONE"));
    let log = std::fs::metadata(dir.path().join("run.stdout.log")).unwrap();
    assert_eq!(log.len(), r.stdout.total_bytes);
    assert_removed(ran.container.id.as_deref().unwrap());
}

#[tokio::test]
async fn cancel_token_and_inactivity_stop_the_container() {
    let engine = Engine::connect().await.unwrap();
    let dir = tempdir();
    let job = ContainerJob::new(image());
    let mut opts = RunOptions::default();
    opts.graces.kill_grace = Duration::from_millis(300);
    let cancel = opts.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        cancel.cancel();
    });
    let ran = run_in_container(&engine, &job, &sh("echo up; sleep 60"), &opts, dir.path()).await;
    assert_eq!(ran.result.outcome, Outcome::Cancelled);
    assert_eq!(ran.result.stdout.head, ["up"]);
    assert_removed(ran.container.id.as_deref().unwrap());

    let opts = RunOptions {
        inactivity_timeout: Some(Duration::from_millis(800)),
        ..RunOptions::default()
    };
    let ran = run_in_container(&engine, &job, &sh("echo a; sleep 60"), &opts, dir.path()).await;
    assert!(
        matches!(ran.result.outcome, Outcome::Inactive { .. }),
        "{:?}",
        ran.result.outcome
    );
    assert!(ran.result.timings.exit_s.unwrap() < 10.0);
    assert_removed(ran.container.id.as_deref().unwrap());
}

#[tokio::test]
async fn profile_on_a_container_target_writes_the_run_document() {
    let dir = tempdir();
    let out = dir.path().join("pass");
    let job = Job::new(
        vec![
            "sh".into(),
            "-c".into(),
            "echo kernel-ish > out.txt; echo ran".into(),
        ],
        &out,
    );
    let target = ExecutionTarget::Container(Box::new(ContainerJob::new(image())));
    let run = profile_on(&job, &target).await;
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    assert_eq!(run.outcome, Some(Outcome::Exited { code: 0 }));
    let container = run.container.clone().unwrap();
    assert_eq!(container.image, image());
    assert_eq!(
        std::fs::read_to_string(out.join("out.txt")).unwrap(),
        "kernel-ish\n"
    );
    let saved = polyprof::results::ProfileRun::read(&out).unwrap();
    assert_eq!(saved.container, run.container);
    assert!(containers(&format!("id={}", container.id.unwrap())).is_empty());
}
