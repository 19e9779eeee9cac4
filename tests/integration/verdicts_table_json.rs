//! One verdict in every view: the table's Bound cell of a kernel row is the verdict the JSON
//! report gives its launches (`RooflinePoint::bound_label`), on real H200 runs: the saved
//! baseline (speed of light, no pipe loads), the tensor capture (tensor FLOPs and clocks) and
//! the pipe-load captures (the minimal preset: no FLOPs, pipe loads).

use std::collections::BTreeMap;
use std::path::Path;

use polyprof::results::roofline::RooflinePoint;

use crate::support::ncu::parsed_run_dir;
use crate::support::{assert_exit, fixture, polyprof};

fn report(run_dir: &Path, args: &[&str]) -> String {
    let out = polyprof()
        .arg("report")
        .args(args)
        .arg(run_dir)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    String::from_utf8(out.stdout).unwrap()
}

/// Per short name, the JSON's verdict labels of its launches.
fn json_labels(run_dir: &Path) -> BTreeMap<String, Vec<String>> {
    let doc: serde_json::Value = serde_json::from_str(&report(run_dir, &["-f", "json"])).unwrap();
    let mut labels: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for kernel in doc["kernels"].as_array().unwrap() {
        let point: RooflinePoint = serde_json::from_value(kernel["roofline"].clone()).unwrap();
        labels
            .entry(kernel["short_name"].as_str().unwrap().to_string())
            .or_default()
            .push(point.bound_label());
    }
    labels
}

/// Per row of the full-width table, its name and Bound cell.
fn table_bounds(run_dir: &Path) -> BTreeMap<String, String> {
    report(run_dir, &["--wide"])
        .lines()
        .filter(|l| l.starts_with('│') && !l.contains("Name"))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('│').split('┆').map(str::trim).collect();
            (cells[0].to_string(), cells[cells.len() - 1].to_string())
        })
        .collect()
}

#[test]
fn the_table_shows_the_verdict_the_json_gives_each_launch() {
    let dir = tempfile::tempdir().unwrap();
    let runs = [
        fixture("runs/h200-baseline"),
        parsed_run_dir(dir.path(), "tensor", "ncu-h200-tensor/mm_tensor.csv"),
        parsed_run_dir(dir.path(), "app", "ncu-h200-pipes/values_app.csv"),
        parsed_run_dir(dir.path(), "mix", "ncu-h200-pipes/values_mix.csv"),
    ];
    let mut compared = 0;
    for run_dir in &runs {
        let table = table_bounds(run_dir);
        for (name, labels) in json_labels(run_dir) {
            let cell = table
                .get(&name)
                .unwrap_or_else(|| panic!("{}: no row {name} in {table:?}", run_dir.display()));
            if labels.iter().all(|l| l == &labels[0]) {
                assert_eq!(cell, &labels[0], "{}: {name}", run_dir.display());
            } else {
                // Launches that disagree: one of their verdicts, and how many share it.
                assert!(
                    labels.iter().any(|l| cell.starts_with(&format!("{l}; "))),
                    "{}: {name}: {cell} vs {labels:?}",
                    run_dir.display()
                );
            }
            compared += 1;
        }
    }
    assert!(compared >= 20, "{compared}");
}

/// The case of the issue: on the saved H200 baseline the table called matmul_naive
/// latency-bound from FLOPs and bytes alone while the JSON, with the SM speed of light, calls
/// it compute-bound.
#[test]
fn the_baseline_matmul_reads_alike_in_table_and_json() {
    let run_dir = fixture("runs/h200-baseline");
    let labels = json_labels(&run_dir);
    let table = table_bounds(&run_dir);
    assert_eq!(labels["matmul_naive"], ["compute · SM 62 %"]);
    assert_eq!(table["matmul_naive"], "compute · SM 62 %");
}

/// Launches of one name with different verdicts: the row says so.
#[test]
fn a_row_whose_launches_disagree_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = parsed_run_dir(dir.path(), "mix", "ncu-h200-pipes/values_mix.csv");
    // Give the two matmul launches one name: one tensor-pipe bound, one issue-bound (SIMT).
    let path = run_dir.join("run.json");
    let mut run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for kernel in run["kernels"].as_array_mut().unwrap() {
        let short = kernel["short_name"].as_str().unwrap().to_string();
        if short.starts_with("cutlass::Kernel2") || short.starts_with("nvjet_sm90_tst") {
            kernel["short_name"] = "gemm".into();
            kernel["name"] = "gemm".into();
        }
    }
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
    let table = table_bounds(&run_dir);
    // The SIMT launch has more GPU time (344.8 us against 177.2 us).
    let cell = &table["gemm"];
    assert!(
        cell.starts_with("compute · issue ") && cell.ends_with(" %; 1 of 2"),
        "{cell}"
    );
    let text = report(&run_dir, &["--wide"]);
    assert!(text.contains("the row's launches disagree"), "{text}");
}
