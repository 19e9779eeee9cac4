//! The JSON Schemas of `evidence.json` and `verdict.json`, generated from the types (schemars)
//! so a document and its schema cannot drift apart. Committed as
//! `schemas/eval-evidence.schema.json` and `schemas/eval-verdict.schema.json`; a test
//! regenerates and compares them.

use super::evidence::EvalEvidence;
use super::verdict::EvalVerdict;

/// The JSON Schema (draft 2020-12) of an eval's evidence.
pub fn evidence_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(EvalEvidence);
    schema.insert(
        "description".to_string(),
        serde_json::Value::from(
            "polyprof eval evidence (evidence.json): the problem, the options, every trial's comparison, every timing block with its conditions, the witness's kernel launches and any failure",
        ),
    );
    schema.to_value()
}

/// The JSON Schema (draft 2020-12) of an eval's verdict.
pub fn verdict_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(EvalVerdict);
    schema.insert(
        "description".to_string(),
        serde_json::Value::from(
            "polyprof eval verdict (verdict.json): status, correctness, timing with the speedup's interval, the witness summary, every check run and every finding",
        ),
    );
    schema.to_value()
}
