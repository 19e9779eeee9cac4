//! Chrome trace export: parsed and checked against the trace rules (X events in fractional µs
//! rebased to ≥ 0, M events naming processes and lanes, no overlap on a lane, metrics in args),
//! here and by scripts/check-chrome.py.

use std::collections::{BTreeMap, BTreeSet};

use crate::support::{fixture, polyprof, python_has, script};
use polyprof::results::callpath::{KernelLaunch, Session, record_kernel, scope};
use polyprof::results::export::{self, Format, Report};
use serde_json::Value;

/// The rules, checked in Rust; returns the X events.
fn check_rules(trace: &Value) -> Vec<Value> {
    let events = trace["traceEvents"].as_array().unwrap();
    let mut processes = BTreeSet::new();
    let mut threads = BTreeSet::new();
    let mut lanes: BTreeMap<(u64, u64), Vec<&Value>> = BTreeMap::new();
    for event in events {
        match event["ph"].as_str().unwrap() {
            "M" if event["name"] == "process_name" => {
                processes.insert(event["pid"].as_u64().unwrap());
            }
            "M" if event["name"] == "thread_name" => {
                threads.insert((
                    event["pid"].as_u64().unwrap(),
                    event["tid"].as_u64().unwrap(),
                ));
            }
            "X" => {
                let lane = (
                    event["pid"].as_u64().unwrap(),
                    event["tid"].as_u64().unwrap(),
                );
                assert!(event["ts"].as_f64().unwrap() >= 0.0, "{event}");
                assert!(event["dur"].as_f64().unwrap() >= 0.0, "{event}");
                assert!(event["args"]["metrics"].is_object(), "{event}");
                lanes.entry(lane).or_default().push(event);
            }
            _ => {}
        }
    }
    for (lane, xs) in &mut lanes {
        assert!(processes.contains(&lane.0), "no process_name for {lane:?}");
        assert!(threads.contains(lane), "no thread_name for {lane:?}");
        xs.sort_by(|a, b| {
            a["ts"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["ts"].as_f64().unwrap())
        });
        let mut open: Vec<(f64, bool)> = Vec::new();
        for x in xs.iter() {
            let (ts, end) = (
                x["ts"].as_f64().unwrap(),
                x["ts"].as_f64().unwrap() + x["dur"].as_f64().unwrap(),
            );
            let kernel = x["cat"] == "kernel";
            while open.last().is_some_and(|(e, _)| *e <= ts) {
                open.pop();
            }
            if let Some((parent_end, parent_kernel)) = open.last() {
                assert!(
                    !kernel && !parent_kernel && end <= *parent_end,
                    "overlap on {lane:?}: {x}"
                );
            }
            open.push((end, kernel));
        }
    }
    lanes.into_values().flatten().cloned().collect()
}

fn check_with_script(path: &std::path::Path, kernels: usize) {
    if !python_has("json") {
        crate::support::record_skip(
            &crate::support::this_test(),
            "scripts/check-chrome.py (no python3)",
        );
        return;
    }
    let output = std::process::Command::new("python3")
        .arg(script("check-chrome.py"))
        .arg(path)
        .args(["--kernels", &kernels.to_string()])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn ncu_run_is_laid_out_sequentially_on_its_stream_in_microseconds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    polyprof()
        .arg("report")
        .arg(fixture("runs/h200-baseline"))
        .args(["--format", "chrome", "-o"])
        .arg(&path)
        .assert()
        .success();
    let trace: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut xs = check_rules(&trace);
    // The run's process step is a CPU event too; this test is about the kernel lane.
    xs.retain(|x| x["args"]["launch_id"].is_u64());
    xs.sort_by(|a, b| {
        a["args"]["launch_id"]
            .as_u64()
            .cmp(&b["args"]["launch_id"].as_u64())
    });
    let names: Vec<&str> = xs.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "vector_add",
            "matmul_naive",
            "matmul_tiled<32>",
            "reduce_sum"
        ]
    );
    // 58,784 ns = 58.784 µs, and the next kernel starts where it ended.
    assert_eq!(xs[0]["ts"], 0.0);
    assert_eq!(xs[0]["dur"], 58.784);
    assert_eq!(xs[1]["ts"], 58.784);
    assert_eq!(
        xs[3]["ts"].as_f64().unwrap() + xs[3]["dur"].as_f64().unwrap(),
        782.208
    );
    assert_eq!(xs[0]["pid"], 1579);
    assert_eq!(xs[0]["args"]["metrics"]["bytes"], 189_068_288.0);
    assert!(
        trace["otherData"]["kernel_timing"]
            .as_str()
            .unwrap()
            .starts_with("sequential")
    );
    let labels = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "process_labels")
        .unwrap();
    assert!(
        labels["args"]["labels"]
            .as_str()
            .unwrap()
            .contains("back to back")
    );
    check_with_script(&path, 4);
}

#[test]
fn session_threads_and_streams_get_their_own_lanes() {
    let session = Session::start("chrome").unwrap();
    {
        let _main = scope("main", &[]);
        let _inner = scope("inner", &[]);
        // Two streams whose kernels overlap in time: separate lanes, no overlap within one.
        for (stream, start) in [("1", 0.0), ("2", 500.0), ("1", 1_000.0)] {
            record_kernel(|| KernelLaunch {
                name: format!("k{stream}"),
                stream: Some(stream.into()),
                gpu_start_ns: Some(10_000.0 + start),
                gpu_time_ns: Some(900.0),
                ..Default::default()
            });
        }
        std::thread::scope(|s| {
            s.spawn(|| {
                let _worker = scope("worker", &[]);
            });
        });
    }
    let report = Report::from_profile(session.finish(), None);
    let bytes = export::render(&report, Format::Chrome).unwrap();
    let trace: Value = serde_json::from_slice(&bytes).unwrap();
    let xs = check_rules(&trace);
    assert_eq!(xs.len(), 6);
    let lanes: BTreeSet<u64> = xs.iter().map(|x| x["tid"].as_u64().unwrap()).collect();
    // Main thread, worker thread, stream 1, stream 2.
    assert_eq!(lanes.len(), 4);
    let first = xs.iter().find(|x| x["name"] == "k1").unwrap();
    assert_eq!(first["ts"], 0.0);
    assert_eq!(
        first["args"]["call_stack"],
        serde_json::json!(["main", "inner", "k1"])
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.trace.json");
    std::fs::write(&path, &bytes).unwrap();
    check_with_script(&path, 3);
}
