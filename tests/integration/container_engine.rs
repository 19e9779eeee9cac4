//! `polyprof run --container` against the real Docker engine of this machine, with the tiny
//! busybox image from scripts/build-test-image.sh. Every run also checks that no container
//! labelled by that polyprof process is left (see `crate::support::container::run`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::container::{assert_removed, containers, image, out_dir, run, tempdir};
use polyprof::pipeline::Outcome;

#[test]
fn normal_run_collects_output_files_and_names_its_container() {
    let dir = tempdir();
    let out = out_dir(&dir);
    let ran = run(
        &out,
        &[],
        &[
            "sh",
            "-c",
            "echo result > result.txt; echo to-stdout; echo to-stderr >&2; pwd",
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(ran.run.outcome, Some(Outcome::Exited { code: 0 }));
    assert_eq!(
        std::fs::read_to_string(out.join("result.txt")).unwrap(),
        "result\n"
    );
    let attempt = ran.attempt();
    let out_abs = std::fs::canonicalize(&out).unwrap();
    assert_eq!(
        attempt.stdout.head,
        ["to-stdout", out_abs.to_str().unwrap()]
    );
    assert_eq!(attempt.stderr.head, ["to-stderr"]);
    let container = ran.run.container.as_ref().unwrap();
    assert_eq!(container.image, image());
    assert_removed(&ran.container_id());
}

#[test]
fn host_secret_is_absent_and_explicit_variables_arrive() {
    let dir = tempdir();
    let out = out_dir(&dir);
    // Set only for the polyprof child, as a caller's shell would have them.
    let mut command = Command::new(env!("CARGO_BIN_EXE_polyprof"));
    command
        .env("POLYPROF_TEST_SECRET", "hunter2")
        .env("AWS_SECRET_ACCESS_KEY", "hunter3")
        .args(["run", "--json", "--container", image(), "--output-dir"])
        .arg(&out)
        .args(["--env", "GIVEN=yes", "--", "env"]);
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let env = std::fs::read_to_string(out.join("run.1.stdout.log")).unwrap();
    assert!(!env.contains("hunter"), "a host secret leaked in:\n{env}");
    assert!(!env.contains("POLYPROF_TEST_SECRET"), "{env}");
    assert!(env.lines().any(|l| l == "GIVEN=yes"), "{env}");
    assert!(
        env.lines().any(|l| l == "PATH=/bin"),
        "the image's PATH: {env}"
    );
}

#[test]
fn marker_then_hang_is_stopped_within_grace_and_kill_grace() {
    let dir = tempdir();
    let ran = run(
        &out_dir(&dir),
        &[
            "--end-marker",
            "literal:ALL DONE",
            "--marker-grace",
            "0.5",
            "--kill-grace",
            "0.5",
        ],
        // Ignores SIGTERM: only the SIGKILL after the kill grace ends it.
        &[
            "sh",
            "-c",
            "trap '' TERM; echo 'ALL DONE'; while :; do sleep 1; done",
        ],
    );
    assert_eq!(
        ran.code, 0,
        "a passing marker then a hang counts as success"
    );
    assert!(
        matches!(
            &ran.run.outcome,
            Some(Outcome::HungAfterMarker { passed: true, .. })
        ),
        "{:?}",
        ran.run.outcome
    );
    let attempt = ran.attempt();
    let marker_at = attempt.timings.marker_s.unwrap();
    let exited_at = attempt.timings.exit_s.unwrap();
    assert!(
        exited_at - marker_at >= 0.9,
        "stopped too early: {marker_at} → {exited_at}"
    );
    assert!(
        exited_at - marker_at < 0.5 + 0.5 + 2.5,
        "stopped too late: {marker_at} → {exited_at}"
    );
    assert!(
        ran.run.warnings.iter().any(|w| w.contains("SIGKILL")),
        "{:?}",
        ran.run.warnings
    );
    assert_removed(&ran.container_id());
}

#[test]
fn overall_timeout_keeps_output_and_files() {
    let dir = tempdir();
    let out = out_dir(&dir);
    let ran = run(
        &out,
        &["--timeout", "1", "--kill-grace", "0.5"],
        &[
            "sh",
            "-c",
            "echo partial > partial.txt; echo before-timeout; sleep 60",
        ],
    );
    assert_eq!(ran.code, 124);
    assert!(matches!(ran.run.outcome, Some(Outcome::TimedOut { .. })));
    assert_eq!(ran.attempt().stdout.head, ["before-timeout"]);
    assert_eq!(
        std::fs::read_to_string(out.join("partial.txt")).unwrap(),
        "partial\n"
    );
    assert!(ran.wall < Duration::from_secs(10), "{:?}", ran.wall);
    assert_removed(&ran.container_id());
}

#[test]
fn failing_command_reports_its_exit_code() {
    let dir = tempdir();
    let ran = run(&out_dir(&dir), &[], &["sh", "-c", "echo oops >&2; exit 3"]);
    assert_eq!(ran.code, 3);
    assert_eq!(ran.run.outcome, Some(Outcome::Exited { code: 3 }));
    assert_eq!(ran.attempt().stderr.head, ["oops"]);
    assert_removed(&ran.container_id());
}

#[test]
fn cancellation_stops_and_removes_the_container() {
    let dir = tempdir();
    let out = out_dir(&dir);
    let child = Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(["run", "--json", "--container", image(), "--output-dir"])
        .arg(&out)
        .args([
            "--kill-grace",
            "0.5",
            "--",
            "sh",
            "-c",
            "echo started; sleep 60",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until the container is running, then cancel as Ctrl-C/SIGTERM would.
    let started = Instant::now();
    let log = out.join("run.1.stdout.log");
    while std::fs::read_to_string(&log).map_or(true, |s| !s.contains("started")) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the container never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let cancelled_at = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(cancelled_at.elapsed() < Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(130));
    let run: polyprof::results::ProfileRun = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(run.outcome, Some(Outcome::Cancelled));
    assert!(containers(&format!("label=polyprof.pid={pid}")).is_empty());
}

#[test]
fn gpu_request_on_an_engine_without_gpu_runtime_says_so() {
    let dir = tempdir();
    let ran = run(&out_dir(&dir), &["--gpus", "all"], &["true"]);
    assert_eq!(ran.code, 127);
    let Some(Outcome::SpawnFailed { error, .. }) = &ran.run.outcome else {
        panic!("{:?}", ran.run.outcome);
    };
    assert!(
        error.contains("the engine has no GPU runtime (NVIDIA Container Toolkit)"),
        "{error}"
    );
    assert!(error.contains("`docker info` → Runtimes"), "{error}");
    // The container was created before the start failed; it is gone too.
    assert_removed(&ran.container_id());
}

#[test]
fn missing_image_says_how_to_build_or_load_it() {
    let dir = tempdir();
    let output = Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args([
            "run",
            "--json",
            "--container",
            "polyprof-no-such-image:0",
            "--output-dir",
        ])
        .arg(out_dir(&dir))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(127));
    let run: polyprof::results::ProfileRun = serde_json::from_slice(&output.stdout).unwrap();
    let Some(Outcome::SpawnFailed { error, .. }) = &run.outcome else {
        panic!("{:?}", run.outcome);
    };
    assert!(error.contains("not on the engine"), "{error}");
    assert!(error.contains("docker load"), "{error}");
}

#[test]
fn runs_as_the_given_user_so_output_files_are_theirs() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempdir();
    let out = out_dir(&dir);
    std::fs::create_dir_all(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let ran = run(
        &out,
        &["--user", "4321:4321"],
        &["sh", "-c", "id -u > uid.txt"],
    );
    assert_eq!(ran.code, 0, "{:?}", ran.run.outcome);
    let written = out.join("uid.txt");
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "4321\n");
    let meta = std::fs::metadata(&written).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (4321, 4321));
}

#[test]
fn network_is_off_and_inputs_are_read_only() {
    let dir = tempdir();
    let input = dir.path().join("input");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(input.join("data.txt"), "in\n").unwrap();
    let mount = format!("{}:/in:ro", input.display());
    let ran = run(
        &out_dir(&dir),
        &["--mount", &mount],
        &[
            "sh",
            "-c",
            "cat /in/data.txt; ls /sys/class/net; touch /in/x && echo writable || echo read-only",
        ],
    );
    assert_eq!(ran.code, 0, "{:?}", ran.run.outcome);
    let lines = &ran.attempt().stdout.head;
    assert_eq!(lines.first().map(String::as_str), Some("in"));
    assert!(lines.iter().any(|l| l == "lo"), "{lines:?}");
    assert!(
        !lines.iter().any(|l| l.starts_with("eth")),
        "no network by default: {lines:?}"
    );
    assert_eq!(lines.last().map(String::as_str), Some("read-only"));
}

#[test]
fn prune_removes_containers_of_a_dead_polyprof_only() {
    image();
    let hostname = polyprof::pipeline::container::engine::hostname();
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let create = |pid: u32, job: &str| {
        let out = Command::new("docker")
            .args(["create", "--label", &format!("polyprof.job={job}")])
            .args(["--label", &format!("polyprof.host={hostname}")])
            .args(["--label", &format!("polyprof.pid={pid}"), image(), "true"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let orphan = create(dead_pid, "prune-test-orphan");
    let alive = create(std::process::id(), "prune-test-alive");
    let output = Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(["containers", "prune", "--json"])
        .output()
        .unwrap();
    let alive_kept = !containers(&format!("id={alive}")).is_empty();
    let _ = Command::new("docker").args(["rm", "-f", &alive]).output();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(report["removed"].is_array(), "{report}");
    assert!(alive_kept, "a live owner's container was removed: {report}");
    // Removed by this prune, or by a concurrent test's `run --container`, which reaps on start.
    assert_removed(&orphan);
}

#[test]
fn copy_output_brings_the_files_back_without_a_bind_mount() {
    let dir = tempdir();
    let out = out_dir(&dir);
    let ran = run(
        &out,
        &["--copy-output"],
        &[
            "sh",
            "-c",
            "echo copied > result.txt; grep -c \" $PWD \" /proc/mounts || true",
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(
        std::fs::read_to_string(out.join("result.txt")).unwrap(),
        "copied\n"
    );
    // Nothing is mounted at the output directory inside.
    assert_eq!(ran.attempt().stdout.head, ["0"]);
    assert_removed(&ran.container_id());
}
