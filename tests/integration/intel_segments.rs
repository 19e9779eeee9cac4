//! Benchmark segments of a unitrace Chrome timeline (the harness's ITT tasks
//! `model run loop::<label>`) are scope frames of the call path: `polyprof report` puts each
//! segment's kernels under it in the Hatchet, Proton and Chrome exports.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

const SEGMENT_512: &str = "task.py::Test::test_benchmark[512]";
const SEGMENT_1024: &str = "task.py::Test::test_benchmark[1024]";

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// `polyprof parse --profiler unitrace TRACE --run-dir DIR` on the synthetic Chrome trace (the
/// fixture README says what is synthetic about it).
fn parsed_run(dir: &Path) -> PathBuf {
    let run_dir = dir.join("unitrace.000");
    let output = Command::cargo_bin("polyprof")
        .unwrap()
        .args(["parse", "--profiler", "unitrace", "--run-dir"])
        .arg(&run_dir)
        .arg(fixture("unitrace/synthetic_python.4242.json"))
        .output()
        .unwrap();
    crate::support::assert_exit(&output, 0);
    run_dir
}

fn export(run_dir: &Path, format: &str) -> Value {
    let output = Command::cargo_bin("polyprof")
        .unwrap()
        .args(["report", "--format", format])
        .arg(run_dir)
        .output()
        .unwrap();
    crate::support::assert_exit(&output, 0);
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Every (path of frame names, node) of a Hatchet/Proton tree, depth first.
fn nodes<'a>(node: &'a Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, &'a Value)>) {
    path.push(node["frame"]["name"].as_str().unwrap_or("").to_string());
    out.push((path.clone(), node));
    for child in node["children"].as_array().into_iter().flatten() {
        nodes(child, path, out);
    }
    path.pop();
}

fn tree_paths(root: &Value) -> Vec<(Vec<String>, &Value)> {
    let mut out = Vec::new();
    nodes(root, &mut Vec::new(), &mut out);
    out
}

#[test]
fn report_records_put_kernels_under_their_segment() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = parsed_run(dir.path());
    let report = export(&run_dir, "json");
    let paths: Vec<Vec<&str>> = report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            k["call_path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(paths.len(), 4);
    for (path, segment) in paths
        .iter()
        .zip([SEGMENT_512, SEGMENT_512, SEGMENT_1024, SEGMENT_1024])
    {
        // The timeline file `synthetic_python.4242.json` is that process's.
        assert_eq!(path[path.len() - 3], "synthetic_python [4242]", "{path:?}");
        assert_eq!(path[path.len() - 2], segment, "{path:?}");
        assert_eq!(path[path.len() - 1], "matmul_kernel", "{path:?}");
    }
}

#[test]
fn hatchet_and_proton_trees_nest_kernels_in_segments() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = parsed_run(dir.path());
    for format in ["hatchet", "proton"] {
        let document = export(&run_dir, format);
        let root = match &document {
            Value::Array(roots) => &roots[0],
            other => other,
        };
        let all = tree_paths(root);
        for (segment, calls, time_ns) in [
            (SEGMENT_512, 2.0, 1200500.0 + 1190125.0),
            (SEGMENT_1024, 2.0, 9400750.0 + 9390250.0),
        ] {
            let (path, node) = all
                .iter()
                .find(|(p, _)| p.last().map(String::as_str) == Some(segment))
                .unwrap_or_else(|| panic!("{format}: no `{segment}` node in {document}"));
            assert_eq!(node["frame"]["type"], "scope", "{format}: {node}");
            assert_eq!(
                path[path.len() - 2],
                "synthetic_python",
                "{format}: the process (stable name, no pid) holds the segments"
            );
            let kernels = node["children"].as_array().unwrap();
            assert_eq!(kernels.len(), 1, "{format}: {node}");
            let kernel = &kernels[0];
            assert_eq!(kernel["frame"]["name"], "matmul_kernel", "{format}");
            assert_eq!(kernel["metrics"]["count"].as_f64(), Some(calls), "{format}");
            assert_eq!(
                kernel["metrics"]["time (ns)"].as_f64(),
                Some(time_ns),
                "{format}"
            );
        }
    }
}

#[test]
fn chrome_trace_kernels_carry_their_segment_in_the_call_stack() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = parsed_run(dir.path());
    let trace = export(&run_dir, "chrome");
    let stacks: Vec<Vec<&str>> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "matmul_kernel")
        .map(|e| {
            e["args"]["call_stack"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(stacks.len(), 4, "{trace}");
    let segments: Vec<&str> = stacks.iter().map(|s| s[s.len() - 2]).collect();
    assert_eq!(
        segments,
        [SEGMENT_512, SEGMENT_512, SEGMENT_1024, SEGMENT_1024]
    );
}
