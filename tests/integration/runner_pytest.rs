//! A real pytest under the runner, when python3 has pytest (skipped with a note otherwise).

use crate::support::runner::*;
use polyprof::pipeline::Outcome;

fn have_pytest() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: python3 with pytest is not available; real-pytest tests skipped");
    }
    ok
}

fn pytest(fx: &Fixture, dir: &str, quiet: bool) -> Ran {
    let path = program(dir);
    let mut cmd = vec![
        "python3",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        path.as_str(),
    ];
    if quiet {
        cmd.push("-q");
    }
    run(
        fx,
        &[
            "--end-marker",
            "pytest",
            "--marker-grace",
            "1",
            "--kill-grace",
            "1",
        ],
        &cmd,
    )
}

#[test]
fn real_pytest_pass_and_fail_in_both_verbosities() {
    if !have_pytest() {
        return;
    }
    for quiet in [true, false] {
        let ran = pytest(&Fixture::new(), "pytest_pass", quiet);
        assert_eq!(ran.attempt().outcome, Outcome::Exited { code: 0 });
        let marker = ran.attempt().marker.clone().expect("summary not seen");
        assert!(
            marker.passed && marker.line.contains("2 passed"),
            "{marker:?}"
        );
        assert_eq!(marker.line.starts_with('='), !quiet, "{marker:?}");

        let ran = pytest(&Fixture::new(), "pytest_fail", quiet);
        assert_eq!(ran.attempt().outcome, Outcome::Exited { code: 1 });
        let marker = ran.attempt().marker.clone().expect("summary not seen");
        assert!(
            !marker.passed && marker.line.contains("1 failed, 1 passed"),
            "{marker:?}"
        );
        assert_eq!(ran.code, 1);
    }
}

#[test]
fn real_pytest_that_hangs_after_passing_is_a_pass() {
    if !have_pytest() {
        return;
    }
    let fx = Fixture::new();
    let ran = pytest(&fx, "pytest_hang", true);
    assert!(
        matches!(
            ran.attempt().outcome,
            Outcome::HungAfterMarker { passed: true, .. }
        ),
        "{:?}",
        ran.attempt()
    );
    assert_eq!(ran.code, 0);
    assert_no_survivors(&fx);
}
