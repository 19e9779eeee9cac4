//! The audit: a pure function from recorded evidence to a verdict.

use super::evidence::EvalEvidence;
use super::verdict::{Correctness, EvalVerdict, Status, VERDICT_VERSION};

/// Judge `evidence`. Pure: the same evidence always gives the same verdict.
pub fn judge(evidence: &EvalEvidence) -> EvalVerdict {
    let status = if evidence.failure.is_some() {
        Status::Failed
    } else {
        Status::Correct
    };
    EvalVerdict {
        schema_version: VERDICT_VERSION,
        passed: false,
        status,
        correctness: Correctness {
            atol: evidence.settings.atol,
            rtol: evidence.settings.rtol,
            ..Default::default()
        },
        timing: None,
        witness: None,
        checks: Vec::new(),
        findings: Vec::new(),
        failure: evidence.failure.clone(),
    }
}
