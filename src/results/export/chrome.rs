//! Chrome trace / Perfetto JSON (`{"traceEvents": [...]}`).
//!
//! - `X` events with `ts`/`dur` in fractional µs. CPU events (scopes) are on the session clock,
//!   GPU events (kernels) on the profiler's clock; each clock is rebased to its own first event,
//!   so every `ts` ≥ 0. The two clocks are not aligned with each other.
//! - One lane (`tid`) per CPU thread and one per GPU stream/queue within each process (`pid`),
//!   named by `M` events. Kernels never overlap on a lane and scopes only nest; work that would
//!   break this (overlapping records on one stream) goes to an extra lane named `… #2`.
//! - Records without a start time (Nsight Compute replays kernels one by one and records none)
//!   are laid out back to back in launch order per stream; the process label and
//!   `otherData.kernel_timing` say so.
//! - Metrics go into `args` (`args.metrics`), the call path into `args.call_stack`.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use crate::model::error::Result;
use crate::results::event::{Event, FrameKind};
use crate::results::export::table::describe_outcome;
use crate::results::export::{Exporter, Format, Report, write_json};
use crate::results::roofline;

/// Where an `X` event goes before lanes are split.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum LaneKey {
    Cpu {
        thread: u64,
        name: Option<String>,
    },
    Gpu {
        device: String,
        stream: String,
    },
    /// Memory copies, fills and barriers of one device, apart from its kernels.
    Memory {
        device: String,
    },
}

impl LaneKey {
    fn label(&self) -> String {
        match self {
            LaneKey::Cpu { thread, name } => match name {
                Some(name) => format!("CPU thread {thread} ({name})"),
                None => format!("CPU thread {thread}"),
            },
            LaneKey::Gpu { device, stream } => {
                let device = if device.is_empty() {
                    String::new()
                } else {
                    format!(" {device}")
                };
                if stream.is_empty() {
                    format!("GPU{device} default stream")
                } else {
                    format!("GPU{device} stream {stream}")
                }
            }
            LaneKey::Memory { device } if device.is_empty() => "GPU memory commands".to_string(),
            LaneKey::Memory { device } => format!("GPU {device} memory commands"),
        }
    }

    /// Kernels on a GPU lane never nest; CPU scopes may.
    fn allows_nesting(&self) -> bool {
        matches!(self, LaneKey::Cpu { .. })
    }
}

struct Slice<'a> {
    event: &'a Event,
    ts: f64,
    dur: f64,
    gpu: bool,
    sequential: bool,
    /// The category of a memory command (`memory_copy`, …); kernels and scopes have none.
    command: Option<&'static str>,
}

fn process_label(event: &Event, fallback: &str) -> String {
    match (&event.process_name, event.process_id) {
        (Some(name), Some(pid)) => format!("{name} [{pid}]"),
        (None, Some(pid)) => format!("pid {pid}"),
        _ => fallback.to_string(),
    }
}

/// Split a lane's slices into sub-lanes so that slices on one sub-lane only follow each other or
/// (where allowed) nest. Returns the sub-lane index of each slice, by position in `slices`.
fn assign_sublanes(slices: &[&Slice], nesting: bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..slices.len()).collect();
    order.sort_by(|&a, &b| {
        slices[a]
            .ts
            .total_cmp(&slices[b].ts)
            .then(slices[b].dur.total_cmp(&slices[a].dur))
    });
    // Per sub-lane, the ends of the slices still open at the current point.
    let mut open: Vec<Vec<f64>> = Vec::new();
    let mut assigned = vec![0; slices.len()];
    for index in order {
        let (ts, end) = (slices[index].ts, slices[index].ts + slices[index].dur);
        let mut placed = None;
        for (lane, stack) in open.iter_mut().enumerate() {
            while stack.last().is_some_and(|&top| top <= ts) {
                stack.pop();
            }
            let fits = match stack.last() {
                None => true,
                Some(&top) => nesting && end <= top,
            };
            if fits {
                stack.push(end);
                placed = Some(lane);
                break;
            }
        }
        assigned[index] = placed.unwrap_or_else(|| {
            open.push(vec![end]);
            open.len() - 1
        });
    }
    assigned
}

