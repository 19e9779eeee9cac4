//! The committed JSON Schemas (`schemas/*.schema.json`): compared with what the model's types
//! generate, and used to validate the documents tests read or make.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn path(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(file)
}

/// `schemas/<file>` as JSON (`Null` when missing or unreadable, so the comparison fails).
pub fn committed(file: &str) -> Value {
    let text = std::fs::read_to_string(path(file)).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Assert `schemas/<file>` is `generated`; with `UPDATE_SCHEMA` set, write it first.
/// `test` names the test module that regenerates it, for the message.
pub fn assert_committed_is(file: &str, generated: &Value, test: &str) {
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        let text = serde_json::to_string_pretty(generated).unwrap() + "\n";
        std::fs::write(path(file), text).unwrap();
    }
    assert_eq!(
        &committed(file),
        generated,
        "schemas/{file} is stale: UPDATE_SCHEMA=1 cargo test --test integration {test}"
    );
}

/// What `validator` finds wrong with `document`, one line per error.
pub fn errors(validator: &jsonschema::Validator, document: &Value) -> Vec<String> {
    validator
        .iter_errors(document)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}
