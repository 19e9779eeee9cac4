//! The committed JSON Schema of batch.json (schemas/batch.schema.json) is what the model's
//! types generate, and the index and entries the binary writes validate against it.
//! Regenerate with `UPDATE_SCHEMA=1 cargo test --test integration batch_schema`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::batch::{sh_job, write_jobs};
use crate::support::polyprof;

fn committed_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/batch.schema.json")
}

fn committed() -> Value {
    let text = std::fs::read_to_string(committed_path()).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let generated = polyprof::model::schema::batch_schema();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
        std::fs::write(committed_path(), text).unwrap();
    }
    assert_eq!(
        committed(),
        generated,
        "schemas/batch.schema.json is stale: UPDATE_SCHEMA=1 cargo test --test integration batch_schema"
    );
}

#[test]
fn a_written_index_validates() {
    let validator = jsonschema::validator_for(&committed()).expect("a valid JSON Schema");
    let dir = tempfile::tempdir().unwrap();
    let mut hang = sh_job("hang", "sleep 30");
    hang["timeout_s"] = serde_json::json!(0.3);
    hang["labels"] = serde_json::json!({"kind": "hang"});
    let file = write_jobs(
        dir.path(),
        &[sh_job("ok", "true"), sh_job("bad", "exit 2"), hang],
    );
    let root = dir.path().join("out");
    polyprof()
        .arg("batch")
        .arg(&file)
        .args(["--devices", "0", "-q", "--output-dir"])
        .arg(&root)
        .assert()
        .code(1);
    let index: Value =
        serde_json::from_slice(&std::fs::read(root.join("batch.json")).unwrap()).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&index)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(index["jobs"]["hang"]["state"], "timed_out");
}
