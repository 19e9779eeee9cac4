//! The runner says what it does at `debug` (`-vv`, `RUST_LOG`): the spawn, the stop and why,
//! the signals, the grace, the leftovers it killed, the outcome.

use std::time::Duration;

use crate::support::polyprof;

/// polyprof's stderr with `RUST_LOG=polyprof::pipeline::runner=debug`, colours taken out.
fn logged(flags: &[&str], command: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let output = polyprof()
        .args(["run", "-q", "--output-dir"])
        .arg(dir.path().join("out"))
        .args(flags)
        .arg("--")
        .args(command)
        .env("RUST_LOG", "polyprof::pipeline::runner=debug")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stderr);
    let mut plain = String::new();
    let mut rest = text.as_ref();
    while let Some(at) = rest.find('\x1b') {
        plain.push_str(&rest[..at]);
        rest = &rest[at..];
        rest = rest.find('m').map_or("", |end| &rest[end + 1..]);
    }
    plain.push_str(rest);
    plain
}

fn assert_has(text: &str, wanted: &[&str]) {
    for want in wanted {
        assert!(text.contains(want), "no `{want}` in:\n{text}");
    }
}

#[test]
fn a_timed_out_run_logs_its_spawn_stop_signal_grace_and_outcome() {
    let text = logged(&["--timeout", "0.3"], &["sleep", "30"]);
    assert_has(
        &text,
        &[
            "spawned the command argv=sleep 30 pid=",
            "tracking=\"supervisor\"",
            "the overall timeout fired after_s=0.3",
            "stopping the run",
            "SIGTERM to the process group; the kill grace starts",
            "grace_s=2",
            "the process tree exited within the kill grace",
            "the run ended outcome=timed out after 0.300 s",
        ],
    );
}

#[test]
fn a_leftover_killed_by_the_sweep_is_logged() {
    let text = logged(
        &["--tracking", "group"],
        &["sh", "-c", "sleep 31 & echo started"],
    );
    assert_has(
        &text,
        &[
            "leak sweep: SIGKILL to the process group",
            "killed a process the command left behind",
            "argv=sleep 31",
            "the run ended outcome=exited with code 0 leaked=true killed=1",
        ],
    );
}
