//! The JSON Schema of `run.json`, generated from the model's types (schemars), so the document
//! and its schema cannot drift apart. Committed as `schemas/run.schema.json`; a test regenerates
//! it and validates every run.json fixture against it.

use crate::model::run::ProfileRun;

/// The JSON Schema (draft 2020-12) of a run document.
pub fn run_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(ProfileRun);
    schema.insert(
        "description".to_string(),
        serde_json::Value::from(
            "polyprof run document (run.json): one profiler pass, its process steps, kernel records and diagnostics",
        ),
    );
    schema.to_value()
}

/// The JSON Schema (draft 2020-12) of a batch index (`batch.json`; its `jobs` values are the
/// `entry.json` documents).
pub fn batch_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(crate::model::batch::BatchIndex);
    schema.insert(
        "description".to_string(),
        serde_json::Value::from(
            "polyprof batch index (batch.json): every job of a batch, its state, run directory and key figures",
        ),
    );
    schema.to_value()
}
