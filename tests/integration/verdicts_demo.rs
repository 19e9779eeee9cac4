//! `polyprof demo` without a GPU: the CPU workload's four kernels appear as scopes with GFLOP/s
//! and GB/s, and a bundled real H200 capture is replayed (labelled so) through parse → report →
//! export, with its tensor-core verdicts.

use crate::support::polyprof;

#[test]
fn demo_without_a_gpu_shows_cpu_rates_and_a_labelled_h200_replay() {
    let dir = tempfile::tempdir().unwrap();
    let output = polyprof()
        .args(["demo", "--profiler", "none", "--output-dir"])
        .arg(dir.path())
        .env("COLUMNS", "120")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let cpu_table = stdout.split("REPLAY").next().unwrap();
    assert!(
        cpu_table.contains("GFLOP/s") && cpu_table.contains("GB/s"),
        "{stdout}"
    );
    for kernel in [
        "vector_add",
        "matmul_naive",
        "matmul_tiled<32>",
        "reduce_sum",
    ] {
        let row = cpu_table
            .lines()
            .find(|l| l.contains(&format!(" {kernel} ")))
            .unwrap_or_else(|| panic!("no row {kernel}: {stdout}"));
        // The rate cells hold numbers, not "-".
        let cells: Vec<&str> = row.split('┆').map(str::trim).collect();
        let rates = &cells[cells.len() - 2..];
        assert!(
            rates
                .iter()
                .all(|c| c.trim_end_matches('│').trim().parse::<f64>().is_ok()),
            "{row}"
        );
    }
    assert!(
        stdout.contains("REPLAY of a real H200 capture (not measured here)"),
        "{stdout}"
    );
    assert!(stdout.contains("compute · tensor bf16"), "{stdout}");
    let replay = dir.path().join("h200-replay/run.json");
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(&replay).unwrap()).unwrap();
    assert_eq!(run["kernels"].as_array().unwrap().len(), 8);
    assert!(run["warnings"][0].as_str().unwrap().starts_with("REPLAY"));
    assert!(
        dir.path()
            .join("h200-replay/profile.hatchet.json")
            .is_file()
    );
    // The replay's document is one `report` reads.
    polyprof().arg("report").arg(&replay).assert().success();
}
