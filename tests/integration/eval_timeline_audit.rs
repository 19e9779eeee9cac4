//! `polyprof audit` re-judges real traced evals (tests/fixtures/eval-timeline, an H100): the
//! records come from `scored-trace.json.gz` beside the evidence, and the verdict is the one the
//! eval wrote. A records file that changed after the eval is not judged.

use std::path::Path;

use serde_json::Value;

use crate::support::{fixture, polyprof};

/// A copy of fixture `name` (audit writes verdict.json into the folder it judges).
fn copy(name: &str, into: &Path) -> std::path::PathBuf {
    let from = fixture("eval-timeline").join(name);
    let to = into.join(name);
    std::fs::create_dir_all(&to).unwrap();
    for file in ["evidence.json", "verdict.json", "scored-trace.json.gz"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
    to
}

fn kinds(verdict: &Value) -> Vec<String> {
    let mut kinds: Vec<String> = verdict["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

fn audit(dir: &Path) -> (i32, Value) {
    let out = polyprof()
        .args(["audit", "--json"])
        .arg(dir)
        .output()
        .unwrap();
    let verdict = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), verdict)
}

#[test]
fn the_audit_gives_every_traced_eval_the_verdict_it_was_given() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, passed, expect) in [
        ("honest_matmul_cublas", true, ""),
        ("hack_pushed_timing", true, ""),
        ("honest_add_triton", true, ""),
        ("hack_wrapped_full", false, "work_in_harness_step"),
        ("hack_side_stream", false, "kernels_outside_calls"),
        ("hack_graph_fifth", false, "inconsistent_calls"),
        ("hack_profiler_stop", false, "different_under_profiler"),
        ("hack_phantom_call", false, "kernels_outside_calls"),
        // Honest, but CUPTI labelled part of its graph's marks with another graph's memsets.
        ("graph_marks_mislabelled", false, "timeline_marks_broken"),
    ] {
        let dir = copy(name, tmp.path());
        let written: Value =
            serde_json::from_slice(&std::fs::read(dir.join("verdict.json")).unwrap()).unwrap();
        let (code, verdict) = audit(&dir);
        assert_eq!(
            verdict["passed"],
            Value::Bool(passed),
            "{name}: {verdict:#}"
        );
        assert_eq!(code, if passed { 0 } else { 1 }, "{name}");
        assert_eq!(kinds(&verdict), kinds(&written), "{name}");
        assert_eq!(verdict["status"], written["status"], "{name}");
        let ran = |check: &str| {
            verdict["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["check"] == check && c["ran"] == Value::Bool(true))
        };
        assert!(ran("gpu_timeline"), "{name}: the timeline was judged");
        if !expect.is_empty() {
            assert!(
                kinds(&verdict).iter().any(|k| k == expect),
                "{name}: {:?}",
                kinds(&verdict)
            );
        }
        assert!(verdict["timeline"]["calls"].as_u64().unwrap() > 0, "{name}");
    }
}

#[test]
fn records_that_changed_after_the_eval_are_not_judged_and_fail_passed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy("honest_matmul_cublas", tmp.path());
    let path = dir.join("scored-trace.json.gz");
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let (code, verdict) = audit(&dir);
    assert_eq!(code, 1);
    assert_eq!(verdict["passed"], Value::Bool(false));
    let missing = verdict["missing_checks"].as_array().unwrap();
    assert!(
        missing
            .iter()
            .any(|m| m.as_str().unwrap().contains("changed after the eval")),
        "{missing:?}"
    );
    // Gone altogether: the same, with why.
    std::fs::remove_file(&path).unwrap();
    let (code, verdict) = audit(&dir);
    assert_eq!(code, 1);
    let missing = verdict["missing_checks"].to_string();
    assert!(
        missing.contains("scored-trace.json.gz: cannot read it"),
        "{missing}"
    );
}
