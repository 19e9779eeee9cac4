//! The committed JSON Schema of run.json (schemas/run.schema.json) is what the model's types
//! generate, and every run.json the project has (fixtures, and documents the binary writes)
//! validates against it. Regenerate with `UPDATE_SCHEMA=1 cargo test --test integration verdicts_schema`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::schema;
use crate::support::{fixture, polyprof};

const FILE: &str = "run.schema.json";

#[test]
fn the_committed_schema_is_the_generated_one() {
    let generated = polyprof::model::schema::run_schema();
    schema::assert_committed_is(FILE, &generated, "verdicts_schema");
}

fn run_json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            run_json_files(&path, out);
        } else if path.file_name().is_some_and(|n| n == "run.json") {
            out.push(path);
        }
    }
}

fn assert_valid(validator: &jsonschema::Validator, path: &Path) {
    let document: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let errors = schema::errors(validator, &document);
    assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
}

#[test]
fn every_run_document_validates() {
    let validator =
        jsonschema::validator_for(&schema::committed(FILE)).expect("a valid JSON Schema");
    let mut files = Vec::new();
    run_json_files(&fixture(""), &mut files);
    assert!(files.len() >= 2, "run.json fixtures: {files:?}");
    // Documents the binary writes now: a plain run and a parsed capture.
    let dir = tempfile::tempdir().unwrap();
    polyprof()
        .args(["run", "--profiler", "none", "--output-dir"])
        .arg(dir.path().join("plain"))
        .args(["--", "true"])
        .assert()
        .success();
    run_json_files(&dir.path().join("plain"), &mut files);
    let parsed = dir.path().join("parsed/run.json");
    polyprof()
        .arg("parse")
        .arg(fixture("ncu-h200-tensor/mm_tensor.csv"))
        .arg("--run-dir")
        .arg(parsed.parent().unwrap())
        .assert()
        .success();
    files.push(parsed);
    for file in &files {
        assert_valid(&validator, file);
    }
    // The schema does reject what is not a run document.
    let broken = serde_json::json!({"schema_version": "one", "kernels": 3});
    assert!(!validator.is_valid(&broken));
}
