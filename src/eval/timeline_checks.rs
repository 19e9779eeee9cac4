//! The `gpu_timeline` check: findings from the scored pass's attributed timeline
//! (`timeline::attribute`), and the call times it gives.
//!
//! - work outside every call: in a harness step (`work_in_harness_step`), between requests or
//!   across a window's edge (`kernels_outside_calls`);
//! - the marks themselves broken (`timeline_marks_broken`);
//! - the calls of one timing block running nothing on the GPU (`no_candidate_kernel`), or doing
//!   different work (`inconsistent_calls`): the same
//!   callable on the same inputs launches the same kernels every time, unless it caches, skips or
//!   replays work on some calls only;
//! - the candidate's own timer below the GPU time its calls took (`reported_time_below_witness`).

use serde_json::json;

use super::timeline::{MarkedRequest, OutsidePlace, Timeline, WorkKey, attribute, call_signature};
use super::verdict::{BlockTime, Finding, FindingKind, TimelineSummary};
use crate::model::gpu_trace::GpuTrace;

/// The check's name in `checks` and in each finding.
pub const CHECK: &str = "gpu_timeline";
/// Names listed in a finding's evidence, at most.
const EXAMPLES: usize = 5;

/// Judge a trace against the requests that were sent. `reported` gives, per request index, the
/// per-call times the candidate's worker reported for it (a timing block's `times_ms`), and
/// `tolerance` the share of the traced time below which a reported time is a finding.
pub fn judge_timeline(
    trace: &GpuTrace,
    requests: &[MarkedRequest],
    reported: &[(usize, Vec<f64>)],
    tolerance: f64,
) -> (TimelineSummary, Vec<Finding>) {
    judge_attributed(
        trace,
        requests,
        &attribute(trace, requests),
        reported,
        tolerance,
    )
}

/// [`judge_timeline`] of a timeline already attributed (`timeline::attribute` of the same
/// trace and requests), for a caller that keeps it.
pub fn judge_attributed(
    trace: &GpuTrace,
    requests: &[MarkedRequest],
    timeline: &Timeline,
    reported: &[(usize, Vec<f64>)],
    tolerance: f64,
) -> (TimelineSummary, Vec<Finding>) {
    let mut findings = Vec::new();
    outside_findings(trace, requests, timeline, &mut findings);
    if !timeline.mark_problems.is_empty() {
        findings.push(Finding {
            kind: FindingKind::TimelineMarksBroken,
            check: CHECK.to_string(),
            message: format!(
                "{} of the harness's marks on the GPU timeline were wrong (forged by code that read their sizes, or lost): {}",
                timeline.mark_problems.len(),
                timeline.mark_problems[0].problem
            ),
            measured: Some(timeline.mark_problems.len() as f64),
            limit: Some(0.0),
            unit: Some("marks".to_string()),
            evidence: json!(timeline.mark_problems.iter().take(EXAMPLES).collect::<Vec<_>>()),
        });
    }
    let mut blocks = Vec::new();
    for (index, request) in requests.iter().enumerate() {
        if request.op != "time" {
            continue;
        }
        let calls: Vec<_> = timeline
            .calls
            .iter()
            .filter(|c| c.request == index)
            .collect();
        if calls.is_empty() {
            continue;
        }
        let mut signatures: Vec<(Vec<WorkKey>, usize)> = Vec::new();
        for call in &calls {
            let signature = call_signature(trace, call);
            match signatures.iter_mut().find(|(s, _)| *s == signature) {
                Some((_, n)) => *n += 1,
                None => signatures.push((signature, 1)),
            }
        }
        if signatures.len() == 1 && signatures[0].0.is_empty() {
            findings.push(Finding {
                kind: FindingKind::NoCandidateKernel,
                check: CHECK.to_string(),
                message: format!(
                    "none of the {} calls of timing request {index} ran anything on the GPU between its marks: the answer came from elsewhere (work done outside the call, or launched where the timing cannot see it)",
                    calls.len()
                ),
                measured: Some(0.0),
                limit: Some(1.0),
                unit: Some("launches per call".to_string()),
                evidence: json!({"request": index, "calls": calls.len()}),
            });
        }
        if signatures.len() > 1 {
            signatures.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
            let shapes: Vec<String> = signatures
                .iter()
                .take(EXAMPLES)
                .map(|(s, n)| format!("{n} calls: {}", describe(s)))
                .collect();
            findings.push(Finding {
                kind: FindingKind::InconsistentCalls,
                check: CHECK.to_string(),
                message: format!(
                    "the {} calls of timing request {index} did {} different sets of GPU work on the same inputs ({}): work skipped, cached or replayed on some calls only",
                    calls.len(),
                    signatures.len(),
                    shapes.join("; ")
                ),
                measured: Some(signatures.len() as f64),
                limit: Some(1.0),
                unit: Some("distinct call signatures".to_string()),
                evidence: json!({"request": index, "signatures": shapes}),
            });
        }
        let mut times: Vec<f64> = calls.iter().map(|c| c.busy_ns as f64 / 1e6).collect();
        let median_ms = median(&mut times);
        let reported_median_ms = reported
            .iter()
            .find(|(r, _)| *r == index)
            .map(|(_, t)| median(&mut t.clone()));
        if let Some(own) = reported_median_ms
            && median_ms > 0.0
            && own < tolerance * median_ms
        {
            findings.push(Finding {
                kind: FindingKind::ReportedTimeBelowWitness,
                check: CHECK.to_string(),
                message: format!(
                    "timing request {index}: the candidate's timer read {own:.4} ms a call, the GPU ran {median_ms:.4} ms of its work a call"
                ),
                measured: Some(own / median_ms),
                limit: Some(tolerance),
                unit: Some("reported / traced".to_string()),
                evidence: json!({"request": index}),
            });
        }
        blocks.push(BlockTime {
            request: index,
            calls: calls.len(),
            median_ms,
            reported_median_ms,
        });
    }
    let outside_ms = timeline
        .outside
        .iter()
        .map(|o| trace.activities[o.activity].duration_ns() as f64 / 1e6)
        .sum();
    let summary = TimelineSummary {
        calls: timeline.calls.len(),
        blocks,
        outside: timeline.outside.len(),
        outside_ms,
        setup_activities: timeline.setup_activities,
        harness_activities: timeline.harness_activities,
        dropped: trace.dropped,
    };
    (summary, findings)
}

