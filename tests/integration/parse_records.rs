//! What `polyprof parse` makes of real captures, for every vendor: per-launch records count one
//! launch each, and memory commands (copies, fills, barriers) are records of their own kind,
//! apart from the kernels, through reports and exports.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{assert_exit, fixture, polyprof};

/// `polyprof parse --json --profiler P FILES…`: the document, after checking the exit status.
fn parse_json(profiler: &str, files: &[PathBuf], code: i32) -> Value {
    let out = polyprof()
        .args(["parse", "--json", "--profiler", profiler])
        .args(files)
        .output()
        .unwrap();
    assert_exit(&out, code);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn array<'a>(doc: &'a Value, key: &str) -> &'a Vec<Value> {
    doc[key]
        .as_array()
        .unwrap_or_else(|| panic!("no `{key}` array in {doc:#}"))
}

fn assert_one_launch_each(doc: &Value, expected_records: usize) {
    let kernels = array(doc, "kernels");
    assert_eq!(kernels.len(), expected_records, "{doc:#}");
    for kernel in kernels {
        assert_eq!(kernel["calls"], 1, "{kernel:#}");
    }
}

#[test]
fn per_launch_records_of_every_parser_count_one_launch() {
    // rocprofv3's kernel trace (each dispatch) and counter collection (each counted dispatch):
    // they counted 0 launches.
    let trace = parse_json("rocprofv3", &[fixture("rocprofv3/kernel_trace.csv")], 0);
    assert_one_launch_each(&trace, 9);
    let counters = parse_json(
        "rocprofv3",
        &[fixture("rocprofv3/counter_collection.csv")],
        0,
    );
    assert!(!array(&counters, "kernels").is_empty());
    assert_one_launch_each(&counters, array(&counters, "kernels").len());
    // ncu (each launch), unitrace's device timeline and Chrome timeline, Metal's intervals.
    let ncu = parse_json("ncu", &[fixture("ncu-h200/raw_page.stdout")], 0);
    assert_one_launch_each(&ncu, 4);
    let timeline = parse_json(
        "unitrace",
        &[fixture("unitrace/dpc_gemm_device_timeline.txt")],
        0,
    );
    assert_one_launch_each(&timeline, 4);
    let chrome = parse_json(
        "unitrace",
        &[fixture("unitrace/synthetic_python.4242.json")],
        0,
    );
    assert_one_launch_each(&chrome, array(&chrome, "kernels").len());
    let metal = parse_json(
        "metal",
        &[
            fixture("metal/xctrace_synthetic_gpu_intervals.xml"),
            fixture("metal/xctrace_synthetic_toc.xml"),
        ],
        0,
    );
    for kernel in array(&metal, "kernels") {
        assert!(kernel["calls"].as_u64() >= Some(1), "{kernel:#}");
    }
}