/// `args` of an `X` event, serialized straight from the event (no intermediate JSON tree: a
/// trace can hold 10^5 kernels).
struct Args<'a> {
    event: &'a Event,
    sequential: bool,
}

/// `args.metrics`: times, FLOPs, bytes, derived throughput and user metrics.
struct Metrics<'a>(&'a Event);

impl Serialize for Metrics<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let event = self.0;
        let point = roofline::evaluate(None, &event.flops, event.bytes, event.gpu_time_ns);
        let mut map = serializer.serialize_map(None)?;
        let numbers = [
            ("gpu_time_ns", event.gpu_time_ns),
            ("cpu_time_ns", event.cpu_time_ns),
            ("flops16", event.flops.by_width(16)),
            ("flops32", event.flops.by_width(32)),
            ("flops64", event.flops.by_width(64)),
            ("bytes", event.bytes),
            ("gflops_per_s", point.gflops_per_s),
            ("gb_per_s", point.gb_per_s),
        ];
        for (name, value) in numbers {
            if let Some(value) = value {
                map.serialize_entry(name, &value)?;
            }
        }
        for (name, value) in &event.metrics {
            if !numbers.iter().any(|(n, _)| n == name) {
                map.serialize_entry(name, value)?;
            }
        }
        map.end()
    }
}

const SEQUENTIAL_NOTE: &str =
    "no start time recorded: placed after the previous kernel of its stream";

impl Serialize for Args<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let event = self.event;
        let mut map = serializer.serialize_map(None)?;
        let names: Vec<&str> = event.call_path.iter().map(|f| f.name.as_str()).collect();
        map.serialize_entry("call_stack", &names)?;
        map.serialize_entry("calls", &event.calls)?;
        let mut written = vec!["call_stack", "calls", "metrics"];
        if let Some(id) = event.launch_id {
            map.serialize_entry("launch_id", &id)?;
            written.push("launch_id");
        }
        if let Some(device) = &event.device {
            map.serialize_entry("device", device)?;
            written.push("device");
        }
        if let Some(stream) = &event.stream {
            map.serialize_entry("stream", stream)?;
            written.push("stream");
        }
        if self.sequential {
            map.serialize_entry("timing", SEQUENTIAL_NOTE)?;
            written.push("timing");
        }
        for (name, value) in &event.attributes {
            if !written.contains(&name.as_str()) {
                map.serialize_entry(name, value)?;
            }
        }
        map.serialize_entry("metrics", &Metrics(event))?;
        map.end()
    }
}

/// One `X` event placed on its lane.
struct Complete<'a> {
    slice: Slice<'a>,
    pid: u32,
    tid: u64,
}

impl Serialize for Complete<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let slice = &self.slice;
        let kind = if slice.gpu {
            FrameKind::Kernel
        } else {
            slice.event.kind()
        };
        let mut map = serializer.serialize_map(Some(8))?;
        map.serialize_entry("name", slice.event.name())?;
        map.serialize_entry("cat", slice.command.unwrap_or_else(|| category(kind)))?;
        map.serialize_entry("ph", "X")?;
        map.serialize_entry("ts", &slice.ts)?;
        map.serialize_entry("dur", &slice.dur)?;
        map.serialize_entry("pid", &self.pid)?;
        map.serialize_entry("tid", &self.tid)?;
        map.serialize_entry(
            "args",
            &Args {
                event: slice.event,
                sequential: slice.sequential,
            },
        )?;
        map.end()
    }
}

/// The trace document: `M` events first, then the `X` events.
pub struct Trace<'a> {
    other: Map<String, Value>,
    meta: Vec<Value>,
    complete: Vec<Complete<'a>>,
}

struct Events<'t, 'a>(&'t Trace<'a>);

