//! The committed JSON Schema of batch.json (schemas/batch.schema.json) is what the model's
//! types generate, and the index and entries the binary writes validate against it.
//! Regenerate with `UPDATE_SCHEMA=1 cargo test --test integration batch_schema`.

use serde_json::Value;

use crate::support::batch::{batch, sh_job, write_jobs};
use crate::support::schema;

const FILE: &str = "batch.schema.json";

#[test]
fn the_committed_schema_is_the_generated_one() {
    let generated = polyprof::model::schema::batch_schema();
    schema::assert_committed_is(FILE, &generated, "batch_schema");
}

#[test]
fn a_written_index_validates() {
    let validator =
        jsonschema::validator_for(&schema::committed(FILE)).expect("a valid JSON Schema");
    let dir = tempfile::tempdir().unwrap();
    let mut hang = sh_job("hang", "sleep 30");
    hang["timeout_s"] = serde_json::json!(0.3);
    hang["labels"] = serde_json::json!({"kind": "hang"});
    let file = write_jobs(
        dir.path(),
        &[sh_job("ok", "true"), sh_job("bad", "exit 2"), hang],
    );
    let root = dir.path().join("out");
    batch(&file, &root)
        .args(["--devices", "0", "-q"])
        .assert()
        .code(1);
    let index: Value =
        serde_json::from_slice(&std::fs::read(root.join("batch.json")).unwrap()).unwrap();
    let errors = schema::errors(&validator, &index);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(index["jobs"]["hang"]["state"], "timed_out");
}
