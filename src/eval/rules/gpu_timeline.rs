//! `gpu_timeline`: the scored pass judged on its own GPU timeline (`timeline_checks`): work
//! outside the calls, broken marks, calls that ran nothing or differed, the candidate's timer
//! below the GPU time its calls took. Also what the timeline cannot show: records the tracer
//! lost, and GPU work of other processes the worker started.

use serde_json::json;

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::timeline_checks::CHECK;
use crate::eval::verdict::FindingKind;

pub fn check(facts: &Facts) -> RuleOutcome {
    let timeline = match facts.timeline {
        Ok(timeline) => timeline,
        Err(why) => return RuleOutcome::skipped(CHECK, why),
    };
    let mut findings = timeline.findings.clone();
    if timeline.trace.dropped > 0 {
        findings.push(finding(
            FindingKind::TraceIncomplete,
            CHECK,
            format!(
                "the tracer lost {} records of the candidate's worker: the timeline cannot show \
                 every call's work",
                timeline.trace.dropped
            ),
            Measure {
                measured: timeline.trace.dropped as f64,
                limit: 0.0,
                unit: "records",
            },
            json!({"dropped": timeline.trace.dropped, "errors": timeline.trace.errors}),
        ));
    }
    for &(pid, activities, ms) in &timeline.other_processes {
        findings.push(finding(
            FindingKind::KernelsOutsideCalls,
            CHECK,
            format!(
                "process {pid}, started from the candidate's worker, ran {activities} activities \
                 ({ms:.4} ms) on the GPU: no call of the harness's is in another process"
            ),
            Measure {
                measured: activities as f64,
                limit: 0.0,
                unit: "activities",
            },
            json!({"pid": pid, "activities": activities, "gpu_ms": ms}),
        ));
    }
    RuleOutcome::ran(CHECK, findings)
}
