//! [`Profile`]: a list of call-path events, from a [`Session`](super::callpath::Session) or
//! from a profiler run, that aggregates, trees and exports are derived from.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::fields::NORMALIZED_FIELDS;
use crate::model::record::KernelRecord;
use crate::model::run::ProfileRun;
use crate::results::aggregate::{GroupBy, KeyAverages, key_averages};
use crate::results::event::{Event, Frame, FrameKind, ThreadInfo};
use crate::results::roofline::{RooflineInputs, clocks_locked};
use crate::results::tree::CallTree;

/// Events of one session or run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub name: String,
    /// Where the events came from (`ncu`, `polyprof session`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiler: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    pub events: Vec<Event>,
}

/// The file in a run directory that holds the call-path scopes a workload recorded during the
/// run (`polyprof demo` writes it); reports and exports add them under the run's pass.
pub const SCOPES_FILE: &str = "scopes.json";

impl Profile {
    /// The scopes saved in `run_dir` ([`SCOPES_FILE`]); `None` when there are none.
    pub fn read_scopes(run_dir: &std::path::Path) -> crate::model::error::Result<Option<Self>> {
        let path = run_dir.join(SCOPES_FILE);
        // Regular files only: a FIFO named scopes.json would hang `report`.
        let text = match crate::model::input::read_regular(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(crate::model::error::Error::io("read scopes", &path, e)),
        };
        serde_json::from_slice(&text)
            .map(Some)
            .map_err(|source| crate::model::error::Error::Json {
                context: path.display().to_string(),
                source,
            })
    }

    /// A run's kernels as events under `job / pass / process / [segment /] kernel`.
    pub fn from_run(run: &ProfileRun) -> Self {
        Profile {
            name: run.label.clone(),
            profiler: Some(run.profiler.name.clone()),
            device: run.device.as_ref().map(|d| d.name.clone()),
            events: events_from_run(run, &[job_frame(run)]),
        }
    }

    /// PyTorch-style aggregate rows (see [`key_averages`]).
    pub fn key_averages(&self, group_by: GroupBy) -> KeyAverages {
        key_averages(&self.events, group_by)
    }

    /// The call tree with exclusive and inclusive metrics.
    pub fn tree(&self) -> CallTree {
        CallTree::build(&self.name, &self.events)
    }
}

/// The job frame of a run: the target command, program name without its directory, at most 80
/// characters; the run label when the target is empty.
pub fn job_frame(run: &ProfileRun) -> Frame {
    let target = crate::model::arg::lossy(&run.target);
    let mut parts = target.iter();
    let name = match parts.next() {
        None => run.label.clone(),
        Some(program) => {
            let program = std::path::Path::new(program)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| program.clone());
            std::iter::once(program)
                .chain(parts.cloned())
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    Frame::new(truncate(&name, 80), FrameKind::Job)
}

fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max_chars - 1).collect();
    cut.push('…');
    cut
}

/// `app [1579]`, `pid 1579`, `app`; `None` when the record says nothing about its process.
pub fn process_label(record: &KernelRecord) -> Option<String> {
    match (&record.process_name, record.process_id) {
        (Some(name), Some(pid)) => Some(format!("{name} [{pid}]")),
        (None, Some(pid)) => Some(format!("pid {pid}")),
        (Some(name), None) => Some(name.clone()),
        (None, None) => None,
    }
}

fn kernel_label(record: &KernelRecord) -> String {
    if record.short_name.is_empty() {
        record.name.clone()
    } else {
        record.short_name.clone()
    }
}

/// The call path of a record: its own `call_path` when the pipeline filled it, else
/// `job / pass / process / [segment /] kernel` built here. A benchmark segment
/// ([`KernelRecord::segment`]) is a scope frame, so trees and exports show each segment's
/// kernels under it.
pub fn record_path(run: &ProfileRun, record: &KernelRecord, job: &[Frame]) -> Vec<Frame> {
    if !record.call_path.is_empty() {
        return record
            .call_path
            .iter()
            .zip(stamped_kinds(run, record))
            .map(|(name, kind)| Frame::new(name.clone(), kind))
            .collect();
    }
    let mut path = job.to_vec();
    path.push(Frame::new(run.label.clone(), FrameKind::Pass));
    if let Some(process) = process_label(record) {
        path.push(Frame::new(process, FrameKind::Process));
    }
    if let Some(segment) = record.segment() {
        path.push(Frame::new(segment, FrameKind::Scope));
    }
    path.push(Frame::new(kernel_label(record), FrameKind::Kernel));
    path
}

