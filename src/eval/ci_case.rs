//! An eval's verdict as a CI test case (one per candidate): passed only when the verdict
//! passed; failed with its findings or why it stopped; an error when the eval itself could not
//! run (the reference failed, or the harness did), which says nothing about the candidate.

use serde::Serialize;

use crate::eval::evidence::FailureKind;
use crate::eval::verdict::EvalVerdict;
use crate::results::ci::{CaseResult, CiCase, CiSuite};

/// The JSON spelling of a verdict's enum (`inputs_modified`).
fn snake<T: Serialize + std::fmt::Debug>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{value:?}"))
}

fn result(verdict: &EvalVerdict) -> CaseResult {
    if let Some(failure) = &verdict.failure {
        let message = format!(
            "{} during {}: {}",
            snake(&failure.kind),
            snake(&failure.stage),
            failure.message
        );
        let detail = failure.log.clone().unwrap_or_default();
        return match failure.kind {
            FailureKind::ReferenceError | FailureKind::Harness => {
                CaseResult::error(format!("the eval could not run: {message}"), detail)
            }
            _ => CaseResult::failed(message, detail),
        };
    }
    if verdict.passed {
        return CaseResult::Passed;
    }
    let findings: Vec<String> = verdict
        .findings
        .iter()
        .map(|f| format!("{}: {}", snake(&f.kind), f.message))
        .collect();
    let message = if findings.is_empty() {
        format!("not passed ({})", snake(&verdict.status))
    } else {
        format!(
            "not passed ({}); {}",
            snake(&verdict.status),
            findings.join("; ")
        )
    };
    CaseResult::failed(message, findings.join("\n"))
}

/// The figures of [`COLUMNS`].
fn cells(verdict: &EvalVerdict) -> Vec<String> {
    let timing = verdict.timing.as_ref();
    vec![
        snake(&verdict.status),
        timing.map_or("-".to_string(), |t| {
            format!(
                "{:.2}× [{:.2}–{:.2}]",
                t.speedup.value, t.speedup.ci_low, t.speedup.ci_high
            )
        }),
        timing.map_or("-".to_string(), |t| format!("{:.4} ms", t.score_ms)),
        verdict
            .findings
            .iter()
            .map(|f| snake(&f.kind))
            .collect::<Vec<_>>()
            .join(", "),
    ]
}

/// The columns of an eval's cases.
pub const COLUMNS: [&str; 4] = ["status", "speedup", "score", "findings"];

/// One candidate's case, named `candidate` (its file as given), `time_s` the eval's seconds.
pub fn case(candidate: &str, verdict: &EvalVerdict, time_s: Option<f64>) -> CiCase {
    CiCase {
        name: candidate.to_string(),
        classname: "polyprof.eval".to_string(),
        time_s,
        result: result(verdict),
        cells: cells(verdict),
    }
}

/// A case for a candidate whose eval never began (its directory could not be made, …).
pub fn not_run_case(candidate: &str, why: &str) -> CiCase {
    CiCase {
        name: candidate.to_string(),
        classname: "polyprof.eval".to_string(),
        time_s: None,
        result: CaseResult::error(format!("the eval could not run: {why}"), String::new()),
        cells: vec![
            "not_run".to_string(),
            "-".to_string(),
            "-".to_string(),
            String::new(),
        ],
    }
}

/// The suite of an eval against `reference`.
pub fn suite(reference: &str, cases: Vec<CiCase>) -> CiSuite {
    let mut suite = CiSuite::new("polyprof eval", &COLUMNS);
    let (passed, failed, _, errors) = {
        suite.cases = cases;
        suite.counts()
    };
    suite.summary = vec![format!(
        "reference {reference}: {} candidate(s), {passed} passed, {failed} not passed, {errors} could not be evaluated",
        suite.cases.len()
    )];
    suite.time_s = Some(suite.cases.iter().filter_map(|c| c.time_s).sum());
    suite
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::evidence::{Failure, Stage};
    use crate::eval::verdict::{Finding, FindingKind};

    fn verdict(passed: bool) -> EvalVerdict {
        let evidence = crate::eval::test_support::evidence();
        let mut verdict = crate::eval::judge(&evidence);
        verdict.passed = passed;
        verdict.failure = None;
        verdict.findings.clear();
        verdict
    }

    #[test]
    fn passed_failed_and_not_run_are_told_apart() {
        assert_eq!(
            case("c.py", &verdict(true), Some(2.0)).result,
            CaseResult::Passed
        );

        let mut found = verdict(false);
        found.findings.push(Finding {
            kind: FindingKind::SuspiciousSpeedup,
            check: "suspicious_speedup".into(),
            message: "speedup 40× is above 10×".into(),
            measured: Some(40.0),
            limit: Some(10.0),
            unit: None,
            evidence: serde_json::Value::Null,
        });
        let failed = case("c.py", &found, None);
        assert_eq!(failed.result.name(), "failed");
        assert!(
            failed
                .result
                .message()
                .contains("suspicious_speedup: speedup 40× is above 10×"),
            "{:?}",
            failed.result
        );
        assert_eq!(failed.cells[3], "suspicious_speedup");

        let mut harness = verdict(false);
        harness.failure = Some(Failure {
            stage: Stage::Setup,
            kind: FailureKind::Harness,
            message: "no python".into(),
            log: None,
        });
        let error = case("c.py", &harness, None);
        assert_eq!(error.result.name(), "error");
        assert!(
            error
                .result
                .message()
                .contains("harness during setup: no python")
        );

        let suite = suite("r.py", vec![failed, error]);
        assert!(suite.summary[0].contains("1 not passed, 1 could not be evaluated"));
    }
}
