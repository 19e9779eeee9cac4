//! The supervisor never blocks on its own output, signals stop it in every state, and the end
//! marker is found where pytest really prints it. Real processes, generous time bounds (the
//! machine is shared).

mod runner_support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use polyprof::pipeline::outcome::Outcome;
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
