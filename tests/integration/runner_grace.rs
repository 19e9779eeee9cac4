//! A stopped run keeps what the profiler writes at exit. Real profilers are launcher scripts
//! that start the binary holding the results as a child (`ncu` runs
//! `target/linux-desktop-glibc_2_11_3-x64/ncu`, not with exec): on SIGTERM the launcher dies at
//! once while the binary writes its report. The kill grace is for that binary too, whatever
//! the tracking, for every backend whose tool writes at exit, and for `batch` jobs.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use polyprof::model::outcome::Outcome;
use polyprof::results::ProfileRun;

use crate::support::batch::{batch, entry, write_jobs};
use crate::support::{fixture, polyprof};

/// The launcher, as the real `ncu` script: the binary beside it runs as its child.
const LAUNCHER: &str = r#"#!/bin/sh
"$(dirname "$0")/target/linux-desktop-glibc_2_11_3-x64/$(basename "$0")" "$@"
"#;

/// The profiler binary: runs the target (from `sh -c` on) as its child and writes its
/// results only when stopped, a second after SIGTERM (ncu writes the rows it profiled then).
const PROFILER: &str = r#"#!/bin/sh
while [ $# -gt 0 ] && ! { [ "$1" = sh ] && [ "$2" = -c ]; }; do shift; done
trap 'sleep 1; cp "$CONTENT" "$RESULTS.part" && mv "$RESULTS.part" "$RESULTS"; exit 0' TERM
"$@" &
wait
"#;

/// The program being profiled: hangs, as in the report (`./loop 3; exec sleep 600`).
const HANGS: &str = "exec sleep 600";

struct Tool {
    root: tempfile::TempDir,
}

impl Tool {
    /// `bin/<name>` (the launcher) and the binary it starts.
    fn install(name: &str) -> Tool {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        let real = bin.join("target/linux-desktop-glibc_2_11_3-x64");
        std::fs::create_dir_all(&real).unwrap();
        for (path, text) in [(bin.join(name), LAUNCHER), (real.join(name), PROFILER)] {
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Tool { root }
    }

    fn path_env(&self) -> String {
        format!(
            "{}:{}",
            self.root.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    fn results(&self) -> PathBuf {
        self.root.path().join("results")
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }
}

/// The main step of `profiler`'s plan for `sh -c HANGS`: its argv and its kill grace.
fn main_step(profiler: &str, output_dir: &Path) -> (Vec<String>, f64) {
    let output = polyprof()
        .args(["wrap", "--profiler", profiler, "--output-dir"])
        .arg(output_dir)
        .args(["--", "sh", "-c", HANGS])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let step = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| {
            let argv = step["command"]["argv"].as_array().unwrap();
            argv.last().and_then(|a| a.as_str()) == Some(HANGS)
        })
        .unwrap_or_else(|| panic!("no step runs the target: {plan}"));
    let argv = step["command"]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    (argv, step["graces"]["kill_grace"].as_f64().unwrap())
}

/// `polyprof run --timeout 1 --kill-grace GRACE` on `argv` with the fake tool on PATH.
fn run_stopped(
    tool: &Tool,
    tracking: &str,
    argv: &[String],
    grace: f64,
    content: &Path,
) -> (ProfileRun, i32, Duration) {
    let out = tool.dir(&format!("run-{tracking}"));
    let started = Instant::now();
    let output = polyprof()
        .args([
            "run",
            "--json",
            "-q",
            "--timeout",
            "1",
            "--tracking",
            tracking,
        ])
        .args(["--kill-grace", &grace.to_string(), "--output-dir"])
        .arg(&out)
        .arg("--")
        .args(argv)
        .env("PATH", tool.path_env())
        .env("RESULTS", tool.results())
        .env("CONTENT", content)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let wall = started.elapsed();
    let run: ProfileRun =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {output:?}"));
    (run, output.status.code().unwrap_or(-1), wall)
}

/// The kernels `polyprof parse --profiler ncu` reads from `file`.
fn ncu_kernels(file: &Path) -> usize {
    let output = polyprof()
        .args(["parse", "--profiler", "ncu", "--json"])
        .arg(file)
        .output()
        .unwrap();
    let doc: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {output:?}"));
    doc["kernels"].as_array().map_or(0, Vec::len)
}

/// ncu's log after SIGTERM (a real capture: the rows profiled before the stop).
fn ncu_log_after_sigterm() -> PathBuf {
    fixture("ncu-h200/hang_after_summary_sigterm_log.csv")
}

#[test]
fn a_timed_out_ncu_below_its_launcher_keeps_every_profiled_kernel() {
    let want = ncu_kernels(&ncu_log_after_sigterm());
    assert!(want > 0, "the fixture has kernels");
    for tracking in ["supervisor", "group"] {
        let tool = Tool::install("ncu");
        let (argv, grace) = main_step("ncu", &tool.dir("ncu-out"));
        assert_eq!(argv[0], "ncu");
        let (run, code, wall) =
            run_stopped(&tool, tracking, &argv, grace, &ncu_log_after_sigterm());
        assert_eq!(code, 124, "{tracking}: {:?}", run.warnings);
        assert!(
            matches!(run.outcome, Some(Outcome::TimedOut { .. })),
            "{tracking}: {:?}",
            run.outcome
        );
        assert!(
            tool.results().exists(),
            "{tracking}: the profiler was killed before it wrote its results: {:?}",
            run.warnings
        );
        assert_eq!(ncu_kernels(&tool.results()), want, "{tracking}");
        // It ended when the profiler did, not at the end of the 10 s grace.
        assert!(grace >= 5.0, "{grace}");
        assert!(wall < Duration::from_secs(6), "{tracking}: {wall:?}");
        assert!(
            !run.warnings.iter().any(|w| w.contains("SIGKILL")),
            "{tracking}: {:?}",
            run.warnings
        );
    }
}

#[test]
fn every_backend_that_writes_at_exit_gets_its_grace_below_a_launcher() {
    for profiler in ["unitrace", "ocl-unitrace", "rocprofv3", "vtune"] {
        let plan_dir = tempfile::tempdir().unwrap();
        let (argv, grace) = main_step(profiler, plan_dir.path());
        // The launcher under the name the plan runs (`unitrace`, `rocprofv3`, `vtune`).
        let tool = Tool::install(&argv[0]);
        let content = tool.dir("content");
        std::fs::write(&content, format!("{profiler} results\n")).unwrap();
        let (run, code, wall) = run_stopped(&tool, "supervisor", &argv, grace, &content);
        assert_eq!(code, 124, "{profiler}: {:?}", run.warnings);
        assert_eq!(
            std::fs::read_to_string(tool.results()).ok().as_deref(),
            Some(format!("{profiler} results\n").as_str()),
            "{profiler} (`{}`): killed before it wrote its results: {:?}",
            argv[0],
            run.warnings
        );
        assert!(grace >= 2.0, "{profiler}: {grace}");
        assert!(wall < Duration::from_secs(6), "{profiler}: {wall:?}");
    }
}

#[test]
fn a_batch_job_that_times_out_keeps_what_its_profiler_writes_at_exit() {
    let tool = Tool::install("ncu");
    let (argv, _) = main_step("ncu", &tool.dir("ncu-out"));
    let jobs = write_jobs(
        tool.root.path(),
        &[serde_json::json!({"id": "hangs", "target": argv, "timeout_s": 1})],
    );
    let root = tool.dir("batch");
    let output = batch(&jobs, &root)
        .args(["--devices", "cpu", "-q"])
        .env("PATH", tool.path_env())
        .env("RESULTS", tool.results())
        .env("CONTENT", ncu_log_after_sigterm())
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let entry = entry(&root, "hangs");
    assert!(
        tool.results().exists(),
        "killed before it wrote its results: {output:?} {entry:?}"
    );
    assert_eq!(
        ncu_kernels(&tool.results()),
        ncu_kernels(&ncu_log_after_sigterm())
    );
}
