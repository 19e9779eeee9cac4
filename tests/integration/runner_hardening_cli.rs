//! Exit codes a CI gate can trust, usage errors that create nothing, run directories that are
//! never silently overwritten, a closed stdout, and error causes printed once.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use polyprof::model::outcome::Outcome;
use polyprof::results::ProfileRun;
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;
use support::polyprof;

#[test]
fn a_file_that_is_not_executable_exits_126_and_a_missing_one_127() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("plain.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = dir.path().join("a");
    polyprof()
        .args(["run", "-q", "--output-dir"])
        .arg(&out)
        .arg("--")
        .arg(&script)
        .assert()
        .code(126);
    let run = ProfileRun::read(&out).unwrap();
    assert!(
        matches!(
            run.outcome,
            Some(Outcome::SpawnFailed {
                errno: Some(libc::EACCES),
                ..
            })
        ),
        "{:?}",
        run.outcome
    );
    polyprof()
        .args(["run", "-q", "--output-dir"])
        .arg(dir.path().join("b"))
        .args(["--", "/nonexistent/program"])
        .assert()
        .code(127);
}

#[test]
fn exit_code_polyprof_tells_the_command_failing_from_polyprof_failing() {
    let dir = tempfile::tempdir().unwrap();
    for (i, code) in [2, 3, 124].into_iter().enumerate() {
        let out = dir.path().join(format!("r{i}"));
        let script = format!("exit {code}");
        // By default the command's own code passes through ...
        polyprof()
            .args(["run", "-q", "--output-dir"])
            .arg(&out)
            .args(["--", "sh", "-c", &script])
            .assert()
            .code(code);
        // ... and with --exit-code polyprof it is "the command failed", never 2, 3 or 124.
        polyprof()
            .args([
                "run",
                "-q",
                "--force",
                "--exit-code",
                "polyprof",
                "--output-dir",
            ])
            .arg(&out)
            .args(["--", "sh", "-c", &script])
            .assert()
            .code(1);
        let run = ProfileRun::read(&out).unwrap();
        assert_eq!(run.outcome, Some(Outcome::Exited { code }));
    }
}

#[test]
fn a_bogus_profiler_is_a_usage_error_that_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    polyprof()
        .args(["run", "--profiler", "bogus", "--output-dir"])
        .arg(&out)
        .args(["--", "true"])
        .assert()
        .code(2)
        .stderr(contains("unknown profiler `bogus`"));
    assert!(!out.exists());
    // Without --output-dir, no polyprof-runs/ appears either.
    polyprof()
        .current_dir(dir.path())
        .args(["run", "--profiler", "bogus", "--", "true"])
        .assert()
        .code(2);
    assert!(!dir.path().join("polyprof-runs").exists());
}

#[test]
fn durations_beyond_a_week_are_usage_errors_and_start_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    for flag in [
        "--timeout",
        "--marker-grace",
        "--inactivity-timeout",
        "--kill-grace",
    ] {
        polyprof()
            .args(["run", "-q", flag, "1e19", "--output-dir"])
            .arg(dir.path().join("out"))
            .args(["--", "touch"])
            .arg(&marker)
            .assert()
            .code(2)
            .stderr(contains("out of range"))
            .stderr(contains("panicked").not());
    }
    assert!(!marker.exists(), "the command must not start");
}

#[test]
fn a_second_run_into_a_run_directory_is_refused_and_force_replaces_it_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    polyprof()
        .args(["run", "-q", "--output-dir"])
        .arg(&out)
        .args(["--", "sh", "-c", "exit 7"])
        .assert()
        .code(7);
    // A stale log of an older run with more steps.
    std::fs::write(out.join("run.2.stderr.log"), "old").unwrap();
    std::fs::write(out.join("mine.txt"), "keep").unwrap();
    polyprof()
        .args(["run", "-q", "--output-dir"])
        .arg(&out)
        .args(["--", "true"])
        .assert()
        .code(2)
        .stderr(contains("--force"));
    // The failed run is still there, untouched.
    let run = ProfileRun::read(&out).unwrap();
    assert_eq!(run.outcome, Some(Outcome::Exited { code: 7 }));
    polyprof()
        .args(["run", "-q", "--force", "--output-dir"])
        .arg(&out)
        .args(["--", "true"])
        .assert()
        .code(0);
    assert!(!out.join("run.2.stderr.log").exists());
    assert!(
        out.join("mine.txt").exists(),
        "files that are not the run's stay"
    );
    let run = ProfileRun::read(&out).unwrap();
    assert_eq!(run.outcome, Some(Outcome::Exited { code: 0 }));
}

#[test]
fn the_library_takes_the_next_free_numbered_directory() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("none.000");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let job = polyprof::Job::new(vec!["true".into()], &first);
    let a = runtime.block_on(polyprof::profile(&job));
    let b = runtime.block_on(polyprof::profile(&job));
    assert_eq!(a.output_dir, first);
    assert_eq!(b.output_dir, dir.path().join("none.001"));
    assert!(ProfileRun::read(&first).is_ok());
}

#[test]
fn a_closed_stdout_ends_quietly_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for (i, close_stderr) in [false, true].into_iter().enumerate() {
        // A reader that is gone before polyprof writes its summary: `polyprof … | head -0`.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_polyprof"));
        command
            .args(["run", "--output-dir"])
            .arg(dir.path().join(format!("o{i}")))
            .args(["--", "echo", "hello"])
            .stdout(Stdio::from(writer));
        if close_stderr {
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            command.stderr(Stdio::from(writer));
        } else {
            command.stderr(Stdio::piped());
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(141), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("Broken pipe"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn an_error_with_a_cause_prints_the_cause_once() {
    let output = polyprof()
        .args(["report", "/nonexistent/run/dir"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0));
    let cause = "No such file or directory";
    assert!(stderr.contains(cause), "{stderr}");
    assert_eq!(stderr.matches(cause).count(), 1, "{stderr}");
}
