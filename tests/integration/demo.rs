//! `polyprof demo` on a machine without a GPU profiler: the built-in `none` profiler runs the
//! bundled CPU workload, and the run directory gets run.json, a Hatchet and a Chrome file.

use assert_cmd::Command;

/// `polyprof demo --profiler none --output-dir DIR`.
fn demo_none(dir: &std::path::Path) -> std::process::Output {
    Command::cargo_bin("polyprof")
        .unwrap()
        .args(["demo", "--profiler", "none", "--output-dir"])
        .arg(dir)
        .output()
        .unwrap()
}

#[test]
fn demo_without_gpu_profiles_the_cpu_workload_and_writes_exports() {
    let dir = tempfile::tempdir().unwrap();
    let out = demo_none(dir.path());
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
    // The picture beside run.json, and its path on stdout.
    let page = run_dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") || html.starts_with("<!doctype html>"));
    assert!(stdout.contains(&page.display().to_string()), "{stdout}");
}

/// What the demo showed comes back from its run directory: `report --format csv` has a row per
/// workload scope, the Hatchet and Proton re-exports keep the four scopes, and the replay
/// folder has the Chrome trace the README promises.
#[test]
fn the_demo_run_reports_its_scopes_again_and_the_replay_has_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = demo_none(dir.path());
    crate::support::assert_exit(&out, 0);
    let run_dir = dir.path().join("none.000");
    let report = |format: &str| {
        let out = Command::cargo_bin("polyprof")
            .unwrap()
            .args(["report", "--format", format])
            .arg(&run_dir)
            .output()
            .unwrap();
        crate::support::assert_exit(&out, 0);
        String::from_utf8(out.stdout).unwrap()
    };
    let scopes = [
        "vector_add",
        "matmul_naive",
        "matmul_tiled<32>",
        "reduce_sum",
    ];

    let csv = report("csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    for scope in scopes {
        let row = rows
            .iter()
            .find(|r| &r[column("kernel")] == scope)
            .unwrap_or_else(|| panic!("no row {scope}:\n{csv}"));
        assert_eq!(&row[column("kind")], "scope");
        assert!(row[column("cpu_time_ns")].parse::<f64>().unwrap() > 0.0);
        assert!(
            row[column("gflops_per_s")].parse::<f64>().unwrap() > 0.0,
            "{csv}"
        );
        assert!(
            row[column("dram_bytes")].parse::<f64>().unwrap() > 0.0,
            "{csv}"
        );
    }
    for format in ["hatchet", "proton"] {
        let text = report(format);
        for scope in scopes {
            assert!(
                text.contains(&format!("\"{scope}\"")),
                "{format}: {scope}\n{text}"
            );
        }
    }
    assert!(report("table").contains("matmul_tiled<32>"));

    let replay = dir.path().join("h200-replay");
    let chrome: serde_json::Value =
        serde_json::from_slice(&std::fs::read(replay.join("trace.chrome.json")).unwrap()).unwrap();
    let kernels = chrome["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "kernel")
        .count();
    assert_eq!(kernels, 8);
}
