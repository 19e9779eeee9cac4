//! One test in a process of its own. Every integration test shares this binary's process, so a
//! test that counts per-process resources (open descriptors) would see the other tests' files.

use std::process::Command;

const ALONE: &str = "POLYPROF_TEST_ALONE";

/// Inside the fresh process: true, and the caller does its work. Otherwise: runs `test` (its
/// full name as `cargo test -- --list` prints it) alone in a fresh process of this binary,
/// asserts that it ran and passed there, and returns false.
pub fn in_own_process(test: &str) -> bool {
    if std::env::var_os(ALONE).is_some_and(|v| v == test) {
        return true;
    }
    let output = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([test, "--exact", "--test-threads=1"])
        .env(ALONE, test)
        .output()
        .expect("the test binary starts again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    // "1 passed" also proves the name matched: a stale name would run nothing and succeed.
    assert!(
        output.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{test} in its own process:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    false
}
