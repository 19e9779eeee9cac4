//! The scored pass judged from its GPU timeline: which of the traced activities belong to which
//! call, by where they ran on the GPU between the harness's own marks, never by a name anyone
//! can push.
//!
//! The harness marks each request and each invocation of the candidate's callable with memsets of
//! sizes the orchestrator drew for that request alone (`MarkedRequest::marks`, sent just in time,
//! docs/eval-harness.md "The GPU timeline"). The tracer records every memset with its size and
//! GPU times, so a request's window is [end of its `open` mark, start of its `close` mark] and a
//! call's is [end of a `call_open` mark, start of the next `call_close`]. Every other activity
//! is then placed:
//! - in a call: it started and ended inside that call's window (it is the call's work, whatever
//!   thread or stream queued it);
//! - in a harness step: inside a request, outside its calls. Allowed there is only what the
//!   harness itself queues: the poison memsets (0xFF, of the sizes the orchestrator asked for)
//!   and, in a timing block, the flush, the spin that holds the GPU and the copies of the output
//!   (`is_harness_timing_work`); anything else ran in the harness's step (a wrapped `torch.full`);
//! - idle: between requests, while the candidate holds no request (a thread that goes on after
//!   the call returned, a flood that would slow the reference's block);
//! - straddling: across a window's edge.
//!
//! Work before the first marked request is the candidate's setup (imports, the model's
//! construction): recorded, not judged.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::model::gpu_trace::{ActivityKind, GpuActivity, GpuTrace};

/// A request's marker sizes (bytes of each memset), as the orchestrator drew them.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct RequestMarks {
    pub open: u64,
    pub close: u64,
    pub call_open: u64,
    pub call_close: u64,
}

/// A request the orchestrator sent, with the marks it drew for it (`None`: sent unmarked, such
/// as `setup`, which runs before the harness can mark anything).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MarkedRequest {
    pub op: String,
    #[serde(default)]
    pub trial: Option<u64>,
    #[serde(default)]
    pub marks: Option<RequestMarks>,
    /// Bytes of each poison block the request asked for (the memsets allowed in its poison step).
    #[serde(default)]
    pub poison_bytes: Vec<u64>,
}

/// One invocation of the candidate's callable, bounded on the GPU by its marks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallWindow {
    /// Index into the requests.
    pub request: usize,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Indices into the trace's activities that ran inside.
    pub activities: Vec<usize>,
    /// GPU time of what ran inside: the union of their intervals (work overlapping on several
    /// streams counts once).
    pub busy_ns: u64,
}

/// Where an activity outside every call ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "place")]
pub enum OutsidePlace {
    /// Inside request `request`, outside its calls, and not the harness's own work.
    HarnessStep { request: usize },
    /// Between requests: the candidate held nothing.
    Idle,
    /// Across the edge of a request's or a call's window.
    Straddles { request: usize },
}

/// An activity that ran outside every call where it had no business to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutsideWork {
    pub activity: usize,
    #[serde(flatten)]
    pub place: OutsidePlace,
}

/// What the marks themselves showed wrong: a mark missing, doubled, out of order or outside its
/// request (forged by someone who read the sizes, or lost by the tracer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkProblem {
    pub request: usize,
    pub problem: String,
}

/// The timeline, attributed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    pub calls: Vec<CallWindow>,
    pub outside: Vec<OutsideWork>,
    pub mark_problems: Vec<MarkProblem>,
    /// Activities before the first marked request (the candidate's setup).
    pub setup_activities: usize,
    /// Activities that were the harness's own work in its steps (poison, flush, copies).
    pub harness_activities: usize,
}

/// What a launch is, for comparing calls: the same work is the same multiset of these.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct WorkKey {
    pub kind: ActivityKind,
    /// Kernel symbol (empty for copies and memsets).
    pub name: String,
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    /// Bytes of a copy or memset.
    pub bytes: Option<u64>,
}