/// The kinds of a stamped path's frames, read from its end the way [`record_path`] built it:
/// kernel, then the segment and the process when the record has them, then the pass (the run
/// label); everything before the pass is the job. A path that does not end that way (written
/// by something else) falls back to positions: job first, kernel last, pass and process second and
/// third of four, scopes otherwise.
fn stamped_kinds(run: &ProfileRun, record: &KernelRecord) -> Vec<FrameKind> {
    let names = &record.call_path;
    let n = names.len();
    let mut kinds = vec![FrameKind::Job; n];
    kinds[n - 1] = FrameKind::Kernel;
    let mut at = n - 1;
    let mut take = |expected: Option<&str>, kind: FrameKind| {
        let hit = at > 0 && expected.is_some_and(|e| names[at - 1] == e);
        if hit {
            at -= 1;
            kinds[at] = kind;
        }
        hit
    };
    take(record.segment(), FrameKind::Scope);
    take(process_label(record).as_deref(), FrameKind::Process);
    if take(Some(&run.label), FrameKind::Pass) {
        return kinds;
    }
    (0..n)
        .map(|i| match (i, n) {
            (i, n) if i + 1 == n => FrameKind::Kernel,
            (0, _) => FrameKind::Job,
            (1, 4) => FrameKind::Pass,
            (2, 4) => FrameKind::Process,
            _ => FrameKind::Scope,
        })
        .collect()
}

/// Fill every record's `call_path` with `job / pass / process / [segment /] kernel` (for the pipeline, so
/// that `run.json` carries the paths).
pub fn stamp_call_paths(run: &mut ProfileRun, job: &[String]) {
    let job: Vec<Frame> = if job.is_empty() {
        vec![job_frame(run)]
    } else {
        job.iter()
            .map(|name| Frame::new(name.clone(), FrameKind::Job))
            .collect()
    };
    let paths: Vec<Vec<String>> = run
        .kernels
        .iter()
        .map(|record| {
            let mut fresh = record.clone();
            fresh.call_path.clear();
            record_path(run, &fresh, &job)
                .into_iter()
                .map(|f| f.name)
                .collect()
        })
        .collect();
    for (record, path) in run.kernels.iter_mut().zip(paths) {
        record.call_path = path;
    }
}

/// One event per kernel record, in record (launch) order, ids from 0; then one CPU event per
/// process attempt of the plan (`job / pass / step`), so a run without kernels (profiler
/// `none`) still shows where its wall time went.
pub fn events_from_run(run: &ProfileRun, job: &[Frame]) -> Vec<Event> {
    let mut events = kernel_events(run, job);
    events.extend(step_events(run, job, events.len() as u64));
    events
}

/// Whether `event` is one of [`events_from_run`]'s process steps (their attributes hold the
/// attempt's `argv` and `outcome`).
pub fn is_process_step(event: &Event) -> bool {
    event.kind() == FrameKind::Scope
        && event.attributes.contains_key(STEP_ARGV)
        && event.attributes.contains_key(STEP_OUTCOME)
}

const STEP_ARGV: &str = "argv";
const STEP_OUTCOME: &str = "outcome";