impl Serialize for Events<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.meta.len() + self.0.complete.len()))?;
        for meta in &self.0.meta {
            seq.serialize_element(meta)?;
        }
        for complete in &self.0.complete {
            seq.serialize_element(complete)?;
        }
        seq.end()
    }
}

impl Serialize for Trace<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("displayTimeUnit", "ns")?;
        map.serialize_entry("otherData", &self.other)?;
        map.serialize_entry("traceEvents", &Events(self))?;
        map.end()
    }
}

fn category(kind: FrameKind) -> &'static str {
    match kind {
        FrameKind::Kernel => "kernel",
        FrameKind::Function => "function",
        _ => "scope",
    }
}

/// The trace document of a report, as JSON.
pub fn trace(report: &Report) -> Value {
    serde_json::to_value(build(report)).unwrap_or(Value::Null)
}

/// Where a GPU slice of `dur_ns` goes on `lane`, in µs (start, duration, sequential): at its own
/// start on the GPU clock when it has one, else right after what the lane already holds.
fn place_gpu(
    cursors: &mut BTreeMap<(u32, LaneKey), f64>,
    lane: &(u32, LaneKey),
    start_ns: Option<f64>,
    dur_ns: f64,
    gpu_base: f64,
) -> (f64, f64, bool) {
    let dur = dur_ns.max(0.0) / 1e3;
    let cursor = cursors.entry(lane.clone()).or_insert(0.0);
    let (ts, sequential) = match start_ns {
        Some(start) => ((start - gpu_base) / 1e3, false),
        None => (*cursor, true),
    };
    *cursor = cursor.max(ts + dur);
    (ts, dur, sequential)
}

