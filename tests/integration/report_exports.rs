//! `polyprof report --format json|csv`: the normalized records with roofline figures, written
//! to stdout or to a file with -o.

use crate::support::{fixture, polyprof};
use polyprof::results::export::csv::COLUMNS;

fn run_report(format: &str) -> Vec<u8> {
    let output = polyprof()
        .arg("report")
        .arg(fixture("runs/h200-baseline"))
        .args(["--format", format])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

#[test]
fn json_carries_records_roofline_and_run_summary() {
    let report: serde_json::Value = serde_json::from_slice(&run_report("json")).unwrap();
    assert_eq!(report["kind"], "polyprof.report");
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["run"]["succeeded"], true);
    assert_eq!(report["run"]["outcome"]["kind"], "exited");
    assert_eq!(report["peaks"]["name"], "H200");
    let kernels = report["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 4);
    let tiled = &kernels[2];
    assert_eq!(tiled["short_name"], "matmul_tiled<32>");
    assert_eq!(tiled["duration_ns"], 247_136.0);
    assert_eq!(tiled["flops"]["fp32"], 2_147_483_648.0);
    // 13 % of the FP32 peak but 71.65 % SM speed of light: the FLOPs are partial, so the SM
    // speed of light decides (the minimal preset does not measure L1/L2; see docs/verdicts.md).
    assert_eq!(tiled["roofline"]["bound"], "compute");
    assert_eq!(tiled["roofline"]["limiter"], "sm");
    assert_eq!(
        tiled["roofline"]["inputs"],
        serde_json::json!(["dram_bytes", "sm_throughput_pct"])
    );
    assert_eq!(
        tiled["call_path"],
        serde_json::json!(["app 1", "ncu.000", "app [1579]", "matmul_tiled<32>"])
    );
    let gflops = tiled["roofline"]["gflops_per_s"].as_f64().unwrap();
    assert!(
        (gflops - 2_147_483_648.0 / 247_136.0).abs() < 1e-6,
        "{gflops}"
    );
}

#[test]
fn csv_has_the_documented_columns_and_one_row_per_record() {
    let bytes = run_report("csv");
    let mut reader = csv::Reader::from_reader(bytes.as_slice());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header, COLUMNS);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 4);
    let column = |name: &str| COLUMNS.iter().position(|c| *c == name).unwrap();
    let reduce = &rows[3];
    assert_eq!(&reduce[column("short_name")], "reduce_sum");
    assert_eq!(&reduce[column("duration_ns")], "60448");
    assert_eq!(&reduce[column("dram_bytes")], "69331712");
    assert_eq!(&reduce[column("grid_x")], "32768");
    // SM speed of light 47.5 % against 23.9 % of DRAM bandwidth, but left of the ridge (0.6 %
    // of the FLOP peak): the SM moves data, the kernel is memory-bound by its DRAM share.
    assert_eq!(&reduce[column("bound")], "memory");
    assert_eq!(&reduce[column("limiter")], "dram");
    assert_eq!(&reduce[column("decided_by")], "DRAM 24 %");
    assert_eq!(&reduce[column("verdict_inputs")], "flops dram_bytes");
    assert_eq!(&reduce[column("device")], "NVIDIA H200");
    assert_eq!(&reduce[column("start_ns")], "");
    let gbps: f64 = reduce[column("dram_gb_per_s")].parse().unwrap();
    assert!((gbps - 69_331_712.0 / 60_448.0).abs() < 1e-9);
}

#[test]
fn output_file_is_written_and_stdout_stays_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.csv");
    let output = polyprof()
        .arg("report")
        .arg(fixture("runs/h200-baseline"))
        .args(["-f", "csv", "-o"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(output.stdout.is_empty());
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 5);
    // No temporary file is left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    let unwritable = polyprof()
        .arg("report")
        .arg(fixture("runs/h200-baseline"))
        .args(["-f", "json", "-o", "/nonexistent/dir/r.json"])
        .output()
        .unwrap();
    assert_eq!(unwritable.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unwritable.stderr).contains("/nonexistent/dir"));
}
