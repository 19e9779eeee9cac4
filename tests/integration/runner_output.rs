//! Output handling through the real binary: huge lines, invalid UTF-8 and NULs, leaked
//! grandchildren holding the pipes, capped logs.

use crate::support::runner::*;
use polyprof::pipeline::Outcome;

#[test]
fn huge_line_is_split_and_every_byte_logged() {
    let fx = Fixture::new();
    let ran = run(
        &fx,
        &["--line-limit", "1000000"],
        &["sh", &program("huge_line.sh")],
    );
    let attempt = ran.attempt();
    assert_eq!(attempt.outcome, Outcome::Exited { code: 0 });
    assert!(attempt.stdout.long_lines_split);
    assert_eq!(
        (attempt.stdout.lines, attempt.stdout.total_bytes),
        (2, 3_000_005)
    );
    let log = log_bytes(&ran, false);
    assert_eq!(log.len(), 3_000_005);
    assert!(log[..3_000_000].iter().all(|&b| b == b'x'));
    assert_eq!(&log[3_000_000..], b"\nend\n");
    // Memory stays bounded: the kept head line is cut.
    assert!(
        attempt.stdout.head[0].len() < 10_000,
        "{}",
        attempt.stdout.head[0].len()
    );
    assert_eq!(attempt.stdout.head[1], "end");
    assert_no_survivors(&fx);
}

#[test]
fn invalid_utf8_and_nul_bytes_are_kept_raw_and_decoded_lossily() {
    let fx = Fixture::new();
    let ran = run(&fx, &[], &["sh", &program("invalid_utf8.sh")]);
    let attempt = ran.attempt();
    assert_eq!(attempt.outcome, Outcome::Exited { code: 0 });
    assert_eq!(log_bytes(&ran, false), b"ok\n\xff\xfe bad\nnul\0byte\n");
    assert_eq!(log_bytes(&ran, true), b"err\0\xff\n");
    assert_eq!(
        attempt.stdout.head,
        ["ok", "\u{fffd}\u{fffd} bad", "nul\0byte"]
    );
    assert_eq!(attempt.stderr.head, ["err\0\u{fffd}"]);
    assert_no_survivors(&fx);
}

#[test]
fn grandchild_holding_stdout_is_reported_as_leaked_and_killed() {
    let fx = Fixture::new();
    let ran = run(&fx, &[], &["sh", &program("leaks_grandchild.sh")]);
    let attempt = ran.attempt();
    assert_eq!(attempt.outcome, Outcome::Exited { code: 0 });
    assert!(attempt.leaked);
    assert_eq!(attempt.stdout.head, ["leader exits"]);
    let after_exit = attempt.timings.end_s - attempt.timings.exit_s.unwrap();
    assert!(after_exit < 3.0, "{:?}", attempt.timings);
    assert!(
        ran.run
            .warnings
            .iter()
            .any(|w| w.contains("outlived the leader")),
        "{:?}",
        ran.run.warnings
    );
    assert_no_survivors(&fx);
}

#[test]
fn capped_log_keeps_head_and_tail() {
    let fx = Fixture::new();
    // 3 MB line with a 1 MiB cap: head and tail halves kept, the middle dropped and said so.
    let ran = run(
        &fx,
        &["--log-cap-mib", "1"],
        &["sh", &program("huge_line.sh")],
    );
    let attempt = ran.attempt();
    assert!(attempt.stdout.log_truncated);
    assert_eq!(attempt.stdout.total_bytes, 3_000_005);
    let log = log_bytes(&ran, false);
    assert!(log.len() < 1_100_000, "{}", log.len());
    assert!(log.starts_with(&[b'x'; 1000]));
    assert!(log.ends_with(b"xxx\nend\n"));
    assert!(String::from_utf8_lossy(&log).contains("bytes of this stream omitted"));
    assert_no_survivors(&fx);
}
