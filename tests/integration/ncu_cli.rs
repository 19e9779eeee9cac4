//! `polyprof parse` and `polyprof occupancy` driven through the real binary.

use crate::support::fixture;
use assert_cmd::Command;

fn polyprof() -> Command {
    Command::cargo_bin("polyprof").unwrap()
}

#[test]
fn parse_json_of_two_processes() {
    let output = polyprof()
        .args(["parse", "--profiler", "ncu", "--json"])
        .arg(fixture("ncu-h200/pytest_xdist_two_processes.stdout"))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 21);
    assert_eq!(kernels[18]["process_id"], 2752);
    assert_eq!(kernels[20]["duration_ns"], 342_944.0);
    assert_eq!(doc["diagnostics"][0]["kind"], "unlocked_clocks");
}

#[test]
fn parse_table_with_selected_metrics_and_merged_files() {
    let output = polyprof()
        .args(["parse", "--metrics", "launch__occupancy_limit_registers"])
        .arg(fixture("ncu-h200/raw_page.stdout"))
        .arg(fixture("ncu-h200/import_session_page.stdout"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(
        table.contains("matmul_tiled<32>") && table.contains("59.74"),
        "{table}"
    );
    assert!(table.contains("launch__occupancy_limit_registers") && table.contains("2 block"));
}

#[test]
fn parse_exit_codes() {
    // ncu reported an error: parsed, exit 1, the error on stderr.
    let output = polyprof()
        .arg("parse")
        .arg(fixture("ncu-h200/missing_binary.stdout"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("missing_binary"));
    // A requested metric absent from the output is an error naming it.
    let output = polyprof()
        .args(["parse", "--json", "--metrics", "dram__bytes_nope.sum"])
        .arg(fixture("ncu-h200/raw_page.stdout"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("dram__bytes_nope.sum"));
    // Unreadable file: usage error naming it.
    let output = polyprof()
        .args(["parse", "/no/such/ncu.log"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("/no/such/ncu.log"));
}

#[test]
fn occupancy_json_matches_ncu_for_matmul_tiled() {
    let output = polyprof()
        .args([
            "occupancy",
            "--cc",
            "9.0",
            "--regs",
            "32",
            "--shared",
            "8192",
            "--block",
            "1024",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    // ncu on the H200: registers 2, warps 2, shared 3, blocks 32; 100 % theoretical.
    assert_eq!(doc["limit_registers"], 2);
    assert_eq!(doc["limit_warps"], 2);
    assert_eq!(doc["limit_shared_mem"], 3);
    assert_eq!(doc["limit_blocks"], 32);
    assert_eq!(doc["occupancy_pct"], 100.0);
    let bad = polyprof()
        .args([
            "occupancy",
            "--cc",
            "11.0",
            "--regs",
            "32",
            "--block",
            "128",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let text = String::from_utf8_lossy(&bad.stderr);
    assert!(
        text.contains("7.0") && text.contains("10.0, 12.0"),
        "{text}"
    );
}

fn occupancy_json(cc: &str, regs: &str, block: &str) -> serde_json::Value {
    let output = polyprof()
        .args([
            "occupancy",
            "--cc",
            cc,
            "--regs",
            regs,
            "--block",
            block,
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

/// ncu's Occupancy section of one CC 12.0 (RTX 5090) capture: metric name → value.
fn cc120_occupancy(kernel_dir: &str) -> std::collections::BTreeMap<String, f64> {
    let path = fixture(&format!("ncu-cc120/{kernel_dir}/ncu.section_Occupancy.csv"));
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .unwrap();
    let mut values = std::collections::BTreeMap::new();
    for row in reader.records() {
        let row = row.unwrap();
        if let (Some(name), Some(value)) = (row.get(12), row.get(14))
            && let Ok(value) = value.replace(',', "").parse::<f64>()
            && !name.is_empty()
        {
            values.insert(name.to_string(), value);
        }
    }
    values
}

#[test]
fn occupancy_at_cc_12_0_agrees_with_ncu_on_an_rtx_5090() {
    // Both captures launch 128-thread blocks (4 warps).
    let ours = occupancy_json("12.0", "32", "128");
    let max_warps =
        ours["active_warps"].as_f64().unwrap() * 100.0 / ours["occupancy_pct"].as_f64().unwrap();
    assert_eq!(max_warps, 48.0);
    for kernel_dir in ["kernel_0001", "kernel_0009"] {
        let ncu = cc120_occupancy(kernel_dir);
        assert_eq!(ours["limit_blocks"].as_f64(), Some(ncu["Block Limit SM"]));
        assert_eq!(ours["limit_warps"].as_f64(), Some(ncu["Block Limit Warps"]));
        // With ncu's register and shared-memory limits, our SM limits give its occupancy.
        let blocks = [
            ncu["Block Limit Registers"],
            ncu["Block Limit Shared Mem"],
            ours["limit_warps"].as_f64().unwrap(),
            ours["limit_blocks"].as_f64().unwrap(),
        ]
        .into_iter()
        .fold(f64::INFINITY, f64::min);
        let pct = blocks * 4.0 * 100.0 / max_warps;
        let expected = ncu["Theoretical Occupancy"];
        assert!(
            (pct - expected).abs() < 0.01,
            "{kernel_dir}: {pct} vs ncu's {expected}"
        );
    }
    // CC 10.0 (B200) has CC 9.0's SM limits: matmul_tiled's launch limits as on the H200.
    let b200 = occupancy_json("10.0", "32", "1024");
    let h200 = occupancy_json("9.0", "32", "1024");
    for key in [
        "limit_registers",
        "limit_warps",
        "limit_blocks",
        "occupancy_pct",
    ] {
        assert_eq!(b200[key], h200[key], "{key}");
    }
}
