//! `polyprof batch` refuses a bad job file before running anything, naming file and line.

use crate::support;

use predicates::str::contains;
use support::batch::batch;
use support::polyprof;

fn refused(text: &str, name: &str, expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join(name);
    std::fs::write(&jobs, text).unwrap();
    let root = dir.path().join("out");
    let mut assert = polyprof()
        .arg("batch")
        .arg(&jobs)
        .arg("--output-dir")
        .arg(&root)
        .assert()
        .code(2);
    for e in expect {
        assert = assert.stderr(contains(*e));
    }
    assert!(!root.exists(), "nothing is created for a bad job file");
}

#[test]
fn a_bad_json_line_is_named() {
    refused(
        "{\"id\": \"a\", \"target\": [\"true\"]}\n{\"id\": \"b\", \"target\": [\"true\"\n",
        "jobs.jsonl",
        &["jobs.jsonl:2: ", "not a valid job"],
    );
}

#[test]
fn a_duplicate_id_names_both_lines() {
    refused(
        "{\"id\": \"a\", \"target\": [\"true\"]}\n\n{\"id\": \"a\", \"target\": [\"false\"]}\n",
        "jobs.jsonl",
        &["jobs.jsonl:3: duplicate job id `a` (first on line 1)"],
    );
}

#[test]
fn an_unknown_key_is_refused() {
    refused(
        "{\"id\": \"a\", \"target\": [\"true\"], \"timeout\": 5}\n",
        "jobs.jsonl",
        &["jobs.jsonl:1: ", "unknown field `timeout`", "timeout_s"],
    );
    refused(
        "[[job]]\nid = \"a\"\ntarget = [\"true\"]\n\n[[job]]\nid = \"b\"\ntarget = [\"true\"]\nlables = {}\n",
        "jobs.toml",
        &["jobs.toml:", "lables"],
    );
}

#[test]
fn an_id_that_cannot_name_a_directory_is_refused() {
    refused(
        "{\"id\": \"../../etc\", \"target\": [\"true\"]}\n",
        "jobs.jsonl",
        &["jobs.jsonl:1: ", "job id"],
    );
}

#[test]
fn a_toml_job_file_runs() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.toml");
    std::fs::write(
        &jobs,
        "[[job]]\nid = \"t1\"\ntarget = [\"echo\", \"(16, 32)\"]\nlabels = { kernel = \"k\" }\n\n[[job]]\nid = \"t2\"\ntarget = [\"true\"]\n",
    )
    .unwrap();
    let root = dir.path().join("out");
    batch(&jobs, &root)
        .args(["--jobs", "2", "-q"])
        .assert()
        .success();
    let index = support::batch::index(&root);
    assert_eq!(index.order, ["t1", "t2"]);
    assert_eq!(index.jobs["t1"].labels["kernel"], "k");
    let log = std::fs::read_to_string(root.join("runs/t1/run.1.stdout.log")).unwrap();
    assert_eq!(log, "(16, 32)\n");
}
