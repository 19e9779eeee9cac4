//! `polyprof diff` through the real binary: exit 0 without regression, 1 with one beyond the
//! threshold, 2 on bad input; --json output.

use crate::support::{fixture, polyprof};

fn diff(args: &[&str]) -> std::process::Output {
    polyprof().arg("diff").args(args).output().unwrap()
}

fn path(name: &str) -> String {
    fixture(&format!("runs/{name}"))
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn identical_runs_pass() {
    let output = diff(&[&path("h200-baseline"), &path("h200-baseline")]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("0 regressed"), "{text}");
}

#[test]
fn a_slower_kernel_fails_the_gate() {
    let output = diff(&[&path("h200-baseline"), &path("h200-regressed")]);
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8_lossy(&output.stdout);
    let tiled = text
        .lines()
        .find(|l| l.contains("matmul_tiled<32>"))
        .unwrap();
    assert!(
        tiled.contains("+22.0 %") && tiled.contains("regressed"),
        "{tiled}"
    );
    assert!(text.contains("1 regressed"), "{text}");
}

#[test]
fn threshold_and_direction_matter() {
    // 22 % slower is within a 25 % threshold.
    let loose = diff(&[
        &path("h200-baseline"),
        &path("h200-regressed"),
        "--threshold",
        "25",
    ]);
    assert_eq!(loose.status.code(), Some(0));
    // B → A is an improvement, not a regression.
    let reverse = diff(&[&path("h200-regressed"), &path("h200-baseline")]);
    assert_eq!(reverse.status.code(), Some(0));
    // vector_add is 0.4 % (235 ns) slower: under the 0.5 µs floor it is noise even at a 0.1 %
    // threshold; with the floor at zero it counts too.
    let tight = diff(&[
        &path("h200-baseline"),
        &path("h200-regressed"),
        "--threshold",
        "0.1%",
        "--json",
    ]);
    assert_eq!(tight.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&tight.stdout).unwrap();
    assert_eq!(json["regressions"], 1);
    let vector_add = json["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["short_name"] == "vector_add")
        .unwrap();
    assert_eq!(vector_add["change"], "noise");
    let no_floor = diff(&[
        &path("h200-baseline"),
        &path("h200-regressed"),
        "--threshold",
        "0.1%",
        "--min-change",
        "0ns",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&no_floor.stdout).unwrap();
    assert_eq!(json["regressions"], 2);
    // --min-duration leaves out the µs-scale kernels: only the two matmuls are compared.
    let long_only = diff(&[
        &path("h200-baseline"),
        &path("h200-regressed"),
        "--min-duration",
        "100us",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&long_only.stdout).unwrap();
    assert_eq!(json["kernels"].as_array().unwrap().len(), 2);
    assert_eq!(json["filtered"], 2);
}

#[test]
fn json_lists_every_matched_kernel() {
    let output = diff(&[&path("h200-baseline"), &path("h200-regressed"), "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let kernels = json["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 4);
    let tiled = kernels
        .iter()
        .find(|k| k["short_name"] == "matmul_tiled<32>")
        .unwrap();
    assert_eq!(tiled["change"], "regressed");
    assert_eq!(tiled["a"]["gpu_time_ns"], 247_136.0);
    assert_eq!(tiled["b"]["gpu_time_ns"], 301_506.0);
    assert!(tiled["gflops_change_pct"].as_f64().unwrap() < -17.0);
    assert!(json["only_in_a"].as_array().unwrap().is_empty());
}

#[test]
fn unmatched_launches_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = polyprof::results::ProfileRun::read(&fixture("runs/h200-baseline")).unwrap();
    run.kernels.retain(|k| k.short_name != "reduce_sum");
    let mut extra = run.kernels[0].clone();
    extra.launch_id = 9;
    run.kernels.push(extra);
    run.write(dir.path()).unwrap();
    let output = diff(&[&path("h200-baseline"), dir.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("only in A: reduce_sum (1 launches"), "{text}");
    // A second vector_add launch of the same configuration joins the first: medians compared.
    let vector_add = text.lines().find(|l| l.contains("vector_add")).unwrap();
    assert!(vector_add.contains("┆   1 ┆   2 ┆"), "{vector_add}");
}

#[test]
fn bad_input_is_exit_2() {
    let missing = diff(&[&path("h200-baseline"), "/nonexistent/run"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/run"));

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.json"), b"\0\0\0").unwrap();
    let garbage = diff(&[dir.path().to_str().unwrap(), &path("h200-baseline")]);
    assert_eq!(garbage.status.code(), Some(2));

    // A run without kernel times cannot pass a gate against one with kernels by having
    // nothing to compare.
    let mut empty = polyprof::results::ProfileRun::read(&fixture("runs/h200-baseline")).unwrap();
    empty.kernels.clear();
    let empty_dir = tempfile::tempdir().unwrap();
    empty.write(empty_dir.path()).unwrap();
    let nothing = diff(&[&path("h200-baseline"), empty_dir.path().to_str().unwrap()]);
    assert_eq!(nothing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&nothing.stderr).contains("no kernel records"));
    // Two runs without kernels compare their steps and wall time instead.
    let both = diff(&[
        empty_dir.path().to_str().unwrap(),
        empty_dir.path().to_str().unwrap(),
    ]);
    assert_eq!(both.status.code(), Some(0));
    let text = String::from_utf8_lossy(&both.stdout);
    assert!(text.contains("wall 2.50 s → 2.50 s"), "{text}");
    assert!(text.contains("step "), "{text}");

    let bad_threshold = diff(&[
        &path("h200-baseline"),
        &path("h200-baseline"),
        "--threshold",
        "-3",
    ]);
    assert_eq!(bad_threshold.status.code(), Some(2));
}

/// A kernel whose median GPU time is zero or negative (a broken record) is refused: exit 2, and
/// the message names the kernel and the side, whichever side it is on.
#[test]
fn a_non_positive_median_is_refused_naming_kernel_and_side() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("runs/h200-baseline/run.json")).unwrap();
    let mut run: serde_json::Value = serde_json::from_str(&text).unwrap();
    for kernel in run["kernels"].as_array_mut().unwrap() {
        if kernel["short_name"] == "reduce_sum" {
            kernel["duration_ns"] = serde_json::json!(0.0);
        }
    }
    let broken = dir.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(broken.join("run.json"), run.to_string()).unwrap();
    let broken = broken.to_str().unwrap();
    for (args, side) in [
        ([path("h200-baseline"), broken.to_string()], "run B"),
        ([broken.to_string(), path("h200-baseline")], "run A"),
    ] {
        let output = diff(&[&args[0], &args[1]]);
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("`reduce_sum`") && stderr.contains(side) && stderr.contains("0 ns"),
            "{stderr}"
        );
        assert!(output.stdout.is_empty());
    }
}