/// `polyprof parse -o DIR/run.json` of `files`, then `polyprof report -f FORMAT`.
fn report(dir: &Path, profiler: &str, files: &[PathBuf], format: &str) -> String {
    let run = dir.join("run.json");
    if !run.exists() {
        let out = polyprof()
            .args(["parse", "--profiler", profiler, "-o"])
            .arg(&run)
            .args(files)
            .output()
            .unwrap();
        assert_exit(&out, 0);
    }
    let out = polyprof()
        .args(["report", "-f", format])
        .arg(&run)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn amd_reports_count_the_launches_of_a_kernel_trace() {
    let dir = tempfile::tempdir().unwrap();
    let files = [fixture("rocprofv3/kernel_trace.csv")];
    let table = report(dir.path(), "rocprofv3", &files, "table");
    assert!(table.contains("9 records, 9 launches"), "{table}");
    // Proton's count of each kernel node is its launches (it was 0).
    let proton: Value =
        serde_json::from_str(&report(dir.path(), "rocprofv3", &files, "proton")).unwrap();
    let mut counts = Vec::new();
    let mut nodes = vec![&proton[0]];
    while let Some(node) = nodes.pop() {
        if node["frame"]["type"] == "kernel" {
            counts.push(node["metrics"]["count"].as_u64().unwrap());
        }
        nodes.extend(node["children"].as_array().into_iter().flatten());
    }
    assert_eq!(counts.iter().sum::<u64>(), 9, "{counts:?}");
    assert!(counts.iter().all(|c| *c > 0), "{counts:?}");
}

fn kinds(records: &[Value]) -> Vec<&str> {
    records
        .iter()
        .map(|r| r["kind"].as_str().unwrap_or("kernel"))
        .collect()
}

#[test]
fn intel_memory_commands_are_their_own_records_not_kernels() {
    // The pti-gpu GEMM sample's device summary: one kernel, copies both ways.
    let summary = parse_json(
        "unitrace",
        &[fixture("unitrace/dpc_gemm_device_timing.txt")],
        0,
    );
    assert_eq!(array(&summary, "kernels").len(), 1);
    assert_eq!(kinds(array(&summary, "kernels")), ["kernel"]);
    let commands = array(&summary, "memory_commands");
    let rows: Vec<(&str, u64, f64)> = commands
        .iter()
        .map(|c| {
            (
                c["short_name"].as_str().unwrap(),
                c["calls"].as_u64().unwrap(),
                c["duration_ns"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("zeCommandListAppendMemoryCopy(M2D)", 12, 5238880.0),
            ("zeCommandListAppendMemoryCopy(D2M)", 4, 2633520.0)
        ]
    );
    assert_eq!(kinds(commands), ["memory_copy", "memory_copy"]);

    // The fp16 GEMM with its metrics: copies and a fill, sizes as the `bytes` metric, per
    // kernel metrics untouched.
    let fp16 = parse_json(
        "unitrace",
        &[fixture("unitrace/gemm_fp16_bytes.1799860")],
        0,
    );
    let kernels = array(&fp16, "kernels");
    assert!(
        kernels
            .iter()
            .all(|k| !k["name"].as_str().unwrap().starts_with("zeCommandList"))
    );
    let commands = array(&fp16, "memory_commands");
    assert_eq!(commands.len(), 5, "{commands:#?}");
    assert!(kinds(commands).contains(&"memory_fill"));
    let fill = commands
        .iter()
        .find(|c| c["kind"] == "memory_fill")
        .unwrap();
    assert_eq!(fill["metrics"]["bytes"]["value"], 7340032.0);

    // The text device timeline: one record per command, with its start.
    let timeline = parse_json(
        "unitrace",
        &[fixture("unitrace/dpc_gemm_device_timeline.txt")],
        0,
    );
    let commands = array(&timeline, "memory_commands");
    assert_eq!(commands.len(), 16);
    assert!(commands.iter().all(|c| c["start_ns"].is_number()));
    assert!(commands.iter().all(|c| c["calls"] == 1));
}

#[test]
fn amd_copies_are_memory_command_records_beside_the_trace() {
    let doc = parse_json(
        "rocprofv3",
        &[
            fixture("rocprofv3/kernel_trace.csv"),
            fixture("rocprofv3/memory_copy_trace.csv"),
        ],
        0,
    );
    assert_eq!(array(&doc, "kernels").len(), 9);
    let copies = array(&doc, "memory_commands");
    assert_eq!(copies.len(), 4);
    assert_eq!(kinds(copies), ["memory_copy"; 4]);
    assert_eq!(copies[0]["name"], "MEMORY_COPY_HOST_TO_DEVICE");
    assert_eq!(
        copies[0]["duration_ns"],
        (1057963336564212u64 - 1057963336487172u64) as f64
    );
    assert_eq!(copies[0]["calls"], 1);
}

#[test]
fn reports_show_memory_commands_apart_from_kernels_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let files = [fixture("unitrace/gemm_fp16_bytes.1799860")];
    let table = report(dir.path(), "unitrace", &files, "table");
    // Kernels are counted as before; the copies and the fill have their own section with their
    // share of the device time (58 % here).
    assert!(table.contains("kernels  3 records, 3 launches"), "{table}");
    assert!(
        table.contains("memory commands  5 records, 7 commands"),
        "{table}"
    );
    assert!(table.contains("of device time with the kernels"), "{table}");
    // Three 128 MB copies and one of 4 bytes: the sizes of every call.
    let m2d = table
        .lines()
        .find(|l| l.contains("zeCommandListAppendMemoryCopy(M2D)"))
        .unwrap();
    assert!(m2d.contains("384.0 MB"), "{m2d}");
    let kernel_table = &table[..table.find("memory commands  ").unwrap()];
    assert!(!kernel_table.contains("zeCommandList"), "{table}");

    let json: Value =
        serde_json::from_str(&report(dir.path(), "unitrace", &files, "json")).unwrap();
    assert_eq!(array(&json, "kernels").len(), 3);
    assert_eq!(array(&json, "memory_commands").len(), 5);

    let csv = report(dir.path(), "unitrace", &files, "csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let kind = header.iter().position(|h| h == "kind").unwrap();
    let kinds: Vec<String> = reader
        .records()
        .map(|r| r.unwrap()[kind].to_string())
        .collect();
    assert_eq!(kinds.iter().filter(|k| *k == "kernel").count(), 3);
    assert_eq!(kinds.iter().filter(|k| *k == "memory_copy").count(), 4);
    assert_eq!(kinds.iter().filter(|k| *k == "memory_fill").count(), 1);

    // Kernel trees (Hatchet, Proton) hold kernels only.
    for format in ["hatchet", "proton"] {
        let text = report(dir.path(), "unitrace", &files, format);
        assert!(!text.contains("zeCommandList"), "{format}: {text}");
    }
}

#[test]
fn chrome_traces_draw_memory_commands_on_their_own_lane() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        fixture("rocprofv3/kernel_trace.csv"),
        fixture("rocprofv3/memory_copy_trace.csv"),
    ];
    let trace: Value =
        serde_json::from_str(&report(dir.path(), "rocprofv3", &files, "chrome")).unwrap();
    let events = array(&trace, "traceEvents");
    let lanes: Vec<(&Value, &Value, &str)> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (&e["pid"], &e["tid"], e["args"]["name"].as_str().unwrap()))
        .collect();
    let (pid, tid, _) = lanes
        .iter()
        .find(|(_, _, name)| name.ends_with("memory commands"))
        .unwrap_or_else(|| panic!("no memory lane in {lanes:?}"));
    let copies: Vec<&Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "memory_copy")
        .collect();
    assert_eq!(copies.len(), 4);
    assert!(
        copies
            .iter()
            .all(|c| &c["pid"] == *pid && &c["tid"] == *tid)
    );
    let kernels = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "kernel")
        .count();
    assert_eq!(kernels, 9);
    // One clock: every event starts at or after the first GPU event.
    assert!(
        events
            .iter()
            .filter(|e| e["ph"] == "X")
            .all(|e| e["ts"].as_f64().unwrap() >= 0.0)
    );
}
