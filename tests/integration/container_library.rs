//! The container target through the library: frames that are not lines, cancellation by
//! token, inactivity, and `profile_on` with a container target. Real engine, tiny image.

use std::time::Duration;

use crate::support::container::{assert_removed, containers, image, tempdir};
use polyprof::pipeline::container::{
    ContainerJob, Engine, execute_plan_in_container, run_in_container,
};
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

/// CapEff of the container's shell, as the kernel reports it.
fn effective_caps(steps: &[polyprof::model::run::StepRun]) -> u64 {
    let line = steps[0].attempts[0].stdout.head[0].clone();
    let hex = line.trim_start_matches("CapEff:").trim();
    u64::from_str_radix(hex, 16).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

#[tokio::test]
async fn a_plans_capabilities_are_granted_and_no_others() {
    use polyprof::model::plan::{Graces, Plan, Step};
    const CAP_SYS_PTRACE: u64 = 1 << 19;
    let dir = tempdir();
    let step = Step::new(
        "caps",
        sh("grep CapEff /proc/self/status"),
        EndMarker::None,
        Graces::default(),
    );
    let mut plan = Plan {
        profiler: "test".into(),
        target: vec![],
        steps: vec![step],
        outputs: Default::default(),
        capabilities: vec!["SYS_PTRACE".into()],
    };
    let job = ContainerJob::new(image());
    let opts = RunOptions::default();
    let (steps, container) =
        execute_plan_in_container(&job, &plan, &opts, dir.path(), Some(0)).await;
    assert_eq!(steps[0].attempts[0].outcome, Outcome::Exited { code: 0 });
    assert_eq!(effective_caps(&steps), CAP_SYS_PTRACE);
    assert_removed(container.unwrap().id.as_deref().unwrap());

    plan.capabilities.clear();
    let (steps, _) = execute_plan_in_container(&job, &plan, &opts, dir.path(), Some(0)).await;
    assert_eq!(effective_caps(&steps), 0);
}

#[tokio::test]
async fn without_a_bind_mount_the_declared_outputs_are_copied_out() {
    use polyprof::model::plan::FilePattern;
    use polyprof::pipeline::container::OutputTransfer;
    let engine = Engine::connect().await.unwrap();
    let dir = tempdir();
    let mut job = ContainerJob::new(image());
    job.output = OutputTransfer::Copy;
    job.copy_patterns = vec![FilePattern::Prefix("report".into())];
    let script = "echo one > report.1; echo two > report.2; echo no > scratch; mkdir sub; echo deep > sub/report.3; ls";
    let opts = RunOptions::default();
    let ran = run_in_container(&engine, &job, &sh(script), &opts, dir.path()).await;
    assert_eq!(ran.result.outcome, Outcome::Exited { code: 0 });
    assert!(ran.result.warnings.is_empty(), "{:?}", ran.result.warnings);
    // The container wrote in its own filesystem, not through a bind mount.
    assert_eq!(
        ran.result.stdout.head,
        ["report.1", "report.2", "scratch", "sub"]
    );
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).ok();
    assert_eq!(read("report.1").as_deref(), Some("one\n"));
    assert_eq!(read("report.2").as_deref(), Some("two\n"));
    assert_eq!(read("scratch"), None);
    assert!(!dir.path().join("sub").exists());
    assert_removed(ran.container.id.as_deref().unwrap());
}