fn outside_findings(
    trace: &GpuTrace,
    requests: &[MarkedRequest],
    timeline: &Timeline,
    findings: &mut Vec<Finding>,
) {
    let mut in_steps: Vec<usize> = Vec::new();
    let mut elsewhere: Vec<usize> = Vec::new();
    for o in &timeline.outside {
        match o.place {
            OutsidePlace::HarnessStep { .. } => in_steps.push(o.activity),
            OutsidePlace::Idle | OutsidePlace::Straddles { .. } => elsewhere.push(o.activity),
        }
    }
    let names = |list: &[usize]| -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for &i in list {
            let a = &trace.activities[i];
            let name = if a.name.is_empty() {
                format!("{:?} of {} bytes", a.kind, a.bytes.unwrap_or(0)).to_lowercase()
            } else {
                a.name.clone()
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names.truncate(EXAMPLES);
        names
    };
    let ms = |list: &[usize]| -> f64 {
        list.iter()
            .map(|&i| trace.activities[i].duration_ns() as f64 / 1e6)
            .sum()
    };
    if !in_steps.is_empty() {
        let steps: Vec<String> = timeline
            .outside
            .iter()
            .filter_map(|o| match o.place {
                OutsidePlace::HarnessStep { request } => Some(requests[request].op.clone()),
                _ => None,
            })
            .fold(Vec::new(), |mut acc, op| {
                if !acc.contains(&op) {
                    acc.push(op);
                }
                acc
            });
        findings.push(Finding {
            kind: FindingKind::WorkInHarnessStep,
            check: CHECK.to_string(),
            message: format!(
                "{} GPU activities ({:.3} ms) ran inside the harness's own steps of {} requests, outside the call, and are not what the harness queues there: {}",
                in_steps.len(),
                ms(&in_steps),
                steps.join(", "),
                names(&in_steps).join(", ")
            ),
            measured: Some(in_steps.len() as f64),
            limit: Some(0.0),
            unit: Some("activities".to_string()),
            evidence: json!({"ops": steps, "names": names(&in_steps)}),
        });
    }
    if !elsewhere.is_empty() {
        let threads: Vec<i64> = elsewhere
            .iter()
            .filter_map(|&i| trace.activities[i].thread)
            .fold(Vec::new(), |mut acc, t| {
                if !acc.contains(&t) {
                    acc.push(t);
                }
                acc
            });
        findings.push(Finding {
            kind: FindingKind::KernelsOutsideCalls,
            check: CHECK.to_string(),
            message: format!(
                "{} GPU activities ({:.3} ms) ran on the GPU outside every call, while the candidate held none (after a call returned, between requests, or across a call's edge): {}",
                elsewhere.len(),
                ms(&elsewhere),
                names(&elsewhere).join(", ")
            ),
            measured: Some(ms(&elsewhere)),
            limit: Some(0.0),
            unit: Some("ms".to_string()),
            evidence: json!({"activities": elsewhere.len(), "threads": threads, "names": names(&elsewhere)}),
        });
    }
}

fn describe(signature: &[WorkKey]) -> String {
    if signature.is_empty() {
        return "no GPU work".to_string();
    }
    let mut parts: Vec<String> = Vec::new();
    for key in signature {
        let name = if key.name.is_empty() {
            format!("{:?}", key.kind).to_lowercase()
        } else {
            key.name.chars().take(60).collect()
        };
        if !parts.contains(&name) {
            parts.push(name);
        }
    }
    format!("{} launches ({})", signature.len(), parts.join(", "))
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}
