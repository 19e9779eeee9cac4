//! Stopping through the real binary: inactivity, overall timeout, Ctrl-C, and polyprof itself
//! being killed (parent-death signal).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::runner::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use polyprof::pipeline::Outcome;
use polyprof::results::ProfileRun;

#[test]
fn silence_hits_the_inactivity_timeout_and_keeps_output() {
    let fx = Fixture::new();
    let ran = run(
        &fx,
        &["--inactivity-timeout", "0.5", "--kill-grace", "1"],
        &["sh", &program("silent.sh")],
    );
    let attempt = ran.attempt();
    assert_eq!(attempt.outcome, Outcome::Inactive { after_s: 0.5 });
    assert_eq!(ran.code, 125);
    assert_eq!(attempt.stdout.head, ["started"]);
    assert_eq!(log_bytes(&ran, false), b"started\n");
    assert!(
        (0.5..3.0).contains(&attempt.timings.exit_s.unwrap()),
        "{:?}",
        attempt.timings
    );
    assert_no_survivors(&fx);
}

#[test]
fn chatty_process_hits_the_overall_timeout_not_inactivity() {
    let fx = Fixture::new();
    let ran = run(
        &fx,
        &[
            "--timeout",
            "0.8",
            "--inactivity-timeout",
            "0.4",
            "--kill-grace",
            "1",
        ],
        &["sh", &program("chatty_forever.sh")],
    );
    let attempt = ran.attempt();
    assert_eq!(attempt.outcome, Outcome::TimedOut { after_s: 0.8 });
    assert_eq!(ran.code, 124);
    // Everything printed before the timeout is kept (the old pipeline returned nothing here).
    assert!(attempt.stdout.lines >= 3, "{:?}", attempt.stdout);
    let log = log_bytes(&ran, false);
    assert_eq!(log.len() as u64, attempt.stdout.total_bytes);
    assert!(log.starts_with(b"tick\ntick\n"));
    assert_no_survivors(&fx);
}

fn wait_for_pid(pidfile: &std::path::Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(pid) = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|t| t.lines().next()?.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "the fixture never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_cancels_and_stops_the_group() {
    let fx = Fixture::new();
    let child = Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(["run", "--json", "-q", "--kill-grace", "1", "--output-dir"])
        .arg(fx.out())
        .args(["--", "sh", &program("silent.sh")])
        .env("PIDFILE", &fx.pidfile)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_pid(&fx.pidfile);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    let run: ProfileRun = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(run.outcome, Some(Outcome::Cancelled));
    assert_eq!(run.steps[0].attempts[0].stdout.head, ["started"]);
    assert_no_survivors(&fx);
}

#[test]
fn killing_polyprof_kills_the_child() {
    let fx = Fixture::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(["run", "-q", "--output-dir"])
        .arg(fx.out())
        .args(["--", "sh", &program("silent.sh")])
        .env("PIDFILE", &fx.pidfile)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_pid(&fx.pidfile);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    // `silent.sh` execs `sleep`, so the recorded pid is the whole fixture.
    assert_no_survivors(&fx);
}
