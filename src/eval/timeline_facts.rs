//! The scored pass's GPU timeline as the audit reads it from the evidence (`evidence.timeline`):
//! the candidate worker's trace judged against the requests that were sent, once per audit, for
//! the rules that read it (`gpu_timeline`, `work_matches_scored`, `candidate_kernels`).

use super::evidence::EvalEvidence;
use super::timeline::{MarkedRequest, Timeline, attribute};
use super::timeline_checks::{TimelineSummary, judge_timeline};
use super::verdict::Finding;
use crate::model::gpu_trace::{ActivityKind, GpuTrace};

/// The judged timeline.
#[derive(Debug)]
pub struct TimelineFacts<'a> {
    pub trace: &'a GpuTrace,
    pub requests: Vec<MarkedRequest>,
    pub timeline: Timeline,
    pub summary: TimelineSummary,
    pub findings: Vec<Finding>,
    /// Other processes that loaded the tracer and ran work on the GPU: pid, activities, and
    /// their GPU time (ms).
    pub other_processes: Vec<(u32, usize, f64)>,
}

impl TimelineFacts<'_> {
    /// Readable names of the kernels that ran inside the calls, each once, in order of first run.
    pub fn call_kernel_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for call in &self.timeline.calls {
            for &i in &call.activities {
                let activity = &self.trace.activities[i];
                if activity.kind == ActivityKind::Kernel
                    && !names.contains(&activity.readable_name())
                {
                    names.push(activity.readable_name());
                }
            }
        }
        names
    }
}

/// The timeline of `evidence`, or why there is none to judge.
pub fn timeline_facts(evidence: &EvalEvidence) -> Result<TimelineFacts<'_>, String> {
    let Some(scored) = &evidence.timeline else {
        return Err(if evidence.problem.device == "cpu" {
            "no GPU timeline on cpu".to_string()
        } else {
            "the scored pass was not traced (--scored-trace off, or evidence from before the \
             tracer)"
                .to_string()
        });
    };
    if let Some(error) = &scored.error {
        return Err(format!("the tracer failed: {error}"));
    }
    let Some(pid) = scored.worker_pid else {
        return Err("the candidate's worker never connected: no trace is its".to_string());
    };
    let Some(trace) = scored.traces.iter().find(|t| t.pid == pid) else {
        return Err(format!(
            "the tracer wrote no records for the candidate's worker (pid {pid}): it was not \
             loaded, or its record file was removed"
        ));
    };
    let requests: Vec<MarkedRequest> = scored.requests.iter().map(|s| s.request.clone()).collect();
    let reported: Vec<(usize, Vec<f64>)> = scored
        .requests
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.reported_times_ms.clone().map(|t| (i, t)))
        .collect();
    let (summary, findings) = judge_timeline(
        trace,
        &requests,
        &reported,
        evidence.settings.witness_tolerance,
    );
    let timeline = attribute(trace, &requests);
    let other_processes = scored
        .traces
        .iter()
        .filter(|t| t.pid != pid && !t.activities.is_empty())
        .map(|t| {
            let ns: u64 = t.activities.iter().map(|a| a.duration_ns()).sum();
            (t.pid, t.activities.len(), ns as f64 / 1e6)
        })
        .collect();
    Ok(TimelineFacts {
        trace,
        requests,
        timeline,
        summary,
        findings,
        other_processes,
    })
}
