//! Hatchet export: the rules of the literal format checked here, and the file loaded with
//! llnl-hatchet by scripts/check-hatchet.py when `import hatchet` works (CI installs it with
//! `python3 -m pip install llnl-hatchet`).

use crate::support::{BASELINE_GPU_NS, fixture, polyprof, python_has, script};
use polyprof::results::ProfileRun;
use polyprof::results::callpath::{Session, scope};
use polyprof::results::export::{self, Format, Report};
use serde_json::Value;

fn check_with_hatchet(path: &std::path::Path, totals: &[String]) {
    if !python_has("hatchet") {
        crate::support::record_skip(
            &crate::support::this_test(),
            "llnl-hatchet check (python3 -c 'import hatchet' failed; pip install llnl-hatchet)",
        );
        return;
    }
    let mut command = std::process::Command::new("python3");
    command.arg(script("check-hatchet.py")).arg(path);
    for total in totals {
        command.args(["--total", total]);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Every key on every node, and the rules of the root.
fn check_rules(literal: &Value) {
    let roots = literal.as_array().unwrap();
    assert_eq!(roots.len(), 1);
    let root = &roots[0];
    let root_keys: Vec<&String> = root["metrics"].as_object().unwrap().keys().collect();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        assert!(node["frame"]["name"].is_string() && node["frame"]["type"].is_string());
        let keys: Vec<&String> = node["metrics"].as_object().unwrap().keys().collect();
        assert_eq!(keys, root_keys, "{}", node["frame"]);
        stack.extend(node["children"].as_array().into_iter().flatten());
    }
    for (key, value) in root["metrics"].as_object().unwrap() {
        if !key.contains("(inc)") {
            assert_eq!(value.as_f64(), Some(0.0), "root exclusive {key}");
            assert!(root_keys.contains(&&format!("{key} (inc)")), "{key}");
        }
    }
}

#[test]
fn run_export_loads_with_every_metric_and_the_real_total() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.json");
    polyprof()
        .arg("report")
        .arg(fixture("runs/h200-baseline"))
        .args(["--format", "hatchet", "-o"])
        .arg(&path)
        .assert()
        .success();
    let literal: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    check_rules(&literal);
    assert_eq!(literal[0]["metrics"]["time (ns) (inc)"], BASELINE_GPU_NS);
    // 2·2^30 FLOPs for each matmul, 2^24 for vector_add, 25,133,056 for reduce_sum.
    let flops = 2.0 * 2_147_483_648.0 + 16_777_216.0 + 25_133_056.0;
    assert_eq!(literal[0]["metrics"]["flops32 (inc)"], flops);
    check_with_hatchet(
        &path,
        &[
            format!("time (ns)={BASELINE_GPU_NS}"),
            format!("flops32={flops}"),
            // Four kernel launches; the ncu process step is the pass's own time, not a call.
            "count=4".to_string(),
            "cpu_time (ns)=2500000000".to_string(),
        ],
    );
}

#[test]
fn nested_session_scopes_do_not_double_count() {
    let run = ProfileRun::read(&fixture("runs/h200-baseline")).unwrap();
    let session = Session::start("eval").unwrap();
    {
        let _job = scope("candidate-17", &[("tokens", 3.0)]);
        {
            let _compile = scope("compile", &[]);
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let _bench = scope("bench", &[("flops32", 1e6)]);
        session.add_run(&run);
    }
    let profile = session.finish();
    let outer_wall = profile.events[0].cpu_time_ns.unwrap();
    let report = Report::from_profile(profile, None);
    let bytes = export::render(&report, Format::Hatchet).unwrap();
    let literal: Value = serde_json::from_slice(&bytes).unwrap();
    check_rules(&literal);
    let root = &literal[0]["metrics"];
    // The outer scope's wall time once, not outer + compile + bench.
    assert!((root["cpu_time (ns) (inc)"].as_f64().unwrap() - outer_wall).abs() < 1e-6);
    assert_eq!(root["time (ns) (inc)"], BASELINE_GPU_NS);
    assert_eq!(root["tokens (inc)"], 3.0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.json");
    std::fs::write(&path, &bytes).unwrap();
    check_with_hatchet(
        &path,
        &[
            format!("time (ns)={BASELINE_GPU_NS}"),
            format!("cpu_time (ns)={outer_wall}"),
        ],
    );
}
