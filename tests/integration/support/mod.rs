//! Shared by the report_* integration tests: fixture paths and the polyprof binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `tests/fixtures/runs/<name>` (h200-baseline, h200-regressed).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs")
        .join(name)
}

pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

pub fn polyprof() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("polyprof").unwrap()
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
