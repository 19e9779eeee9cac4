//! End markers through the real binary: hangs after the marker, ignores SIGTERM, writes its
//! report after the marker, closes stderr early, every pytest summary form.

use crate::support::runner::*;
use polyprof::pipeline::Outcome;

#[test]
fn hang_after_passing_summary_is_a_pass_with_a_warning() {
    let fx = Fixture::new();
    let ran = run(
        &fx,
        &[
            "--end-marker",
            "pytest",
            "--marker-grace",
            "0.5",
            "--kill-grace",
            "2",
        ],
        &["sh", &program("hang_after_marker.sh")],
    );
    let attempt = ran.attempt();
    assert_eq!(
        attempt.outcome,
        Outcome::HungAfterMarker {
            marker_line: "=== 2 passed in 0.01s ===".into(),
            passed: true
        }
    );
    assert_eq!(ran.code, 0);
    assert!(
        ran.run
            .warnings
            .iter()
            .any(|w| w.contains("passed, then hung")),
        "{:?}",
        ran.run.warnings
    );
    let t = &attempt.timings;
    let marker = t.marker_s.unwrap();
    // Stopped at the grace (sleep dies on SIGTERM at once), with generous bounds.
    assert!(
        t.exit_s.unwrap() >= marker + 0.5 && t.exit_s.unwrap() < marker + 2.0,
        "{t:?}"
    );
    assert_eq!(
        attempt.stdout.head,
        ["collected 2 items", "=== 2 passed in 0.01s ==="]
    );
    assert_no_survivors(&fx);
}

#[test]
fn ignoring_sigterm_gets_sigkill_after_the_kill_grace() {
    let fx = Fixture::new();
    let ran = run(
        &fx,
        &[
            "--end-marker",
            "pytest",
            "--marker-grace",
            "0.2",
            "--kill-grace",
            "0.5",
        ],
        &["sh", &program("ignores_sigterm.sh")],
    );
    let attempt = ran.attempt();
    assert!(matches!(
        attempt.outcome,
        Outcome::HungAfterMarker { passed: true, .. }
    ));
    let t = &attempt.timings;
    let waited = t.exit_s.unwrap() - t.marker_s.unwrap();
    assert!((0.7..3.0).contains(&waited), "{t:?}");
    assert!(
        ran.run.warnings.iter().any(|w| w.contains("SIGKILL")),
        "{:?}",
        ran.run.warnings
    );
    assert_no_survivors(&fx);
}

#[test]
fn report_after_the_marker_is_captured_and_the_exit_ends_the_run() {
    let fx = Fixture::new();
    let ran = run(
        &fx,
        &["--end-marker", "pytest", "--marker-grace", "20"],
        &["sh", &program("report_after_marker.sh")],
    );
    let attempt = ran.attempt();
    assert_eq!(attempt.outcome, Outcome::Exited { code: 0 });
    assert_eq!(attempt.marker.as_ref().unwrap().line, "2 passed in 8.10s");
    // Returned when the process exited, not after the 20 s grace.
    assert!(ran.wall.as_secs_f64() < 10.0, "{:?}", ran.wall);
    let log = log_bytes(&ran, false);
    assert!(log.ends_with(b"\"199\",\"vector_add\",\"gpu__time_duration.sum\",\"ns\",\"2,048\"\n==PROF== Report done (no newline)"));
    assert_eq!(attempt.stdout.lines, 202);
    assert_eq!(
        attempt.stdout.tail.last().unwrap(),
        "==PROF== Report done (no newline)"
    );
    assert_no_survivors(&fx);
}

#[test]
fn stderr_closing_early_does_not_stop_stdout_or_the_marker() {
    let fx = Fixture::new();
    let ran = run(
        &fx,
        &["--end-marker", "pytest"],
        &["sh", &program("closes_stderr.sh")],
    );
    let attempt = ran.attempt();
    assert_eq!(attempt.outcome, Outcome::Exited { code: 0 });
    assert_eq!(attempt.stderr.head, ["to stderr"]);
    assert_eq!(
        attempt.stdout.head,
        ["after stderr closed", "=== 1 passed in 0.20s ==="]
    );
    assert!(attempt.marker.as_ref().unwrap().passed);
    assert_no_survivors(&fx);
}

#[test]
fn every_pytest_summary_form_is_a_marker_with_its_verdict() {
    let forms = [
        ("2 passed in 0.01s", true),
        ("=== 1 failed, 1 passed in 0.02s ===", false),
        ("==== 2 passed, 1 warning in 0.01s ====", true),
        ("1 error in 0.05s", false),
        ("1 passed, 1 xfailed, 1 xpassed in 0.02s", true),
        ("3 passed, 2 skipped, 4 deselected, 1 rerun in 1.00s", true),
        ("5 passed in 61.23s (0:01:01)", true),
        ("=== no tests ran in 0.01s ===", false),
    ];
    for (summary, passed) in forms {
        let fx = Fixture::new();
        let ran = run(
            &fx,
            &[
                "--end-marker",
                "pytest",
                "--marker-grace",
                "0.1",
                "--kill-grace",
                "1",
                "--env",
                &format!("SUMMARY={summary}"),
            ],
            &["sh", &program("hang_after_marker.sh")],
        );
        assert_eq!(
            ran.attempt().outcome,
            Outcome::HungAfterMarker {
                marker_line: summary.into(),
                passed
            },
            "{summary}"
        );
        assert_eq!(ran.code, if passed { 0 } else { 1 }, "{summary}");
        assert_no_survivors(&fx);
    }
}

#[test]
fn literal_and_regex_markers() {
    let fx = Fixture::new();
    let ran = run(
        &fx,
        &["--end-marker", "literal:items", "--marker-grace", "0.1"],
        &["sh", &program("hang_after_marker.sh")],
    );
    assert!(
        matches!(&ran.attempt().outcome, Outcome::HungAfterMarker { marker_line, passed: true } if marker_line == "collected 2 items")
    );
    assert_no_survivors(&fx);
    let fx = Fixture::new();
    let ran = run(
        &fx,
        &[
            "--end-marker",
            r"regex:^=+ \d+ passed",
            "--marker-grace",
            "0.1",
        ],
        &["sh", &program("hang_after_marker.sh")],
    );
    assert!(matches!(
        &ran.attempt().outcome,
        Outcome::HungAfterMarker { passed: true, .. }
    ));
    assert_no_survivors(&fx);
}
