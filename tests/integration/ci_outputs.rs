//! `--junit FILE` and `--markdown FILE` of `diff`, `batch` and `eval` through the real binary,
//! each file read by a real consumer (scripts/read-ci-outputs.py: junitparser for the XML,
//! Python-Markdown's tables for the summary): one test case per kernel, job or candidate, and
//! failures with their reason.

use std::path::Path;

use serde_json::Value;

use crate::support::batch::{batch, sh_job, write_jobs};
use crate::support::eval::{eval_cpu, problem, python_with_numpy};
use crate::support::{assert_exit, fixture, polyprof, python_has, script};

/// What junitparser and Python-Markdown read from the two files; `None` (the test skipped)
/// where python3 lacks them outside CI (scripts/test.sh installs both).
fn read(junit: &Path, markdown: &Path) -> Option<Value> {
    if !(python_has("junitparser") && python_has("markdown")) {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 cannot import junitparser and markdown (scripts/test.sh installs them)"
        );
        crate::support::record_skip(
            &crate::support::this_test(),
            "python3 lacks junitparser or markdown (pip install junitparser markdown)",
        );
        return None;
    }
    let out = std::process::Command::new("python3")
        .arg(script("read-ci-outputs.py"))
        .arg(junit)
        .arg(markdown)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn cases(seen: &Value) -> &Vec<Value> {
    seen["junit"][0]["cases"].as_array().unwrap()
}

#[test]
fn diff_gate_as_junit_and_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let (junit, md) = (dir.path().join("diff.xml"), dir.path().join("diff.md"));
    let out = polyprof()
        .arg("diff")
        .arg(fixture("runs/h200-baseline"))
        .arg(fixture("runs/h200-regressed"))
        .arg("--junit")
        .arg(&junit)
        .arg("--markdown")
        .arg(&md)
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let Some(seen) = read(&junit, &md) else {
        return;
    };
    let suite = &seen["junit"][0];
    assert_eq!(suite["name"], "polyprof diff");
    assert_eq!(
        (suite["tests"].as_u64(), suite["failures"].as_u64()),
        (Some(4), Some(1))
    );
    let failed: Vec<&Value> = cases(&seen)
        .iter()
        .filter(|c| c["result"] == "failure")
        .collect();
    assert_eq!(failed.len(), 1, "{seen}");
    let name = failed[0]["name"].as_str().unwrap();
    let message = failed[0]["message"].as_str().unwrap();
    assert!(name.starts_with("matmul_tiled<32><<<("), "{name}");
    assert!(
        message.contains("+22.0 %") && message.contains("5 % threshold"),
        "{message}"
    );
    let summary = &seen["markdown"];
    assert!(
        summary["headline"]
            .as_str()
            .unwrap()
            .contains("polyprof diff: 1 failed, 3 passed"),
        "{summary}"
    );
    assert_eq!(summary["header"][2], "median A");
    let rows = summary["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{summary}");
    let tiled = rows
        .iter()
        .find(|r| r[1].as_str().unwrap() == name)
        .unwrap();
    assert_eq!(
        (tiled[0].as_str(), tiled[4].as_str()),
        (Some("❌"), Some("+22.0 %"))
    );
    assert!(
        summary["reasons"][0].as_str().unwrap().contains(message),
        "{summary}"
    );
}

#[test]
fn batch_jobs_as_junit_and_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = write_jobs(
        dir.path(),
        &[
            sh_job("fine", "exit 0"),
            sh_job("broken", "echo 'it | broke' >&2; exit 3"),
            sh_job("also-fine", "true"),
        ],
    );
    let (junit, md) = (dir.path().join("batch.xml"), dir.path().join("batch.md"));
    let out = batch(&jobs, &dir.path().join("root"))
        .args(["--devices", "cpu", "--jobs", "2", "-q", "--junit"])
        .arg(&junit)
        .arg("--markdown")
        .arg(&md)
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let Some(seen) = read(&junit, &md) else {
        return;
    };
    let results: Vec<(&str, &str)> = cases(&seen)
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["result"].as_str().unwrap()))
        .collect();
    assert_eq!(
        results,
        [
            ("fine", "passed"),
            ("broken", "failure"),
            ("also-fine", "passed")
        ]
    );
    let broken = &cases(&seen)[1];
    assert!(
        broken["message"]
            .as_str()
            .unwrap()
            .starts_with("failed: exited with code 3"),
        "{broken}"
    );
    assert!(broken["time"].as_f64().unwrap() > 0.0, "{broken}");
    let rows = seen["markdown"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(
        (rows[1][0].as_str(), rows[1][1].as_str()),
        (Some("❌"), Some("broken"))
    );
}

#[test]
fn eval_candidates_as_junit_and_markdown() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let candidates = dir.path().join("candidates");
    std::fs::create_dir(&candidates).unwrap();
    for name in ["honest.py", "raises.py"] {
        std::fs::copy(problem(name), candidates.join(name)).unwrap();
    }
    let (junit, md) = (dir.path().join("eval.xml"), dir.path().join("eval.md"));
    let junit_arg = format!("--junit={}", junit.display());
    let md_arg = format!("--markdown={}", md.display());
    let out = eval_cpu(
        &python,
        &problem("reference.py"),
        &candidates,
        &dir.path().join("evals"),
        &[&junit_arg, &md_arg],
    );
    assert_exit(&out, 1);
    let Some(seen) = read(&junit, &md) else {
        return;
    };
    let results: Vec<(String, &str)> = cases(&seen)
        .iter()
        .map(|c| {
            let name = Path::new(c["name"].as_str().unwrap()).file_name().unwrap();
            (
                name.to_string_lossy().into_owned(),
                c["result"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("honest.py".to_string(), "passed"),
            ("raises.py".to_string(), "failure")
        ]
    );
    let raised = cases(&seen)[1]["message"].as_str().unwrap();
    assert!(raised.starts_with("raised during"), "{raised}");
    assert_eq!(seen["markdown"]["header"][2], "status");
}