/// The trace document of a report, ready to serialize.
pub fn build(report: &Report) -> Trace<'_> {
    let events = &report.profile.events;
    let cpu_base = events
        .iter()
        .filter(|e| e.cpu_time_ns.is_some())
        .filter_map(|e| e.cpu_start_ns)
        .min_by(f64::total_cmp)
        .unwrap_or(0.0);
    // Memory commands share the GPU clock: the first of either is the origin.
    let gpu_base = events
        .iter()
        .chain(&report.memory_events)
        .filter(|e| e.gpu_time_ns.is_some())
        .filter_map(|e| e.gpu_start_ns)
        .min_by(f64::total_cmp)
        .unwrap_or(0.0);

    // Slices per (pid, lane), in event order; timeless work is counted, not drawn.
    let mut lanes: BTreeMap<(u32, LaneKey), Vec<Slice>> = BTreeMap::new();
    let mut process_names: BTreeMap<u32, String> = BTreeMap::new();
    let mut cursors: BTreeMap<(u32, LaneKey), f64> = BTreeMap::new();
    let mut untimed = 0usize;
    let mut sequential_pids: BTreeMap<u32, usize> = BTreeMap::new();
    for event in events {
        let pid = event.process_id.unwrap_or(0);
        process_names
            .entry(pid)
            .or_insert_with(|| process_label(event, &report.profile.name));
        let mut drawn = false;
        if let (Some(start), Some(dur)) = (event.cpu_start_ns, event.cpu_time_ns) {
            let thread = event.thread.clone();
            let key = LaneKey::Cpu {
                thread: thread.as_ref().map_or(0, |t| t.id),
                name: thread.and_then(|t| t.name),
            };
            lanes.entry((pid, key)).or_default().push(Slice {
                event,
                ts: (start - cpu_base) / 1e3,
                dur: dur.max(0.0) / 1e3,
                gpu: false,
                sequential: false,
                command: None,
            });
            drawn = true;
        }
        if let Some(dur) = event.gpu_time_ns {
            let key = LaneKey::Gpu {
                device: event.device.clone().unwrap_or_default(),
                stream: event.stream.clone().unwrap_or_default(),
            };
            let lane = (pid, key);
            let (ts, dur, sequential) =
                place_gpu(&mut cursors, &lane, event.gpu_start_ns, dur, gpu_base);
            if sequential {
                *sequential_pids.entry(pid).or_insert(0) += 1;
            }
            lanes.entry(lane).or_default().push(Slice {
                event,
                ts,
                dur,
                gpu: true,
                sequential,
                command: None,
            });
            drawn = true;
        }
        if !drawn {
            untimed += 1;
        }
    }
    // Memory commands on their own lane per process and device, after the kernel lanes.
    for event in &report.memory_events {
        let Some(dur) = event.gpu_time_ns else {
            untimed += 1;
            continue;
        };
        let pid = event.process_id.unwrap_or(0);
        process_names
            .entry(pid)
            .or_insert_with(|| process_label(event, &report.profile.name));
        let lane = (
            pid,
            LaneKey::Memory {
                device: event.device.clone().unwrap_or_default(),
            },
        );
        let (ts, dur, sequential) =
            place_gpu(&mut cursors, &lane, event.gpu_start_ns, dur, gpu_base);
        let command = match event.attributes.get("command_kind").and_then(Value::as_str) {
            Some("memory_fill") => "memory_fill",
            Some("barrier") => "barrier",
            _ => "memory_copy",
        };
        lanes.entry(lane).or_default().push(Slice {
            event,
            ts,
            dur,
            gpu: true,
            sequential,
            command: Some(command),
        });
    }

    let mut trace_events: Vec<Value> = Vec::new();
    for (pid, name) in &process_names {
        trace_events.push(json!({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}}));
        trace_events.push(json!({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}}));
        if let Some(count) = sequential_pids.get(pid) {
            let profiler = report.profile.profiler.as_deref().unwrap_or("the profiler");
            trace_events.push(json!({"name": "process_labels", "ph": "M", "pid": pid, "tid": 0, "args": {"labels": format!(
                "{count} kernels without start times from {profiler}: laid out back to back in launch order per stream; gaps between kernels are not measured")}}));
        }
    }
    let mut next_tid: BTreeMap<u32, u64> = BTreeMap::new();
    let mut complete: Vec<Complete> = Vec::with_capacity(events.len());
    for ((pid, key), slices) in lanes {
        let refs: Vec<&Slice> = slices.iter().collect();
        let sublanes = assign_sublanes(&refs, key.allows_nesting());
        let count = sublanes.iter().max().map_or(0, |m| m + 1);
        let tids: Vec<u64> = (0..count)
            .map(|_| {
                let tid = next_tid.entry(pid).or_insert(0);
                *tid += 1;
                *tid
            })
            .collect();
        for (sub, tid) in tids.iter().enumerate() {
            let name = if sub == 0 {
                key.label()
            } else {
                format!("{} #{}", key.label(), sub + 1)
            };
            trace_events.push(json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}));
            trace_events.push(json!({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": tid}}));
        }
        for (slice, sub) in slices.into_iter().zip(&sublanes) {
            complete.push(Complete {
                slice,
                pid,
                tid: tids[*sub],
            });
        }
    }

    let mut other = Map::new();
    other.insert(
        "generator".into(),
        json!(format!("polyprof {}", env!("CARGO_PKG_VERSION"))),
    );
    other.insert("profile".into(), json!(report.profile.name));
    if let Some(profiler) = &report.profile.profiler {
        other.insert("profiler".into(), json!(profiler));
    }
    if let Some(device) = report.device_name() {
        other.insert("device".into(), json!(device));
    }
    if let Some(run) = &report.run {
        other.insert("target".into(), json!(run.target));
        other.insert("started_unix_s".into(), json!(run.started_unix_s));
        if let Some(outcome) = &run.outcome {
            other.insert("outcome".into(), json!(describe_outcome(outcome)));
        }
    }
    let sequential: usize = sequential_pids.values().sum();
    other.insert(
        "kernel_timing".into(),
        json!(if sequential > 0 {
            "sequential: the profiler recorded no start times; kernels are laid out back to back in launch order per stream"
        } else {
            "measured: kernel start times from the profiler, rebased to the first kernel"
        }),
    );
    other.insert(
        "clocks".into(),
        json!("CPU events: session clock, rebased to the first CPU event; GPU events: profiler clock, rebased to the first kernel; the two are not aligned"),
    );
    if untimed > 0 {
        other.insert("events_without_time".into(), json!(untimed));
    }
    Trace {
        other,
        meta: trace_events,
        complete,
    }
}

