//! The backend registry as the binary shows it: every registered backend reaches `wrap` and
//! `parse --profiler`, and a backend without a parser says so instead of failing on the file.

use assert_cmd::Command;
use polyprof::profilers::registry::BACKENDS;

fn polyprof() -> Command {
    Command::cargo_bin("polyprof").unwrap()
}

#[test]
fn parse_without_a_parser_says_so_before_reading_anything() {
    for entry in BACKENDS.iter().filter(|b| !b.parses_kernels) {
        let output = polyprof()
            .args(["parse", "--profiler", entry.name, "no-such-file"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", entry.name);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!("`{}` has no parser yet", entry.name))
                && stderr.contains("reads output of: ncu")
                && !stderr.contains("no-such-file"),
            "{stderr}"
        );
    }
}

#[test]
fn every_registered_backend_builds_a_plan_through_wrap() {
    let dir = tempfile::tempdir().unwrap();
    for entry in BACKENDS {
        let output = polyprof()
            .args(["wrap", "--profiler", entry.name, "--output-dir"])
            .arg(dir.path())
            .args(["--", "python3", "-c", "print('(16, 32)')"])
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}: {}",
            entry.name,
            String::from_utf8_lossy(&output.stderr)
        );
        let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(plan["profiler"], entry.name);
        assert_eq!(plan["target"][2], "print('(16, 32)')");
    }
}

#[test]
fn group_is_refused_for_backends_without_metric_groups() {
    let output = polyprof()
        .args(["wrap", "--profiler", "vtune", "--group", "ComputeBasic"])
        .args(["--output-dir", "/tmp", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--group applies to unitrace and ocl-unitrace and rocprofv3 only"),
        "{stderr}"
    );
}
