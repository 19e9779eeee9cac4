//! The xctrace export parser on the synthetic fixture built from the documented table layout
//! (tests/fixtures/metal/README.md says what is synthetic), and its failure modes.

use polyprof::Error;
use polyprof::profilers::metal::xctrace::{launched_pid, parse_export, read_tables};

const EXPORT: &[u8] = include_bytes!("../fixtures/metal/xctrace_synthetic_gpu_intervals.xml");
const TOC: &[u8] = include_bytes!("../fixtures/metal/xctrace_synthetic_toc.xml");

#[test]
fn target_pid_comes_from_the_toc_and_filters_intervals() {
    let pid = launched_pid(TOC).unwrap();
    assert_eq!(pid, Some(42));
    let trace = parse_export(EXPORT, pid).unwrap();
    assert_eq!(trace.intervals.len(), 3);
    // [1.000, 1.050] ∪ [1.030, 1.070] ∪ [2.000, 2.010] ms: 70 µs + 10 µs; the sum would be 100.
    assert_eq!(trace.busy_ns, 80_000);
    assert_eq!(trace.span_ns, 1_010_000);
    let first = &trace.intervals[0];
    assert_eq!(first.channel.as_deref(), Some("Compute"));
    assert_eq!(first.process.as_deref(), Some("bench (42)"));
    assert_eq!(first.cmdbuffer_id.as_deref(), Some("1"));
    // Values given once with an id are reused by `ref` in later rows.
    assert_eq!(trace.intervals[1].channel.as_deref(), Some("Compute"));
    assert_eq!(trace.intervals[2].label.as_deref(), Some("matmul & bias"));
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
}

#[test]
fn groups_by_label_and_command_buffer() {
    let trace = parse_export(EXPORT, Some(42)).unwrap();
    let labels: Vec<(&str, usize, u64, u64)> = trace
        .by_label
        .iter()
        .map(|g| (g.key.as_str(), g.count, g.total_ns, g.busy_ns))
        .collect();
    assert_eq!(
        labels,
        [
            ("Command Buffer 0:Compute Command 0", 1, 50_000, 50_000),
            ("matmul & bias", 2, 50_000, 50_000)
        ]
    );
    let cbs: Vec<(&str, usize, u64)> = trace
        .by_command_buffer
        .iter()
        .map(|g| (g.key.as_str(), g.count, g.busy_ns))
        .collect();
    assert_eq!(cbs, [("1", 2, 70_000), ("2", 1, 10_000)]);
}

#[test]
fn every_process_when_no_pid_and_nested_first_use_resolves() {
    let trace = parse_export(EXPORT, None).unwrap();
    assert_eq!(trace.intervals.len(), 4);
    // pid 77's process element first appears nested inside a formatted-label.
    assert_eq!(trace.intervals[2].pid, Some(77));
    assert_eq!(trace.busy_ns, 70_000 + 100_000 + 10_000);
}

#[test]
fn empty_capture_is_no_data_not_zero() {
    let err = parse_export(EXPORT, Some(5)).unwrap_err();
    assert!(matches!(err, Error::NoData { .. }), "{err}");
    assert!(err.to_string().contains("[42, 77]"), "{err}");

    let no_rows = br#"<trace-query-result><node><schema name="metal-gpu-intervals"><col><mnemonic>start</mnemonic></col><col><mnemonic>duration</mnemonic></col></schema></node></trace-query-result>"#;
    let err = parse_export(no_rows, None).unwrap_err();
    assert!(err.to_string().contains("no rows"), "{err}");

    let no_table = br#"<trace-query-result></trace-query-result>"#;
    assert!(matches!(
        parse_export(no_table, None),
        Err(Error::NoData { .. })
    ));
}

#[test]
fn only_requested_tables_are_kept() {
    let t = read_tables(EXPORT, |s| s == "time-info").unwrap();
    assert_eq!(t.tables.len(), 1);
    assert_eq!(t.tables[0].schema, "time-info");
    assert_eq!(t.tables[0].columns[1].name, "Mach Absolute Time Epoch");
    let all = read_tables(EXPORT, |_| true).unwrap();
    assert_eq!(all.tables.len(), 2);
    assert_eq!(all.tables[1].columns.len(), 18);
}