impl WorkKey {
    pub fn of(activity: &GpuActivity) -> WorkKey {
        WorkKey {
            kind: activity.kind,
            name: activity.name.clone(),
            grid: activity.grid,
            block: activity.block,
            bytes: activity.bytes,
        }
    }
}

/// Kernels the harness's own timing queues outside the calls (polyprof_timing.py): the L2
/// flush (an int32 `sum`: a cast copy and a reduction), the spin that holds the GPU while calls
/// are queued, the fills that make the flush buffer and the separator, and the copy of a graph's
/// output. A candidate that launches a kernel of one of these names in a timing block's step
/// passes this check (docs/eval.md, "What is still not caught").
pub fn is_harness_timing_work(activity: &GpuActivity) -> bool {
    match activity.kind {
        ActivityKind::Memcpy | ActivityKind::Memset => true,
        ActivityKind::Kernel => {
            let name = activity.name.as_str();
            (name.starts_with("_ZN2at") || name.starts_with("_ZN2at4cuda"))
                && [
                    "reduce_kernel",
                    "spin_kernel",
                    "FillFunctor",
                    "direct_copy_kernel",
                ]
                .iter()
                .any(|part| name.contains(part))
        }
    }
}

/// How far an activity may cross a window's edge and still count as inside it: CUPTI's GPU
/// timestamps of consecutive nodes of one CUDA graph, on one stream, overlap by up to about a
/// microsecond (seen: a Triton kernel ending 0.83 µs after the next node, the call's close mark,
/// started; H100, CUDA 13). Work hidden in this slack is at most 2 µs per edge.
pub const EDGE_SLACK_NS: u64 = 2_000;