/// Attempts ran one after the other; each starts where the previous one ended.
fn step_events(run: &ProfileRun, job: &[Frame], first_id: u64) -> Vec<Event> {
    let mut events = Vec::new();
    let mut start_ns = 0.0;
    for step in &run.steps {
        let many = step.attempts.len() > 1;
        for (n, attempt) in step.attempts.iter().enumerate() {
            let wall_ns = attempt.timings.end_s * 1e9;
            let name = if many {
                format!("{} (attempt {})", step.name, n + 1)
            } else {
                step.name.clone()
            };
            let mut call_path = job.to_vec();
            call_path.push(Frame::new(run.label.clone(), FrameKind::Pass));
            call_path.push(Frame::new(name.clone(), FrameKind::Scope));
            let mut attributes = std::collections::BTreeMap::new();
            attributes.insert(STEP_ARGV.to_string(), serde_json::json!(attempt.argv));
            attributes.insert(
                STEP_OUTCOME.to_string(),
                Value::from(attempt.outcome.to_string()),
            );
            events.push(Event {
                id: first_id + events.len() as u64,
                call_path,
                process_id: attempt.pid,
                thread: Some(ThreadInfo {
                    id: 1,
                    name: Some("polyprof runner".to_string()),
                }),
                cpu_start_ns: Some(start_ns),
                cpu_time_ns: Some(wall_ns),
                calls: 1,
                attributes,
                ..Default::default()
            });
            start_ns += wall_ns;
        }
    }
    events
}

/// One event per kernel record, in record order, ids from 0 (no process-step events: a session
/// that adds a run measures CPU time on its own clock).
pub fn kernel_events(run: &ProfileRun, job: &[Frame]) -> Vec<Event> {
    record_events(run, &run.kernels, job)
}

/// One event per memory command (copy, fill, barrier) of the run, `command_kind` among its
/// attributes, for the exports that draw them (the Chrome trace's memory lanes). They are never
/// among a profile's events, so no aggregate, tree, Hatchet or Proton export counts them as
/// kernels.
pub fn memory_events(run: &ProfileRun) -> Vec<Event> {
    let mut events = record_events(run, &run.memory_commands, &[job_frame(run)]);
    for (event, record) in events.iter_mut().zip(&run.memory_commands) {
        event
            .attributes
            .insert("command_kind".into(), Value::from(record.kind.as_str()));
        if let Some(bytes) = record.metric(crate::model::record::MEMORY_BYTES_METRIC) {
            event.attributes.insert("bytes".into(), Value::from(bytes));
        }
    }
    events
}

fn record_events(run: &ProfileRun, records: &[KernelRecord], job: &[Frame]) -> Vec<Event> {
    let clocks_locked = clocks_locked(run);
    records
        .iter()
        .enumerate()
        .map(|(index, record)| {
            let mut event = Event {
                id: index as u64,
                call_path: record_path(run, record, job),
                process_id: record.process_id,
                process_name: record.process_name.clone(),
                device: record.device.clone(),
                stream: record.stream.clone(),
                gpu_start_ns: record.start_ns,
                gpu_time_ns: record.duration_ns,
                calls: record.calls,
                launch_id: Some(record.launch_id),
                flops: record.flops,
                bytes: record.total_dram_bytes(),
                ..Default::default()
            };
            event.attributes = record_attributes(record);
            event.verdict_inputs = Some(RooflineInputs {
                clocks_locked,
                ..RooflineInputs::from_record(record)
            });
            event
        })
        .collect()
}