#[test]
fn truncated_and_garbage_exports() {
    // Cut inside the third GPU row: the two rows before it survive, with a warning.
    let text = std::str::from_utf8(EXPORT).unwrap();
    let cut = text
        .match_indices("</row>")
        .nth(2)
        .map(|(i, _)| i + 6)
        .unwrap()
        + 40;
    let trace = parse_export(&EXPORT[..cut], Some(42)).unwrap();
    assert_eq!(trace.intervals.len(), 2);
    assert!(
        trace.warnings.iter().any(|w| w.contains("cut off")),
        "{:?}",
        trace.warnings
    );
    let err = parse_export(b"\0\0\0<not xml", None).unwrap_err();
    assert!(
        matches!(err, Error::Parse { .. } | Error::NoData { .. }),
        "{err}"
    );
    let missing_cols = br#"<trace-query-result><node><schema name="metal-gpu-intervals"><col><mnemonic>x</mnemonic></col></schema><row><a>1</a></row></node></trace-query-result>"#;
    let err = parse_export(missing_cols, None).unwrap_err();
    assert!(err.to_string().contains("start/duration"), "{err}");
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/metal")
        .join(name)
}

/// `polyprof parse --json --profiler metal FILES…` through the real binary.
fn parse_cli(files: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let output = assert_cmd::Command::cargo_bin("polyprof")
        .unwrap()
        .args(["parse", "--json", "--profiler", "metal"])
        .args(files.iter().map(|f| fixture(f)))
        .output()
        .unwrap();
    (
        output.status.code(),
        serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn parse_cli_gives_one_record_per_encoder_of_the_launched_process() {
    let (code, doc, stderr) = parse_cli(&[
        "xctrace_synthetic_gpu_intervals.xml",
        "xctrace_synthetic_toc.xml",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let kernels = doc["kernels"].as_array().unwrap();
    // pid 42 only: three encoders (command buffer 1 encoders 1 and 2, command buffer 2 encoder 3).
    let rows: Vec<(&str, f64, f64, &str)> = kernels
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap(),
                k["start_ns"].as_f64().unwrap(),
                k["duration_ns"].as_f64().unwrap(),
                k["metrics"]["encoder_id"]["value"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "Command Buffer 0:Compute Command 0",
                1_000_000.0,
                50_000.0,
                "1"
            ),
            ("matmul & bias", 1_030_000.0, 40_000.0, "2"),
            ("matmul & bias", 2_000_000.0, 10_000.0, "3"),
        ]
    );
    for k in kernels {
        assert_eq!(k["profiler"], "metal");
        assert_eq!(k["process_id"], 42);
        assert_eq!(k["process_name"], "bench");
        assert_eq!(k["stream"], "Compute");
        assert_eq!(k["device"], "Apple M1");
    }
    assert_eq!(doc["session"]["gpu_busy_ns"], "80000");
    assert_eq!(doc["session"]["target_pid"], "42");
}

#[test]
fn parse_cli_without_toc_keeps_every_process_and_says_so() {
    let (code, doc, stderr) = parse_cli(&["xctrace_synthetic_gpu_intervals.xml"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(doc["kernels"].as_array().unwrap().len(), 4);
    assert!(
        doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["kind"] == "metal_no_target_pid"),
        "{doc}"
    );
}

#[test]
fn parse_cli_reports_an_empty_capture_as_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("trace.tables.xml");
    std::fs::write(
        &empty,
        r#"<trace-query-result><node><schema name="metal-gpu-intervals"><col><mnemonic>start</mnemonic></col><col><mnemonic>duration</mnemonic></col></schema></node></trace-query-result>"#,
    )
    .unwrap();
    let output = assert_cmd::Command::cargo_bin("polyprof")
        .unwrap()
        .args(["parse", "--json", "--profiler", "metal"])
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(doc["kernels"].as_array().unwrap().is_empty());
    let d = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "metal_no_gpu_work")
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(d["severity"], "error");
    assert!(d["message"].as_str().unwrap().contains("no rows"), "{d}");
}
