//! `polyprof audit DIR` on committed evidence (tests/fixtures/eval/*/evidence.json, written by
//! hand from H200-like figures): an honest candidate passes (exit 0), each hostile one is
//! caught by the finding that names its trick (exit 1), unreadable evidence exits 2; the
//! verdict.json written beside the evidence is the one printed with `--json`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{assert_exit, fixture, polyprof};

/// A copy of fixture eval `name` in a fresh directory (the audit writes verdict.json there).
fn eval_dir(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::create_dir(&path).unwrap();
    std::fs::copy(
        fixture(&format!("eval/{name}/evidence.json")),
        path.join("evidence.json"),
    )
    .unwrap();
    (dir, path)
}

fn audit(dir: &Path, json: bool) -> std::process::Output {
    let mut command = polyprof();
    command.arg("audit").arg(dir);
    if json {
        command.arg("--json");
    }
    command.output().unwrap()
}

fn written_verdict(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("verdict.json")).unwrap()).unwrap()
}

fn finding_kinds(verdict: &Value) -> Vec<String> {
    verdict["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_honest_candidate_passes() {
    let (_keep, dir) = eval_dir("honest");
    let out = audit(&dir, false);
    assert_exit(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The capture predates the sandbox: its evidence records none, and the headline says so.
    assert!(
        stdout.starts_with("PASSED: correct, no finding (candidate NOT CONFINED)\n"),
        "{stdout}"
    );
    assert!(stdout.contains("speedup      1.21×"), "{stdout}");
    let verdict = written_verdict(&dir);
    assert_eq!(verdict["passed"], true);
    assert_eq!(verdict["status"], "correct");
    assert_eq!(verdict["correctness"]["compared"], 10);
    assert_eq!(verdict["witness"]["coverage"], 1.0);
    assert_eq!(verdict["timing"]["speedup"]["method"], "hodges_lehmann_log");
    // Every check ran but the two that need the work pass, which this eval did not take, and
    // the sandbox's (the capture records none) and the pool's: the CUDA timing path (and this
    // capture, made before pools) times one input set, so its draws were not planned. This
    // capture predates the traced scored pass: the timeline's two checks say so, and are not
    // called for (its witness pass is).
    let skipped: Vec<&str> = verdict["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ran"] != true)
        .filter_map(|c| c["check"].as_str())
        .collect();
    assert_eq!(
        skipped,
        [
            "sandbox",
            "fresh_inputs",
            "gpu_timeline",
            "work_floor",
            "work_matches_scored",
            "precision"
        ]
    );
    assert!(verdict["missing_checks"].is_null());
}

#[test]
fn json_output_is_the_verdict_written() {
    let (_keep, dir) = eval_dir("side-stream");
    let out = audit(&dir, true);
    assert_exit(&out, 1);
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, written_verdict(&dir));
}

#[test]
fn work_on_a_side_stream_is_caught_by_the_witness() {
    let (_keep, dir) = eval_dir("side-stream");
    assert_exit(&audit(&dir, false), 1);
    let verdict = written_verdict(&dir);
    assert_eq!(verdict["status"], "correct");
    assert_eq!(verdict["passed"], false);
    assert_eq!(
        finding_kinds(&verdict),
        [
            "reported_time_below_witness",
            "suspicious_speedup",
            "above_roofline"
        ]
    );
    let below = &verdict["findings"][0];
    assert_eq!(below["check"], "witness_time");
    assert!(below["measured"].as_f64().unwrap() < 0.1, "{below}");
    assert_eq!(below["limit"], 0.5);
}

#[test]
fn work_on_a_background_thread_is_caught_outside_the_calls() {
    let (_keep, dir) = eval_dir("background-thread");
    assert_exit(&audit(&dir, false), 1);
    let verdict = written_verdict(&dir);
    assert_eq!(
        finding_kinds(&verdict),
        [
            "kernels_outside_calls",
            "decoy_kernels",
            "suspicious_speedup",
            "above_roofline"
        ]
    );
    let outside = &verdict["findings"][0];
    assert_eq!(outside["measured"], 3.0);
    assert_eq!(outside["evidence"]["names"][0], "layernorm_fwd_kernel");
    assert_eq!(verdict["witness"]["launches_outside_calls"], 3);
}

