//! The supervisor never blocks on its own output, signals stop it in every state, and the end
//! marker is found where pytest really prints it. Real processes, generous time bounds (the
//! machine is shared).

use crate::support::{self, runner as runner_support};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use polyprof::model::outcome::Outcome;
use polyprof::results::ProfileRun;
use runner_support::{Fixture, assert_no_survivors, program, run};

fn wait_for_pid(fx: &Fixture) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&fx.pidfile)
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "the fixture never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait for `child` at most `limit`; kill it and fail if it is still running.
fn wait_within(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("polyprof still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_stderr_nobody_reads_does_not_stop_the_timeout() {
    let fx = Fixture::new();
    // The read end stays open and is never read: a paused pager, a harness reading late.
    let (_unread, writer) = std::io::pipe().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(["run", "--timeout", "2", "--kill-grace", "1", "--output-dir"])
        .arg(fx.out())
        .args([
            "--",
            "sh",
            "-c",
            // About 200 MB a second of echo: fills any pipe at once.
            r#"echo $$ >> "$PIDFILE"; exec yes 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'"#,
        ])
        .env("PIDFILE", &fx.pidfile)
        .stdout(Stdio::null())
        .stderr(Stdio::from(writer))
        .spawn()
        .unwrap();
    let status = wait_within(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(124));
    let run = ProfileRun::read(&fx.out()).unwrap();
    assert!(matches!(run.outcome, Some(Outcome::TimedOut { .. })));
    assert_no_survivors(&fx);
}

#[test]
fn a_second_sigterm_during_the_kill_grace_kills_at_once() {
    let fx = Fixture::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(["run", "-q", "--kill-grace", "60", "--output-dir"])
        .arg(fx.out())
        .args(["--", "sh", &program("ignores_sigterm.sh")])
        .env("PIDFILE", &fx.pidfile)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_pid(&fx);
    let pid = Pid::from_raw(child.id() as i32);
    kill(pid, Signal::SIGTERM).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let second = Instant::now();
    kill(pid, Signal::SIGTERM).unwrap();
    let status = wait_within(&mut child, Duration::from_secs(20));
    assert!(second.elapsed() < Duration::from_secs(10));
    assert_eq!(status.code(), Some(130));
    let run = ProfileRun::read(&fx.out()).unwrap();
    assert_eq!(run.outcome, Some(Outcome::Cancelled));
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("second stop request")),
        "{:?}",
        run.warnings
    );
    assert_no_survivors(&fx);
}

#[test]
fn sighup_stops_the_run_like_ctrl_c() {
    let fx = Fixture::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(["run", "-q", "--kill-grace", "1", "--output-dir"])
        .arg(fx.out())
        .args(["--", "sh", &program("silent.sh")])
        .env("PIDFILE", &fx.pidfile)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_pid(&fx);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGHUP).unwrap();
    let status = wait_within(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130));
    let run = ProfileRun::read(&fx.out()).unwrap();
    assert_eq!(run.outcome, Some(Outcome::Cancelled));
    assert_no_survivors(&fx);
}

#[test]
fn a_summary_after_a_carriage_return_is_recognized() {
    let fx = Fixture::new();
    let script = r#"echo $$ >> "$PIDFILE"; printf '[ 50%%]\r[100%%]\r=== 2 passed in 0.01s ===\n'; exec sleep 1000"#;
    let ran = run(
        &fx,
        &[
            "--end-marker",
            "pytest",
            "--marker-grace",
            "0.5",
            "--timeout",
            "60",
        ],
        &["sh", "-c", script],
    );
    assert_eq!(
        ran.attempt().outcome,
        Outcome::HungAfterMarker {
            marker_line: "=== 2 passed in 0.01s ===".into(),
            passed: true
        }
    );
    assert_eq!(ran.code, 0);
    assert!(ran.wall < Duration::from_secs(30), "{:?}", ran.wall);
    assert_no_survivors(&fx);
}

#[test]
fn a_summary_without_a_newline_before_a_hang_is_recognized() {
    let fx = Fixture::new();
    let script =
        r#"echo $$ >> "$PIDFILE"; printf '=== 1 failed, 1 passed in 0.02s ==='; exec sleep 1000"#;
    let ran = run(
        &fx,
        &[
            "--end-marker",
            "pytest",
            "--marker-grace",
            "0.5",
            "--timeout",
            "60",
        ],
        &["sh", "-c", script],
    );
    assert_eq!(
        ran.attempt().outcome,
        Outcome::HungAfterMarker {
            marker_line: "=== 1 failed, 1 passed in 0.02s ===".into(),
            passed: false
        }
    );
    assert_eq!(ran.code, 1);
    assert!(ran.wall < Duration::from_secs(30), "{:?}", ran.wall);
    assert_no_survivors(&fx);
}

#[test]
fn environment_values_that_are_not_utf8_reach_the_command_unchanged() {
    use std::os::unix::ffi::OsStrExt;
    let odd = std::ffi::OsStr::from_bytes(b"a\xffb");
    for policy in [
        &["--env-policy", "inherit"][..],
        &["--env-policy", "clean", "--env-allow", "POLYPROF_ODD"],
    ] {
        let fx = Fixture::new();
        let output = support::polyprof()
            .args(["run", "--json", "-q", "--output-dir"])
            .arg(fx.out())
            .args(policy)
            .args([
                "--",
                "sh",
                "-c",
                r#"printf %s "$POLYPROF_ODD" | od -An -tx1"#,
            ])
            .env("POLYPROF_ODD", odd)
            .output()
            .unwrap();
        let run: ProfileRun = serde_json::from_slice(&output.stdout).unwrap();
        let head = &run.steps[0].attempts[0].stdout.head;
        assert_eq!(
            head.first().map(|l| l.trim()),
            Some("61 ff 62"),
            "{policy:?}: {head:?}"
        );
    }
}

/// A 64 KiB tmpfs stands in for a full disk (needs CAP_SYS_ADMIN; said and skipped without).
#[test]
fn a_full_disk_leaves_no_temporary_file_and_marks_the_log_incomplete() {
    let mount = tempfile::tempdir().unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(mount.path())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a small tmpfs here (not root?)");
        return;
    }
    let out = mount.path().join("run");
    let output = support::polyprof()
        .args(["run", "--json", "-q", "--output-dir"])
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            "head -c 300000 /dev/zero | tr '\\0' a; echo; echo done",
        ])
        .output()
        .unwrap();
    let listing: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let _ = Command::new("umount").arg(mount.path()).status();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    assert!(!listing.iter().any(|n| n.ends_with(".tmp")), "{listing:?}");
    let run: ProfileRun = serde_json::from_slice(&output.stdout).unwrap();
    let attempt = &run.steps[0].attempts[0];
    assert!(attempt.stdout.log_truncated);
    assert_eq!(attempt.stdout.total_bytes, 300_006);
    assert!(
        run.warnings.iter().any(|w| w.contains("run.1.stdout.log")),
        "{:?}",
        run.warnings
    );
    assert!(
        run.errors
            .iter()
            .any(|e| e.kind == polyprof::ErrorKind::Io && e.message.contains("run.json")),
        "{:?}",
        run.errors
    );
}
