//! The audit's rules, one check each: every rule reads the evidence (and the summaries the
//! audit derived from it) and says whether it could run, and what it found.

pub mod call_consistency;
pub mod candidate_kernels;
pub mod correctness;
pub mod device_reset;
pub mod fresh_inputs;
pub mod gpu_timeline;
pub mod inputs;
pub mod output_sanity;
pub mod plausible_time;
pub mod precision;
pub mod roofline;
pub mod sample_conditions;
pub mod sandbox;
pub mod suspicious_speedup;
pub mod witness_ranges;
pub mod witness_time;
pub mod work_floor;
pub mod work_matches_scored;

use serde_json::Value;

use super::evidence::EvalEvidence;
use super::timeline_facts::TimelineFacts;
use super::verdict::{CheckRun, Finding, FindingKind, TimingSummary};
use super::witness_summary::WitnessFacts;

/// What every rule may read: the evidence, and the summaries derived from it (or why there
/// is none).
pub struct Facts<'a> {
    pub evidence: &'a EvalEvidence,
    pub timing: Result<&'a TimingSummary, &'a str>,
    pub witness: Result<&'a WitnessFacts<'a>, &'a str>,
    /// The scored pass's GPU timeline, when it was traced.
    pub timeline: Result<&'a TimelineFacts<'a>, &'a str>,
}

/// One rule's result: its check run and its findings.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleOutcome {
    pub check: CheckRun,
    pub findings: Vec<Finding>,
}

impl RuleOutcome {
    pub fn ran(check: &str, findings: Vec<Finding>) -> RuleOutcome {
        RuleOutcome {
            check: CheckRun {
                check: check.to_string(),
                ran: true,
                why_not: None,
                not_judged: Vec::new(),
            },
            findings,
        }
    }

    /// A check that ran with parts it could not judge (`not_judged`).
    pub fn ran_in_part(
        check: &str,
        findings: Vec<Finding>,
        not_judged: Vec<String>,
    ) -> RuleOutcome {
        let mut outcome = RuleOutcome::ran(check, findings);
        outcome.check.not_judged = not_judged;
        outcome
    }

    pub fn skipped(check: &str, why_not: impl Into<String>) -> RuleOutcome {
        RuleOutcome {
            check: CheckRun {
                check: check.to_string(),
                ran: false,
                why_not: Some(why_not.into()),
                not_judged: Vec::new(),
            },
            findings: Vec::new(),
        }
    }
}

pub type Rule = fn(&Facts) -> RuleOutcome;

/// Every rule, in the order their checks are listed in a verdict.
pub const RULES: [Rule; 18] = [
    sandbox::check,
    correctness::check,
    inputs::check,
    fresh_inputs::check,
    output_sanity::check,
    gpu_timeline::check,
    witness_time::check,
    witness_ranges::check,
    call_consistency::check,
    candidate_kernels::check,
    suspicious_speedup::check,
    plausible_time::check,
    work_floor::check,
    work_matches_scored::check,
    roofline::check,
    precision::check,
    sample_conditions::check,
    device_reset::check,
];

/// A figure a finding measured, against its limit.
pub struct Measure {
    pub measured: f64,
    pub limit: f64,
    pub unit: &'static str,
}

pub fn finding(
    kind: FindingKind,
    check: &str,
    message: String,
    measure: Measure,
    evidence: Value,
) -> Finding {
    Finding {
        kind,
        check: check.to_string(),
        message,
        measured: Some(measure.measured),
        limit: Some(measure.limit),
        unit: Some(measure.unit.to_string()),
        evidence,
    }
}

/// At most this many launch ids or names are listed in one finding's evidence.
pub const LISTED_NAMES: usize = 10;
pub const LISTED_IDS: usize = 100;

/// `items`' first `limit`, as JSON, with how many were left out.
pub fn listed<T: serde::Serialize>(items: &[T], limit: usize) -> (Value, usize) {
    let shown = &items[..items.len().min(limit)];
    (
        serde_json::to_value(shown).unwrap_or(Value::Null),
        items.len() - shown.len(),
    )
}

#[cfg(test)]
pub mod testing {
    //! Running the audit's derivations on test evidence, as `judge` does.

    use super::*;
    use crate::eval::timeline_facts::timeline_facts;
    use crate::eval::timing::timing_summary;
    use crate::eval::witness_summary::witness_facts;

    /// Run `rule` on `evidence` with the summaries `judge` would derive.
    pub fn run(rule: Rule, evidence: &EvalEvidence) -> RuleOutcome {
        let timing = timing_summary(evidence);
        let witness = witness_facts(evidence, timing.as_ref().ok().map(|t| t.score_ms));
        let timeline = timeline_facts(evidence);
        let facts = Facts {
            evidence,
            timing: timing.as_ref().map_err(String::as_str),
            witness: witness.as_ref().map_err(String::as_str),
            timeline: timeline.as_ref().map_err(String::as_str),
        };
        rule(&facts)
    }

    pub fn kinds(outcome: &RuleOutcome) -> Vec<FindingKind> {
        outcome.findings.iter().map(|f| f.kind).collect()
    }
}