/// Attribute every activity of `trace` to a call, the harness, or outside.
pub fn attribute(trace: &GpuTrace, requests: &[MarkedRequest]) -> Timeline {
    let mut timeline = Timeline::default();
    // Marker memsets by size: (request, which mark).
    let mut mark_of: HashMap<u64, (usize, Mark)> = HashMap::new();
    for (i, request) in requests.iter().enumerate() {
        if let Some(m) = request.marks {
            mark_of.insert(m.open, (i, Mark::Open));
            mark_of.insert(m.close, (i, Mark::Close));
            mark_of.insert(m.call_open, (i, Mark::CallOpen));
            mark_of.insert(m.call_close, (i, Mark::CallClose));
        }
    }
    let mut seen: BTreeMap<usize, Vec<(Mark, &GpuActivity)>> = BTreeMap::new();
    let mut work: Vec<usize> = Vec::new();
    for (i, activity) in trace.activities.iter().enumerate() {
        let marker = (activity.kind == ActivityKind::Memset && activity.value == Some(0))
            .then(|| activity.bytes.and_then(|b| mark_of.get(&b)))
            .flatten();
        match marker {
            Some(&(request, mark)) => seen.entry(request).or_default().push((mark, activity)),
            None => work.push(i),
        }
    }
    // Request windows and call windows.
    let mut windows: Vec<(usize, u64, u64)> = Vec::new();
    for (i, request) in requests.iter().enumerate() {
        if request.marks.is_none() {
            continue;
        }
        let mut marks = seen.remove(&i).unwrap_or_default();
        marks.sort_by_key(|(_, a)| a.start_ns);
        let opens: Vec<&GpuActivity> = pick(&marks, Mark::Open);
        let closes: Vec<&GpuActivity> = pick(&marks, Mark::Close);
        let (open, close) = match (opens.as_slice(), closes.as_slice()) {
            ([open], [close]) if open.end_ns <= close.start_ns => (*open, *close),
            _ => {
                timeline.mark_problems.push(MarkProblem {
                    request: i,
                    problem: format!(
                        "{} open and {} close marks (one of each, in order, expected)",
                        opens.len(),
                        closes.len()
                    ),
                });
                continue;
            }
        };
        windows.push((i, open.end_ns, close.start_ns));
        let mut pending: Option<&GpuActivity> = None;
        for (mark, activity) in marks.iter().filter(|(m, _)| m.is_call()) {
            if activity.start_ns < open.end_ns || activity.end_ns > close.start_ns {
                timeline.mark_problems.push(MarkProblem {
                    request: i,
                    problem: format!(
                        "a call mark ran outside its request at {}",
                        activity.start_ns
                    ),
                });
                continue;
            }
            match (mark, pending) {
                (Mark::CallOpen, None) => pending = Some(activity),
                (Mark::CallClose, Some(start)) => {
                    timeline.calls.push(CallWindow {
                        request: i,
                        start_ns: start.end_ns,
                        end_ns: activity.start_ns,
                        activities: Vec::new(),
                        busy_ns: 0,
                    });
                    pending = None;
                }
                _ => {
                    timeline.mark_problems.push(MarkProblem {
                        request: i,
                        problem: format!(
                            "call marks out of order at {} (open and close must alternate)",
                            activity.start_ns
                        ),
                    });
                    pending = None;
                }
            }
        }
        if pending.is_some() {
            timeline.mark_problems.push(MarkProblem {
                request: i,
                problem: "a call opened and never closed".to_string(),
            });
        }
    }
    for (request, marks) in seen {
        timeline.mark_problems.push(MarkProblem {
            request,
            problem: format!("{} marks of a request sent without marks", marks.len()),
        });
    }
    windows.sort_by_key(|w| w.1);
    timeline.calls.sort_by_key(|c| c.start_ns);
    let first_open = windows.iter().map(|w| w.1).min();
    for i in work {
        let activity = &trace.activities[i];
        let (start, end) = (activity.start_ns, activity.end_ns);
        if first_open.is_none_or(|first| end <= first) {
            timeline.setup_activities += 1;
            continue;
        }
        // The call whose window holds it, or whose edge it crosses (by more than the slack).
        let call = timeline
            .calls
            .partition_point(|c| c.start_ns <= start + EDGE_SLACK_NS)
            .checked_sub(1);
        if let Some(c) = call {
            let window = &mut timeline.calls[c];
            if end <= window.end_ns + EDGE_SLACK_NS {
                window.activities.push(i);
                continue;
            }
            if start + EDGE_SLACK_NS < window.end_ns {
                timeline.outside.push(OutsideWork {
                    activity: i,
                    place: OutsidePlace::Straddles {
                        request: window.request,
                    },
                });
                continue;
            }
        }
        if let Some(next) = timeline.calls.get(call.map_or(0, |c| c + 1))
            && start < next.start_ns
            && end > next.start_ns + EDGE_SLACK_NS
        {
            timeline.outside.push(OutsideWork {
                activity: i,
                place: OutsidePlace::Straddles {
                    request: next.request,
                },
            });
            continue;
        }
        let place = match windows.iter().find(|w| start < w.2 && end > w.1) {
            Some(&(request, open, close))
                if start + EDGE_SLACK_NS >= open && end <= close + EDGE_SLACK_NS =>
            {
                if harness_work(&requests[request], activity) {
                    timeline.harness_activities += 1;
                    continue;
                }
                OutsidePlace::HarnessStep { request }
            }
            Some(&(request, _, _)) => OutsidePlace::Straddles { request },
            None => OutsidePlace::Idle,
        };
        timeline.outside.push(OutsideWork { activity: i, place });
    }
    for call in &mut timeline.calls {
        call.busy_ns = busy_ns(call.activities.iter().map(|&i| &trace.activities[i]));
    }
    timeline
}

