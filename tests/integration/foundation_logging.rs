//! `-v`, `-vv` and `RUST_LOG`: what a user debugging a run sees on stderr. The run goes through
//! a stand-in `ncu` and `nvidia-smi` (shell scripts on PATH) so the preflight's probes answer
//! and the plan is made and run on any machine.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::polyprof;

fn tool(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// stderr of `polyprof <flags> run --profiler ncu -- true` with the stand-ins first on PATH.
fn run_stderr(flags: &[&str], rust_log: Option<&str>) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    tool(
        &bin,
        "ncu",
        "case \"$1\" in --version) echo 'Version 2025.3.1.0 (build 1)';; esac; exit 0",
    );
    tool(
        &bin,
        "nvidia-smi",
        "echo 'GPU 0: NVIDIA H200 (UUID: GPU-1)'",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = polyprof();
    command
        .env("PATH", path)
        .env_remove("RUST_LOG")
        .args(flags)
        .args(["run", "--profiler", "ncu", "--output-dir"])
        .arg(tmp.path().join("out"))
        .args(["--", "true"]);
    if let Some(filter) = rust_log {
        command.env("RUST_LOG", filter);
    }
    let out = command.output().unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn vv_logs_the_plan_the_probes_and_the_files_written() {
    let stderr = run_stderr(&["-vv"], None);
    for expected in [
        "plan step",
        "ncu",
        "probe answered",
        "Version 2025.3.1.0",
        "preflight answered",
        "wrote the run document",
        "run.json",
        // Trace level: each step's environment.
        "plan step environment",
    ] {
        assert!(stderr.contains(expected), "no `{expected}` in:\n{stderr}");
    }
}

#[test]
fn v_logs_less_and_no_flag_nothing() {
    let debug = run_stderr(&["-v"], None);
    assert!(debug.contains("plan step"), "{debug}");
    assert!(debug.contains("probe answered"), "{debug}");
    assert!(!debug.contains("plan step environment"), "{debug}");
    assert!(!debug.contains("TRACE"), "{debug}");
    let quiet = run_stderr(&[], None);
    for absent in ["DEBUG", "TRACE", "INFO", "plan step", "probe answered"] {
        assert!(!quiet.contains(absent), "`{absent}` without -v:\n{quiet}");
    }
}

#[test]
fn rust_log_overrides_the_flags() {
    let off = run_stderr(&["-vv"], Some("off"));
    assert!(!off.contains("plan step"), "{off}");
    let chosen = run_stderr(&[], Some("polyprof::pipeline::probe=debug"));
    assert!(chosen.contains("probe answered"), "{chosen}");
    assert!(!chosen.contains("plan step"), "{chosen}");
}
