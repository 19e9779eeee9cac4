//! The scored pass's GPU timeline as the audit reads it from the evidence (`evidence.timeline`):
//! the candidate worker's trace judged against the requests that were sent, once per audit, for
//! the rules that read it (`gpu_timeline`, `work_matches_scored`, `candidate_kernels`).

use super::evidence::EvalEvidence;
use super::timeline::{MarkedRequest, Timeline, attribute};
use super::timeline_checks::judge_attributed;
use super::verdict::Finding;
use super::verdict::TimelineSummary;
use std::borrow::Cow;

use crate::model::gpu_trace::{ActivityKind, GpuTrace};

/// The judged timeline.
#[derive(Debug)]
pub struct TimelineFacts<'a> {
    /// The worker's trace as judged (cut before a failed eval's last request).
    pub trace: Cow<'a, GpuTrace>,
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
    let Some(worker_trace) = scored.traces.iter().find(|t| t.pid == pid) else {
        return Err(format!(
            "the tracer wrote no records for the candidate's worker (pid {pid}): it was not \
             loaded, or its record file was removed"
        ));
    };
    let mut requests: Vec<MarkedRequest> =
        scored.requests.iter().map(|s| s.request.clone()).collect();
    let reported: Vec<(usize, Vec<f64>)> = scored
        .requests
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.reported_times_ms.clone().map(|t| (i, t)))
        .collect();
    // A failed eval's last request never finished (the worker died, or was ended, in it): its
    // close mark may be missing, and that is the failure's story, not the timeline's.
    let trace = match evidence.failure {
        Some(_) => cut_at_last_request(worker_trace, &mut requests),
        None => Cow::Borrowed(worker_trace),
    };
    let timeline = attribute(&trace, &requests);
    let (summary, findings) = judge_attributed(
        &trace,
        &requests,
        &timeline,
        &reported,
        evidence.settings.witness_tolerance,
    );
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

/// `trace` without the last marked request and whatever ran from its open mark on (the whole
/// trace when that mark never ran).
fn cut_at_last_request<'a>(
    trace: &'a GpuTrace,
    requests: &mut Vec<MarkedRequest>,
) -> Cow<'a, GpuTrace> {
    let Some(last) = requests.iter().rposition(|r| r.marks.is_some()) else {
        return Cow::Borrowed(trace);
    };
    let open = requests[last].marks.map(|m| m.open);
    requests.truncate(last);
    let from = trace
        .activities
        .iter()
        .filter(|a| a.kind == ActivityKind::Memset && a.value == Some(0) && a.bytes == open)
        .map(|a| a.start_ns)
        .min();
    match from {
        Some(from) => {
            let mut cut = trace.clone();
            cut.activities.retain(|a| a.start_ns < from);
            Cow::Owned(cut)
        }
        None => Cow::Borrowed(trace),
    }
}