#[test]
fn stale_memory_is_incorrect_and_unwritten() {
    let (_keep, dir) = eval_dir("stale-output");
    let out = audit(&dir, false);
    assert_exit(&out, 1);
    let verdict = written_verdict(&dir);
    assert_eq!(verdict["status"], "incorrect");
    assert_eq!(
        finding_kinds(&verdict),
        [
            "incorrect_output",
            "incorrect_output",
            "incorrect_output",
            "unwritten_output",
            // The poison it handed back is the same bytes whatever the inputs.
            "output_independent_of_inputs"
        ]
    );
    // No timing was recorded: the timing checks say so rather than pass.
    let timing_check = verdict["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "suspicious_speedup")
        .unwrap();
    assert_eq!(timing_check["ran"], false);
    assert_eq!(timing_check["why_not"], "no timing block was recorded");
}

#[test]
fn a_crashed_eval_is_failed_with_its_failure() {
    let (_keep, dir) = eval_dir("crashed");
    let out = audit(&dir, false);
    assert_exit(&out, 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("device_fault during correctness"),
        "{stdout}"
    );
    let verdict = written_verdict(&dir);
    assert_eq!(verdict["status"], "failed");
    assert_eq!(verdict["failure"]["log"], "candidate.000/stderr.log");
}

#[test]
fn unreadable_evidence_exits_2_and_writes_nothing() {
    let (_keep, dir) = eval_dir("newer-version");
    let out = audit(&dir, false);
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("schema version 2, newer than the 1"),
        "{stderr}"
    );
    assert!(!dir.join("verdict.json").exists());

    let empty = tempfile::tempdir().unwrap();
    let out = audit(empty.path(), false);
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("evidence.json"), "{stderr}");

    std::fs::write(empty.path().join("evidence.json"), "{\"schema_version\": 1").unwrap();
    assert_exit(&audit(empty.path(), false), 2);
}

/// The honest layernorm's evidence (fp32 16384×4096 in and out) with a work pass whose calls each
/// ran the H200's captured `vector_add` (tests/fixtures/eval-work): 134 MB read where the input
/// holds 268 MB, as a kernel that processed half its input would.
fn half_the_work(calibration: Option<Value>) -> (tempfile::TempDir, PathBuf) {
    let (keep, dir) = eval_dir("honest");
    let path = dir.join("evidence.json");
    let mut evidence: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let captured: Vec<Value> =
        serde_json::from_slice(&std::fs::read(fixture("eval-work/kernels.launches.json")).unwrap())
            .unwrap();
    let launches: Vec<Value> = [7, 8, 9]
        .iter()
        .map(|call| {
            let mut launch = captured[0].clone();
            launch["launch_id"] = serde_json::json!(call);
            launch["ranges"] = serde_json::json!([format!("polyprof/call/{call}")]);
            launch["thread_id"] = launch["process_id"].clone();
            launch
        })
        .collect();
    evidence["settings"]["work_pass"] = Value::Bool(true);
    evidence["work"] = serde_json::json!({
        "profiler": "ncu",
        "run_dir": "work.000",
        "cache_control": "all",
        "launches": launches,
    });
    if let Some(calibration) = calibration {
        evidence["calibration"] = calibration;
    }
    std::fs::write(&path, serde_json::to_vec(&evidence).unwrap()).unwrap();
    (keep, dir)
}

#[test]
fn a_kernel_that_read_half_its_input_did_too_little_work() {
    let (_keep, dir) = half_the_work(None);
    let out = audit(&dir, false);
    assert_exit(&out, 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("finding      too_little_work: call 7 read 134.2 MB from DRAM, 50 % of the 268.4 MB its inputs hold"),
        "{stdout}"
    );
    let verdict = written_verdict(&dir);
    assert_eq!(verdict["status"], "correct");
    let kinds = finding_kinds(&verdict);
    assert!(kinds.iter().all(|k| k == "too_little_work"), "{kinds:?}");
    assert_eq!(
        verdict["findings"][0]["evidence"]["calibration"],
        "uncalibrated"
    );
    assert!(verdict.get("calibration").is_none());
}

#[test]
fn a_calibration_that_distrusts_the_read_counter_is_cited_and_judges_nothing_from_it() {
    let calibration = serde_json::json!({
        "device_name": "NVIDIA H200",
        "tool": "ncu 2025.3.1.0",
        "created_unix_s": 1_796_000_000u64,
        "path": "calibration/h200.json",
        "checks": [
            {"kernel": "copy", "quantity": "dram_bytes_read", "expected": 1e9, "measured": 1.2e9},
            {"kernel": "copy", "quantity": "dram_bytes_write", "expected": 1e9, "measured": 1.2e9}
        ]
    });
    let (_keep, dir) = half_the_work(Some(calibration));
    let out = audit(&dir, false);
    assert_exit(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "\n  calibration  NVIDIA H200, ncu 2025.3.1.0, created 2026-11-30 00:53 UTC, calibration/h200.json\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("not checked  work_floor: reads: the calibration (NVIDIA H200, ncu 2025.3.1.0) marks the dram_bytes_read counter untrusted"),
        "{stdout}"
    );
    let verdict = written_verdict(&dir);
    assert_eq!(verdict["calibration"]["path"], "calibration/h200.json");
}