pub struct ChromeExporter;

impl Exporter for ChromeExporter {
    fn format(&self) -> Format {
        Format::Chrome
    }

    fn export(&self, report: &Report, out: &mut dyn Write) -> Result<()> {
        write_json(&build(report), out, "Chrome trace", false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::event::Frame;
    use crate::results::profile::Profile;

    fn kernel(id: u64, stream: &str, start: Option<f64>, dur: f64) -> Event {
        Event {
            id,
            call_path: vec![Frame::new(format!("k{id}"), FrameKind::Kernel)],
            process_id: Some(9),
            stream: Some(stream.into()),
            gpu_start_ns: start,
            gpu_time_ns: Some(dur),
            calls: 1,
            ..Default::default()
        }
    }

    fn x_events(trace: &Value) -> Vec<&Value> {
        trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect()
    }

    fn report(events: Vec<Event>) -> Report {
        Report::from_profile(
            Profile {
                name: "p".into(),
                profiler: Some("test".into()),
                device: None,
                events,
            },
            None,
        )
    }

    #[test]
    fn startless_kernels_are_laid_out_back_to_back_per_stream() {
        let trace = trace(&report(vec![
            kernel(0, "7", None, 1_500.0),
            kernel(1, "8", None, 500.0),
            kernel(2, "7", None, 250.5),
        ]));
        let xs = x_events(&trace);
        let k2 = xs.iter().find(|e| e["name"] == "k2").unwrap();
        assert_eq!(k2["ts"].as_f64(), Some(1.5));
        assert_eq!(k2["dur"].as_f64(), Some(0.2505));
        let k1 = xs.iter().find(|e| e["name"] == "k1").unwrap();
        assert_eq!(k1["ts"].as_f64(), Some(0.0));
        assert_ne!(k1["tid"], k2["tid"]);
        assert!(
            trace["otherData"]["kernel_timing"]
                .as_str()
                .unwrap()
                .starts_with("sequential")
        );
    }

    #[test]
    fn overlapping_kernels_on_one_stream_get_a_second_lane() {
        let trace = trace(&report(vec![
            kernel(0, "7", Some(1_000_000.0), 2_000.0),
            kernel(1, "7", Some(1_001_000.0), 2_000.0),
            kernel(2, "7", Some(1_003_000.0), 10.0),
        ]));
        let xs = x_events(&trace);
        assert_eq!(xs[0]["ts"].as_f64(), Some(0.0));
        assert_ne!(xs[0]["tid"], xs[1]["tid"]);
        assert_eq!(xs[0]["tid"], xs[2]["tid"]);
        let names: Vec<&str> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["GPU stream 7", "GPU stream 7 #2"]);
    }

    #[test]
    fn nested_scopes_share_a_lane_but_partial_overlaps_do_not() {
        let scope = |id: u64, start: f64, dur: f64| Event {
            id,
            call_path: vec![Frame::new(format!("s{id}"), FrameKind::Scope)],
            thread: Some(crate::results::event::ThreadInfo { id: 1, name: None }),
            cpu_start_ns: Some(start),
            cpu_time_ns: Some(dur),
            calls: 1,
            ..Default::default()
        };
        let trace = trace(&report(vec![
            scope(0, 100.0, 1_000.0),
            scope(1, 200.0, 300.0),
            scope(2, 900.0, 500.0),
        ]));
        let xs = x_events(&trace);
        assert_eq!(xs[0]["tid"], xs[1]["tid"]);
        assert_ne!(xs[0]["tid"], xs[2]["tid"]);
        assert_eq!(xs[0]["ts"].as_f64(), Some(0.0));
        assert_eq!(xs[0]["cat"], "scope");
    }
}
