//! No process left behind: descendants that leave the group, daemons with closed fds, and a
//! polyprof that is itself SIGKILLed. Through the real binary and real processes.

use crate::support::runner as runner_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use polyprof::model::outcome::{Escape, Outcome};
use runner_support::{Fixture, assert_no_survivors, program, run};

#[test]
fn a_descendant_that_calls_setsid_is_killed_and_named() {
    let fx = Fixture::new();
    let ran = run(&fx, &[], &["sh", &program("setsid_holds_pipe.sh")]);
    let attempt = ran.attempt();
    assert_eq!(attempt.outcome, Outcome::Exited { code: 0 });
    assert!(attempt.leaked);
    let pids = fx.recorded_pids(2);
    let killed = &attempt.killed;
    assert_eq!(killed.len(), 1, "{killed:?}");
    assert_eq!(killed[0].pid, pids[1]);
    assert_eq!(killed[0].escaped, Escape::NewSession);
    assert_eq!(killed[0].argv, ["sleep", "1000"]);
    let warning = ran
        .run
        .warnings
        .iter()
        .find(|w| w.contains("outlived the leader"))
        .expect("a leak warning");
    assert!(warning.contains(&format!("pid {}", pids[1])), "{warning}");
    assert!(warning.contains("setsid"), "{warning}");
    assert_no_survivors(&fx);
}

#[test]
fn a_daemon_with_closed_fds_and_a_double_fork_is_found_and_killed() {
    let fx = Fixture::new();
    let ran = run(&fx, &[], &["sh", &program("daemonizes.sh")]);
    let attempt = ran.attempt();
    assert_eq!(attempt.outcome, Outcome::Exited { code: 0 });
    assert!(attempt.leaked, "{:?}", ran.run.warnings);
    let pids = fx.recorded_pids(2);
    assert!(
        attempt
            .killed
            .iter()
            .any(|k| k.pid == pids[1] && k.escaped == Escape::NewSession),
        "{:?}",
        attempt.killed
    );
    assert_no_survivors(&fx);
}

#[test]
fn a_command_that_kills_its_supervisor_leaves_nothing_behind_and_says_so() {
    let fx = Fixture::new();
    // A descendant that left the session, then `kill -9 $PPID`: the supervisor is gone before
    // it could end anything, and the daemon is outside the process group.
    let script = r#"echo $$ >> "$PIDFILE"; setsid sh -c 'echo $$ >> "$PIDFILE"; exec sleep 1000' & while [ "$(wc -l < "$PIDFILE")" -lt 2 ]; do sleep 0.01; done; kill -9 $PPID; exec sleep 1001"#;
    let ran = run(&fx, &[], &["sh", "-c", script]);
    let attempt = ran.attempt();
    // The command was not killed by a signal: its supervisor was.
    assert_eq!(
        attempt.outcome,
        Outcome::SupervisorKilled { signal: 9 },
        "{:?}",
        ran.run.warnings
    );
    assert_eq!(ran.code, 137);
    let pids = fx.recorded_pids(2);
    let daemon = attempt.killed.iter().find(|k| k.pid == pids[1]);
    assert_eq!(
        daemon.map(|k| k.escaped),
        Some(Escape::NewSession),
        "{:?}",
        attempt.killed
    );
    assert!(
        attempt.killed.iter().any(|k| k.pid == pids[0]),
        "the command itself: {:?}",
        attempt.killed
    );
    assert!(
        ran.run
            .warnings
            .iter()
            .any(|w| w.contains("supervising process") && w.contains("signal 9")),
        "{:?}",
        ran.run.warnings
    );
    assert_no_survivors(&fx);
}

/// `polyprof run`'s supervisor is a fork of polyprof, not an exec of `polyprof-supervise`
/// (issue 37): its executable is polyprof's own, it holds none of polyprof's descriptors (the
/// logs, the run directory's lock, the pipes' other ends) but the standard streams and its
/// report pipe, and the command still gets the environment of its policy, not polyprof's.
#[test]
fn the_clis_supervisor_is_a_fork_holding_no_descriptor_of_polyprof() {
    let fx = Fixture::new();
    let script = "readlink /proc/$PPID/exe; ls /proc/$PPID/fd | sort -n | tr '\\n' ' '; echo; \
                  echo \"secret=${POLYPROF_TEST_SECRET_X:-unset} given=${GIVEN:-unset}\"";
    let out = fx.out();
    let output = crate::support::polyprof()
        .args([
            "run",
            "--env-policy",
            "clean",
            "--env",
            "GIVEN=yes",
            "--output-dir",
        ])
        .arg(&out)
        .args(["--", "sh", "-c", script])
        .env("POLYPROF_TEST_SECRET_X", "leaked")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    let polyprof = std::fs::canonicalize(env!("CARGO_BIN_EXE_polyprof")).unwrap();
    assert_eq!(std::path::Path::new(lines[0]), polyprof, "{stdout}");
    let fds: Vec<i32> = lines[1]
        .split_whitespace()
        .map(|fd| fd.parse().unwrap())
        .collect();
    assert_eq!(
        fds.len(),
        4,
        "0, 1, 2 and the report pipe, nothing else: {stdout}"
    );
    assert_eq!(&fds[..3], [0, 1, 2], "{stdout}");
    assert_eq!(lines[2], "secret=unset given=yes", "{stdout}");
}

#[test]
fn group_tracking_is_still_available_and_keeps_the_group_floor() {
    let fx = Fixture::new();
    let ran = run(
        &fx,
        &["--tracking", "group"],
        &["sh", &program("leaks_grandchild.sh")],
    );
    let attempt = ran.attempt();
    assert!(attempt.leaked);
    assert_eq!(attempt.killed.len(), 1, "{:?}", attempt.killed);
    assert_eq!(attempt.killed[0].escaped, Escape::InGroup);
    assert_no_survivors(&fx);
}

#[test]
fn sigkill_of_polyprof_takes_the_whole_tree_with_it() {
    let fx = Fixture::new();
    let script = r#"echo $$ >> "$PIDFILE"
sleep 1000 & echo $! >> "$PIDFILE"
setsid sleep 1001 & echo $! >> "$PIDFILE"
wait"#;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(["run", "-q", "--output-dir"])
        .arg(fx.out())
        .args(["--", "sh", "-c", script])
        .env("PIDFILE", &fx.pidfile)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pids = fx.recorded_pids(3);
    // Let the setsid'd sleep get past setsid (its pid is recorded before it execs).
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(pids.len(), 3);
    assert_no_survivors(&fx);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_run_dropped_midway_still_kills_what_left_the_group() {
    use polyprof::pipeline::runner::Tracking;
    use polyprof::pipeline::{RunOptions, run_command};
    use polyprof::profilers::CommandSpec;
    let fx = Fixture::new();
    let script = format!(
        r#"echo $$ >> '{0}'; setsid sh -c 'echo $$ >> "{0}"; exec sleep 1000' & wait"#,
        fx.pidfile.display()
    );
    let spec = CommandSpec::new(vec!["sh".into(), "-c".into(), script.into()]);
    let opts = RunOptions {
        tracking: Tracking::Supervisor {
            exe: env!("CARGO_BIN_EXE_polyprof-supervise").into(),
        },
        ..RunOptions::default()
    };
    let mut run = Box::pin(run_command(&spec, &opts));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        tokio::select! {
            _ = &mut run => panic!("the run ended by itself"),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        let text = std::fs::read_to_string(&fx.pidfile).unwrap_or_default();
        if text.lines().count() >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the fixture never started");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(run);
    assert_no_survivors(&fx);
}
