//! `polyprof demo` on a machine without a GPU profiler: the built-in `none` profiler runs the
//! bundled CPU workload, and the run directory gets run.json, a Hatchet and a Chrome file.

use assert_cmd::Command;

#[test]
fn demo_without_gpu_profiles_the_cpu_workload_and_writes_exports() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("polyprof")
        .unwrap()
        .args(["demo", "--profiler", "none", "--output-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("4 passed in"), "{stdout}");

    let run_dir = dir.path().join("none.000");
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["outcome"]["kind"], "exited");
    assert_eq!(run["outcome"]["code"], 0);
    let attempt = &run["steps"][0]["attempts"][0];
    assert!(
        attempt["marker"]["line"]
            .as_str()
            .unwrap()
            .starts_with("4 passed in")
    );

    let hatchet: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("profile.hatchet.json")).unwrap())
            .unwrap();
    assert!(
        hatchet.as_array().is_some_and(|roots| !roots.is_empty()),
        "{hatchet}"
    );
    let chrome: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("trace.chrome.json")).unwrap()).unwrap();
    let events = chrome["traceEvents"].as_array().unwrap();
    assert!(
        events.iter().any(|e| e["ph"] == "X" && e["name"] == "run"),
        "{chrome}"
    );
}
