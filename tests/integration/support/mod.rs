//! Shared by every integration test: paths of fixtures and scripts, the polyprof binary, and
//! what this machine's python3 can import. Helpers of one area live in its submodule.

pub mod alone;
pub mod batch;
pub mod browser;
pub mod container;
pub mod eval;
pub mod eval_captures;
pub mod hostile;
pub mod ncu;
pub mod ray;
pub mod runner;
pub mod schema;
pub mod slurm;

use std::path::{Path, PathBuf};

/// `tests/fixtures/<path>`, e.g. `ncu-h200/raw_page.stdout` or `runs/h200-baseline`.
pub fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

pub fn polyprof() -> assert_cmd::Command {
    assert_cmd::Command::new(env!("CARGO_BIN_EXE_polyprof"))
}

/// The command exited with `code`; else the failure shows its stdout and stderr.
pub fn assert_exit(out: &std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The sum of the baseline's four real kernel durations, ns (58,784 + 415,840 + 247,136 + 60,448).
pub const BASELINE_GPU_NS: f64 = 782_208.0;

/// True when `python3 -c 'import <module>'` works here.
pub fn python_has(module: &str) -> bool {
    std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The cells of one CSV line (quotes undone), split at `delimiter`.
pub fn csv_cells(line: &str, delimiter: u8) -> Vec<String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(delimiter)
        .from_reader(line.as_bytes());
    reader
        .records()
        .next()
        .unwrap()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect()
}

/// Say that `test` is skipped because of `why`; under CI (`CI` set) a skip is a failure, so a
/// missing tool there cannot pass for a test that ran. cargo hides a passing test's stderr, so
/// the line is also appended to the file `POLYPROF_TEST_SKIPS` names, which `scripts/test.sh`
/// prints, with a count, in its closing lines.
pub fn skip(test: &str, why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} cannot run under CI: {why}"
    );
    record_skip(test, why);
}

/// The test running on this thread, as cargo names it (`file::test`).
pub fn this_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("a test on an unnamed thread")
        .to_string()
}

/// Say `SKIPPED test: why` on stderr and in the `POLYPROF_TEST_SKIPS` file (without failing
/// under CI: the few callers of this alone have said why CI cannot skip them).
pub fn record_skip(test: &str, why: &str) {
    let line = format!("SKIPPED {test}: {why}");
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("POLYPROF_TEST_SKIPS") {
        use std::io::Write;
        // One write of one line in append mode: tests running at once do not interleave.
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = written {
            eprintln!("cannot record the skip in {}: {e}", path.to_string_lossy());
        }
    }
}
