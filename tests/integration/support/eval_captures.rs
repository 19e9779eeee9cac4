//! The H200 eval captures of tests/fixtures/eval-h200 (README there), and the GPU corpus's
//! expectations (tests/eval/gpu/expected.json) checked against a verdict as
//! scripts/gpu_eval.py checks them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::fixture;

/// One captured eval: its name and the directory holding evidence.json and verdict.json.
pub struct Capture {
    pub name: String,
    pub dir: PathBuf,
    /// A corpus candidate (`hack_decoy`) rather than a KernelBench problem.
    pub corpus: bool,
}

/// The folders of `dir` that hold an evidence.json, sorted.
fn eval_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("evidence.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// Every capture: the 25 corpus candidates, the corpus run's KernelBench problem, and the five
/// of the KernelBench-only run (level1_9 appears in both runs, under different names here).
pub fn captures() -> Vec<Capture> {
    let root = fixture("eval-h200");
    let named = |dir: PathBuf, prefix: &str, corpus: bool| Capture {
        name: format!("{prefix}{}", dir.file_name().unwrap().to_string_lossy()),
        dir,
        corpus,
    };
    let mut all: Vec<Capture> = eval_dirs(&root.join("corpus"))
        .into_iter()
        .map(|d| named(d, "", true))
        .collect();
    all.extend(
        eval_dirs(&root.join("corpus/kb"))
            .into_iter()
            .map(|d| named(d, "kb/", false)),
    );
    all.extend(
        eval_dirs(&root.join("kb12/kb"))
            .into_iter()
            .map(|d| named(d, "kb12/", false)),
    );
    all
}

pub fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// tests/eval/gpu/expected.json's `candidates`, keyed by file name (`hack_decoy.py`).
pub fn expected_corpus() -> serde_json::Map<String, Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/eval/gpu/expected.json");
    match read_json(&path) {
        Value::Object(mut top) => match top.remove("candidates") {
            Some(Value::Object(candidates)) => candidates,
            other => panic!("expected.json: `candidates` is not an object: {other:?}"),
        },
        other => panic!("expected.json is not an object: {other}"),
    }
}

pub fn finding_kinds(verdict: &Value) -> Vec<String> {
    verdict["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

/// The failure's kind, `None` when the eval did not fail.
pub fn failure_kind(verdict: &Value) -> Option<String> {
    verdict["failure"]["kind"].as_str().map(str::to_string)
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().unwrap().to_string())
            .collect(),
        Value::Null => Vec::new(),
        other => panic!("expected.json: not a string or a list: {other}"),
    }
}

/// What differs between `verdict` and one `expect` of expected.json (empty: it matches), by
/// scripts/gpu_eval.py's `compare_one`: the status is one of those listed, the failure kind is
/// the one named, every listed finding appears, `exact` allows no other finding beyond
/// `allowed`, the speedup is at most `speedup_max`, and a kind in `mentions` has a finding whose
/// JSON contains the text.
pub fn differences(expect: &Value, verdict: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let status = verdict["status"].as_str().unwrap_or("?");
    if !strings(&expect["status"]).iter().any(|s| s == status) {
        problems.push(format!("status {status}, expected {}", expect["status"]));
    }
    let failure = failure_kind(verdict);
    let wanted_failure = expect["failure_kind"].as_str().map(str::to_string);
    if failure != wanted_failure {
        problems.push(format!("failure {failure:?}, expected {wanted_failure:?}"));
    }
    let kinds = finding_kinds(verdict);
    let named = strings(&expect["findings"]);
    for kind in &named {
        if !kinds.contains(kind) {
            problems.push(format!("missing {kind}"));
        }
    }
    if expect["exact"] == true {
        let allowed = strings(&expect["allowed"]);
        for kind in &kinds {
            if !named.contains(kind) && !allowed.contains(kind) {
                problems.push(format!("unexpected {kind}"));
            }
        }
    }
    if let Some(limit) = expect["speedup_max"].as_f64() {
        match verdict["timing"]["speedup"]["value"].as_f64() {
            None => problems.push("no speedup to check".into()),
            Some(speedup) if speedup > limit => {
                problems.push(format!("speedup {speedup:.2} > {limit}"));
            }
            Some(_) => {}
        }
    }
    if let Some(mentions) = expect["mentions"].as_object() {
        for (kind, text) in mentions {
            let text = text.as_str().unwrap();
            let found: Vec<&Value> = verdict["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["kind"] == kind.as_str())
                .collect();
            if !found.is_empty() && !found.iter().any(|f| f.to_string().contains(text)) {
                problems.push(format!("{kind} does not mention {text:?}"));
            }
        }
    }
    problems
}

/// Which of a candidate's acceptable outcomes `verdict` matches: `Ok(0)` the `expect` itself,
/// `Ok(n)` its `or_expect[n - 1]`; else the differences from `expect`.
pub fn matching_outcome(entry: &Value, verdict: &Value) -> Result<usize, Vec<String>> {
    let expect = &entry["expect"];
    let first = differences(expect, verdict);
    if first.is_empty() {
        return Ok(0);
    }
    let alternatives = expect["or_expect"].as_array().cloned().unwrap_or_default();
    alternatives
        .iter()
        .position(|alternative| differences(alternative, verdict).is_empty())
        .map(|n| n + 1)
        .ok_or(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verdict(status: &str, kinds: &[&str], speedup: f64) -> Value {
        json!({
            "status": status,
            "findings": kinds.iter().map(|k| json!({"kind": k, "message": "m"})).collect::<Vec<_>>(),
            "timing": {"speedup": {"value": speedup}},
        })
    }

    #[test]
    fn the_comparison_finds_each_kind_of_difference() {
        let expect = json!({"status": "correct", "findings": [], "failure_kind": null,
                            "exact": true, "allowed": ["suspicious_speedup"], "speedup_max": 1.5});
        assert!(differences(&expect, &verdict("correct", &["suspicious_speedup"], 1.0)).is_empty());
        assert_eq!(
            differences(&expect, &verdict("incorrect", &["incorrect_output"], 2.0)),
            [
                "status incorrect, expected \"correct\"",
                "unexpected incorrect_output",
                "speedup 2.00 > 1.5"
            ]
        );
        let entry = json!({"expect": {"status": "incorrect", "findings": ["incorrect_output"],
                           "failure_kind": null,
                           "or_expect": [{"status": "failed", "findings": [], "failure_kind": "bad_output"}]}});
        let failed = json!({"status": "failed", "findings": [], "failure": {"kind": "bad_output"}});
        assert_eq!(matching_outcome(&entry, &failed), Ok(1));
        assert_eq!(
            matching_outcome(&entry, &verdict("correct", &[], 1.0)),
            Err(vec![
                "status correct, expected \"incorrect\"".to_string(),
                "missing incorrect_output".to_string()
            ])
        );
    }
}