fn record_attributes(record: &KernelRecord) -> std::collections::BTreeMap<String, Value> {
    let mut attributes = std::collections::BTreeMap::new();
    let mut put = |key: &str, value: Value| {
        attributes.insert(key.to_string(), value);
    };
    put("kernel", Value::from(record.name.clone()));
    put("profiler", Value::from(record.profiler.clone()));
    put("launch_id", Value::from(record.launch_id));
    if let Some(grid) = record.grid {
        put("grid", Value::from(grid.to_vec()));
    }
    if let Some(block) = record.block {
        put("block", Value::from(block.to_vec()));
    }
    // The normalized numbers the event does not hold itself (start, GPU time and bytes it does).
    for field in NORMALIZED_FIELDS.iter().filter(|f| f.attribute) {
        if let Some(value) = (field.get)(record) {
            put(field.name, Value::from(value));
        }
    }
    attributes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> ProfileRun {
        let mut run = ProfileRun::new(
            "ncu.000",
            "ncu",
            &["/opt/bin/app".into(), "1".into()],
            std::path::Path::new("out"),
        );
        run.kernels.push(KernelRecord {
            profiler: "ncu".into(),
            process_id: Some(1579),
            process_name: Some("app".into()),
            name: "void matmul_tiled<32>(const float *, int)".into(),
            short_name: "matmul_tiled<32>".into(),
            duration_ns: Some(247_136.0),
            calls: 1,
            ..Default::default()
        });
        run
    }

    #[test]
    fn run_kernels_sit_under_job_pass_process() {
        let profile = Profile::from_run(&run());
        let event = &profile.events[0];
        assert_eq!(
            event.path_names(),
            ["app 1", "ncu.000", "app [1579]", "matmul_tiled<32>"]
        );
        let kinds: Vec<FrameKind> = event.call_path.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [
                FrameKind::Job,
                FrameKind::Pass,
                FrameKind::Process,
                FrameKind::Kernel
            ]
        );
        assert_eq!(event.gpu_time_ns, Some(247_136.0));
        assert_eq!(
            event.attributes["kernel"],
            "void matmul_tiled<32>(const float *, int)"
        );
    }

    #[test]
    fn stamped_paths_round_trip_through_the_record() {
        let mut run = run();
        stamp_call_paths(&mut run, &["candidate-3".to_string()]);
        assert_eq!(
            run.kernels[0].call_path,
            ["candidate-3", "ncu.000", "app [1579]", "matmul_tiled<32>"]
        );
        let profile = Profile::from_run(&run);
        assert_eq!(profile.events[0].call_path[2].kind, FrameKind::Process);
    }

    /// The frame kinds of the first event's call path.
    fn first_event_kinds(run: &ProfileRun) -> Vec<FrameKind> {
        Profile::from_run(run).events[0]
            .call_path
            .iter()
            .map(|f| f.kind)
            .collect()
    }

    fn with_segment(mut run: ProfileRun, label: &str) -> ProfileRun {
        use crate::model::record::{Metric, MetricValue, SEGMENT_METRIC};
        run.kernels[0].metrics.insert(
            SEGMENT_METRIC.into(),
            Metric {
                value: MetricValue::Text(label.into()),
                unit: "".into(),
            },
        );
        run
    }

    #[test]
    fn a_benchmark_segment_is_a_scope_between_process_and_kernel() {
        let run = with_segment(run(), "test_mm[512]");
        let event = &Profile::from_run(&run).events[0];
        assert_eq!(
            event.path_names(),
            [
                "app 1",
                "ncu.000",
                "app [1579]",
                "test_mm[512]",
                "matmul_tiled<32>"
            ]
        );
        assert_eq!(event.call_path[3].kind, FrameKind::Scope);

        // Stamped by the pipeline (two job frames here), the kinds are read back the same way.
        let mut stamped = run.clone();
        stamp_call_paths(
            &mut stamped,
            &["sweep".to_string(), "candidate-3".to_string()],
        );
        assert_eq!(stamped.kernels[0].call_path.len(), 6);
        let kinds = first_event_kinds(&stamped);
        assert_eq!(
            kinds,
            [
                FrameKind::Job,
                FrameKind::Job,
                FrameKind::Pass,
                FrameKind::Process,
                FrameKind::Scope,
                FrameKind::Kernel
            ]
        );

        // Without a process, the segment is still the scope and the pass is still found.
        let mut bare = run.clone();
        bare.kernels[0].process_id = None;
        bare.kernels[0].process_name = None;
        stamp_call_paths(&mut bare, &[]);
        let kinds = first_event_kinds(&bare);
        assert_eq!(
            kinds,
            [
                FrameKind::Job,
                FrameKind::Pass,
                FrameKind::Scope,
                FrameKind::Kernel
            ]
        );
    }

    #[test]
    fn long_targets_are_cut() {
        let mut run = run();
        run.target = vec!["python3".into(), "x".repeat(200).into()];
        let frame = job_frame(&run);
        assert_eq!(frame.name.chars().count(), 80);
        assert!(frame.name.ends_with('…'));
    }
}
