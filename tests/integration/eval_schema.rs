//! The committed JSON Schemas of evidence.json and verdict.json (schemas/eval-*.schema.json)
//! are what the eval's types generate, and the committed evidence and the verdicts the audit
//! writes validate against them. Regenerate with
//! `UPDATE_SCHEMA=1 cargo test --test integration eval_schema`.

use serde_json::Value;

use crate::support::schema;
use crate::support::{fixture, polyprof};

const EVIDENCE: &str = "eval-evidence.schema.json";
const VERDICT: &str = "eval-verdict.schema.json";

#[test]
fn the_committed_schemas_are_the_generated_ones() {
    schema::assert_committed_is(
        EVIDENCE,
        &polyprof::eval::schema::evidence_schema(),
        "eval_schema",
    );
    schema::assert_committed_is(
        VERDICT,
        &polyprof::eval::schema::verdict_schema(),
        "eval_schema",
    );
}

#[test]
fn evidence_fixtures_and_written_verdicts_validate() {
    let evidence_schema =
        jsonschema::validator_for(&schema::committed(EVIDENCE)).expect("a valid JSON Schema");
    let verdict_schema =
        jsonschema::validator_for(&schema::committed(VERDICT)).expect("a valid JSON Schema");
    let mut checked = 0;
    for entry in std::fs::read_dir(fixture("eval")).unwrap().flatten() {
        let evidence_path = entry.path().join("evidence.json");
        let document: Value =
            serde_json::from_slice(&std::fs::read(&evidence_path).unwrap()).unwrap();
        let errors = schema::errors(&evidence_schema, &document);
        assert!(
            errors.is_empty(),
            "{}: {errors:#?}",
            evidence_path.display()
        );
        if document["schema_version"] != 1 {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(&evidence_path, dir.path().join("evidence.json")).unwrap();
        let out = polyprof().arg("audit").arg(dir.path()).output().unwrap();
        assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
        let verdict: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("verdict.json")).unwrap())
                .unwrap();
        let errors = schema::errors(&verdict_schema, &verdict);
        assert!(
            errors.is_empty(),
            "verdict of {}: {errors:#?}",
            evidence_path.display()
        );
        checked += 1;
    }
    assert!(checked >= 5, "{checked} evals audited");
    // The schemas do reject what is not theirs.
    assert!(!evidence_schema.is_valid(&serde_json::json!({"schema_version": 1, "trials": 3})));
    assert!(!verdict_schema.is_valid(&serde_json::json!({"passed": "yes"})));
}