/// Whether `activity`, inside `request` but outside its calls, is what the harness queues there.
fn harness_work(request: &MarkedRequest, activity: &GpuActivity) -> bool {
    match request.op.as_str() {
        "time" => is_harness_timing_work(activity),
        _ => {
            // The poison memsets, and the copy of an output handed over non-contiguous.
            let poison = activity.kind == ActivityKind::Memset
                && activity.value == Some(0xFF)
                && activity
                    .bytes
                    .is_some_and(|b| request.poison_bytes.contains(&b));
            let export_copy = activity.kind == ActivityKind::Kernel
                && activity.name.starts_with("_ZN2at")
                && activity.name.contains("direct_copy_kernel");
            poison || export_copy || activity.kind == ActivityKind::Memcpy
        }
    }
}

/// The union of the activities' GPU intervals (ns).
pub fn busy_ns<'a>(activities: impl Iterator<Item = &'a GpuActivity>) -> u64 {
    let mut spans: Vec<(u64, u64)> = activities.map(|a| (a.start_ns, a.end_ns)).collect();
    spans.sort_unstable();
    let mut total = 0;
    let mut current: Option<(u64, u64)> = None;
    for (start, end) in spans {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                total += e - s;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    total + current.map_or(0, |(s, e)| e - s)
}

/// The multiset of work of one call, sorted (two calls did the same work when equal).
pub fn call_signature(trace: &GpuTrace, call: &CallWindow) -> Vec<WorkKey> {
    let mut keys: Vec<WorkKey> = call
        .activities
        .iter()
        .map(|&i| WorkKey::of(&trace.activities[i]))
        .collect();
    keys.sort();
    keys
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Open,
    Close,
    CallOpen,
    CallClose,
}

impl Mark {
    fn is_call(self) -> bool {
        matches!(self, Mark::CallOpen | Mark::CallClose)
    }
}

fn pick<'a>(marks: &[(Mark, &'a GpuActivity)], which: Mark) -> Vec<&'a GpuActivity> {
    marks
        .iter()
        .filter(|(m, _)| *m == which)
        .map(|(_, a)| *a)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests' times are in units of 10 µs: far above the edge slack.
    const UNIT: u64 = 10_000;

    fn memset(start: u64, bytes: u64, value: u32) -> GpuActivity {
        GpuActivity {
            kind: ActivityKind::Memset,
            correlation: start,
            start_ns: start * UNIT,
            end_ns: (start + 2) * UNIT,
            device: 0,
            stream: 7,
            name: String::new(),
            demangled: None,
            grid: None,
            block: None,
            dynamic_shared_bytes: None,
            bytes: Some(bytes),
            value: Some(value),
            graph: 0,
            thread: Some(1),
        }
    }

    fn kernel(start: u64, end: u64) -> GpuActivity {
        GpuActivity {
            kind: ActivityKind::Kernel,
            name: "_Z1kv".to_string(),
            grid: Some([1, 1, 1]),
            block: Some([32, 1, 1]),
            end_ns: end * UNIT,
            bytes: None,
            value: None,
            ..memset(start, 0, 0)
        }
    }

    const MARKS: RequestMarks = RequestMarks {
        open: 4096,
        close: 8192,
        call_open: 12288,
        call_close: 16384,
    };

    fn call_request() -> Vec<MarkedRequest> {
        vec![MarkedRequest {
            op: "call".to_string(),
            trial: Some(0),
            marks: Some(MARKS),
            poison_bytes: vec![64],
        }]
    }

    #[test]
    fn work_is_placed_by_where_it_ran_between_the_marks() {
        let trace = GpuTrace {
            activities: vec![
                kernel(0, 5),         // setup, before the first mark
                memset(10, 4096, 0),  // open
                memset(20, 64, 0xFF), // the poison: the harness's
                kernel(25, 28),       // in the poison step: not the harness's
                memset(30, 12288, 0), // call open
                kernel(40, 50),       // the call's
                kernel(45, 60),       // the call's, overlapping (counts once)
                memset(70, 16384, 0), // call close
                kernel(71, 80),       // after the call, inside the request
                memset(90, 8192, 0),  // close
                kernel(100, 120),     // idle
                kernel(85, 95),       // across the close mark
            ],
            ..GpuTrace::default()
        };
        let timeline = attribute(&trace, &call_request());
        assert!(
            timeline.mark_problems.is_empty(),
            "{:?}",
            timeline.mark_problems
        );
        assert_eq!(timeline.setup_activities, 1);
        assert_eq!(timeline.harness_activities, 1);
        assert_eq!(timeline.calls.len(), 1);
        assert_eq!(timeline.calls[0].activities, vec![5, 6]);
        assert_eq!(timeline.calls[0].busy_ns, 20 * UNIT);
        let places: Vec<(usize, OutsidePlace)> = timeline
            .outside
            .iter()
            .map(|o| (o.activity, o.place.clone()))
            .collect();
        assert_eq!(
            places,
            vec![
                (3, OutsidePlace::HarnessStep { request: 0 }),
                (8, OutsidePlace::HarnessStep { request: 0 }),
                (10, OutsidePlace::Idle),
                (11, OutsidePlace::Straddles { request: 0 }),
            ]
        );
    }

    #[test]
    fn a_timestamp_overlap_of_a_microsecond_at_a_call_edge_is_not_a_crossing() {
        let in_ns = |a: GpuActivity, start: u64, end: u64| GpuActivity {
            start_ns: start,
            end_ns: end,
            ..a
        };
        let trace = GpuTrace {
            activities: vec![
                memset(10, 4096, 0),
                memset(30, 12288, 0), // the call's window opens at 320 µs
                memset(70, 16384, 0), // and closes at 700 µs
                memset(90, 8192, 0),
                // Ends 0.83 µs after the close mark started (CUPTI's overlap of graph nodes).
                in_ns(kernel(0, 0), 640_000, 700_830),
                // Ends 0.5 µs into the window: the harness's flush before the call.
                in_ns(kernel(0, 0), 250_000, 320_500),
                // Runs 5 µs past the close mark: a crossing.
                in_ns(kernel(0, 0), 650_000, 705_000),
            ],
            ..GpuTrace::default()
        };
        let timeline = attribute(&trace, &call_request());
        assert!(timeline.mark_problems.is_empty());
        assert_eq!(timeline.calls[0].activities, vec![4]);
        let places: Vec<(usize, OutsidePlace)> = timeline
            .outside
            .iter()
            .map(|o| (o.activity, o.place.clone()))
            .collect();
        assert_eq!(
            places,
            vec![
                (5, OutsidePlace::HarnessStep { request: 0 }),
                (6, OutsidePlace::Straddles { request: 0 }),
            ]
        );
    }

    #[test]
    fn forged_or_lost_marks_are_reported_not_trusted() {
        // A second call pair forged by code that read the sizes, and one open never closed.
        let trace = GpuTrace {
            activities: vec![
                memset(10, 4096, 0),
                memset(30, 12288, 0),
                kernel(40, 50),
                memset(60, 12288, 0),
                memset(70, 16384, 0),
                memset(90, 8192, 0),
                memset(100, 8192, 0),
            ],
            ..GpuTrace::default()
        };
        let timeline = attribute(&trace, &call_request());
        assert_eq!(
            timeline.mark_problems.len(),
            1,
            "{:?}",
            timeline.mark_problems
        );
        assert!(timeline.mark_problems[0].problem.contains("2 close"));
        let trace = GpuTrace {
            activities: vec![
                memset(10, 4096, 0),
                memset(30, 12288, 0),
                memset(40, 12288, 0),
                memset(70, 16384, 0),
                memset(90, 8192, 0),
            ],
            ..GpuTrace::default()
        };
        let timeline = attribute(&trace, &call_request());
        assert!(
            timeline
                .mark_problems
                .iter()
                .any(|p| p.problem.contains("out of order")),
            "{:?}",
            timeline.mark_problems
        );
    }
}
