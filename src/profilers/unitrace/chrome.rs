//! Unitrace's Chrome/Perfetto timeline (`--chrome-kernel-logging`, `--chrome-itt-logging`):
//! `{ "traceEvents":[` then one event per line, each after a comma. Device commands are
//! `"ph": "X"` with `"cat": "gpu_op"` and `args.id` (the kernel instance id the metric CSV calls
//! `GlobalInstanceId`); host calls and ITT tasks are `cpu_op`, ITT tasks named
//! `<domain>::<task>` (`itt_collector.h`). `ts`/`dur` are µs with ns fractions.
//!
//! Read event by event: NUL bytes (left by an interrupted write) are removed first, and a
//! truncated file yields every complete event before the cut plus a warning.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::lines::Warnings;
use crate::model::error::{Error, Result};
use crate::model::number::{self, BadNumbers};
use crate::model::parsed::{Diagnostic, Severity};

/// Name of the ITT task the benchmark harness wraps each timed loop in.
pub const BENCHMARK_TASK: &str = "model run loop";

/// One complete event (`X`, or a matched `B`/`E` pair), times in µs.
#[derive(Debug, Clone, PartialEq)]
pub struct ChromeEvent {
    pub name: String,
    pub cat: String,
    pub ts_us: f64,
    pub dur_us: f64,
    pub pid: i64,
    pub tid: i64,
    /// `args.id`: the kernel instance id of a device command.
    pub instance_id: Option<u64>,
}

impl ChromeEvent {
    pub fn is_device_command(&self) -> bool {
        self.cat == "gpu_op"
    }

    pub fn end_us(&self) -> f64 {
        self.ts_us + self.dur_us
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChromeTrace {
    /// Complete events in file order.
    pub events: Vec<ChromeEvent>,
    /// `process_name` metadata: device processes read `DEVICE<host>[name] pci #id`.
    pub process_names: BTreeMap<i64, String>,
    /// `thread_name` metadata: device tracks read `Thread <tid> <engine><ordinal,index>`.
    pub thread_names: BTreeMap<(i64, i64), String>,
    /// The file ended before its closing `]`.
    pub truncated: bool,
    pub diagnostics: Vec<Diagnostic>,
}

impl ChromeTrace {
    pub fn device_commands(&self) -> impl Iterator<Item = &ChromeEvent> {
        self.events.iter().filter(|e| e.is_device_command())
    }
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(default)]
    name: String,
    #[serde(default)]
    ph: String,
    #[serde(default)]
    cat: String,
    #[serde(default)]
    ts: Option<f64>,
    #[serde(default)]
    dur: Option<f64>,
    #[serde(default)]
    pid: Option<Value>,
    #[serde(default)]
    tid: Option<Value>,
    #[serde(default)]
    args: Option<Value>,
}

fn int(value: &Option<Value>) -> i64 {
    match value {
        Some(Value::Number(n)) => n.as_i64().unwrap_or_default(),
        Some(Value::String(s)) => s.parse().unwrap_or_default(),
        _ => 0,
    }
}

/// Parse a unitrace Chrome JSON file. Fails only when no event array can be found at all.
pub fn parse_chrome(bytes: &[u8], context: &str) -> Result<ChromeTrace> {
    let cleaned: Vec<u8>;
    let mut nul_bytes = 0;
    let bytes = if bytes.contains(&0) {
        cleaned = bytes.iter().copied().filter(|&b| b != 0).collect();
        nul_bytes = bytes.len() - cleaned.len();
        &cleaned[..]
    } else {
        bytes
    };
    let text = String::from_utf8_lossy(bytes);
    let start = events_start(&text).ok_or_else(|| Error::Parse {
        context: context.to_string(),
        message: "no `traceEvents` array; this is not a Chrome trace from unitrace \
                  (`--chrome-kernel-logging`)"
            .into(),
    })?;
    let mut trace = ChromeTrace::default();
    let mut warnings = Warnings::default();
    let mut bad = BadNumbers::new(context);
    if nul_bytes > 0 {
        warnings.push(
            "unitrace_nul_bytes",
            format!("{context}: removed {nul_bytes} NUL bytes before parsing"),
            Some("unitrace was probably stopped while writing; the events around them may be cut"),
        );
    }
    // Open `B` events per (pid, tid), matched by the next `E`.
    let mut open: BTreeMap<(i64, i64), Vec<RawEvent>> = BTreeMap::new();
    let mut at = start;
    let rest = text.as_bytes();
    loop {
        while at < rest.len() && matches!(rest[at], b' ' | b'\n' | b'\r' | b'\t' | b',') {
            at += 1;
        }
        if at >= rest.len() {
            trace.truncated = true;
            break;
        }
        if rest[at] == b']' {
            break;
        }
        let mut stream = serde_json::Deserializer::from_str(&text[at..]).into_iter::<RawEvent>();
        match stream.next() {
            Some(Ok(raw)) => {
                let offset = at;
                at += stream.byte_offset();
                let before = trace.events.len();
                add_event(&mut trace, &mut open, raw);
                // A duration that cannot be: named, and left unmeasured in the record.
                if let Some(event) = trace.events.get(before)
                    && let Err(problem) = number::check(event.dur_us * 1000.0)
                {
                    bad.note_at(
                        &format!("event at byte {offset}"),
                        "dur",
                        &event.dur_us.to_string(),
                        problem,
                    );
                }
            }
            Some(Err(e)) if e.is_eof() => {
                trace.truncated = true;
                break;
            }
            Some(Err(e)) => {
                trace.truncated = true;
                warnings.push(
                    "unitrace_bad_chrome_event",
                    format!("{context}: stopped at byte {at}: {e}"),
                    None,
                );
                break;
            }
            None => {
                trace.truncated = true;
                break;
            }
        }
    }
    let mut diagnostics = warnings.finish("Chrome trace");
    diagnostics.extend(bad.into_diagnostics());
    if trace.truncated {
        diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            metric: None,
            kind: "unitrace_truncated_timeline".into(),
            message: format!(
                "{context} is truncated; kept the {} complete events before the cut",
                trace.events.len()
            ),
            hint: Some(
                "unitrace writes the timeline as the process exits; pass \
                 `--teardown-on-signal 15` and give it time to flush before it is killed"
                    .into(),
            ),
        });
    }
    trace.diagnostics = diagnostics;
    Ok(trace)
}

/// Byte offset just after the `[` that opens the event array.
fn events_start(text: &str) -> Option<usize> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        return Some(text.len() - trimmed.len() + 1);
    }
    let key = text.find("\"traceEvents\"")?;
    let open = text[key..].find('[')?;
    Some(key + open + 1)
}

fn add_event(
    trace: &mut ChromeTrace,
    open: &mut BTreeMap<(i64, i64), Vec<RawEvent>>,
    raw: RawEvent,
) {
    let (pid, tid) = (int(&raw.pid), int(&raw.tid));
    match raw.ph.as_str() {
        "M" => {
            let name = raw
                .args
                .as_ref()
                .and_then(|a| a.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            match raw.name.as_str() {
                "process_name" => {
                    trace.process_names.insert(pid, name);
                }
                "thread_name" => {
                    trace.thread_names.insert((pid, tid), name);
                }
                _ => {}
            }
        }
        "X" => {
            let event = complete(raw, None, pid, tid);
            trace.events.push(event);
        }
        "B" => open.entry((pid, tid)).or_default().push(raw),
        "E" => {
            if let Some(begin) = open.get_mut(&(pid, tid)).and_then(Vec::pop) {
                let end = raw.ts;
                trace.events.push(complete(begin, end, pid, tid));
            }
        }
        _ => {}
    }
}

fn complete(raw: RawEvent, end_ts: Option<f64>, pid: i64, tid: i64) -> ChromeEvent {
    let ts = raw.ts.unwrap_or_default();
    let dur = match end_ts {
        Some(end) => (end - ts).max(0.0),
        None => raw.dur.unwrap_or_default(),
    };
    let instance_id = raw
        .args
        .as_ref()
        .and_then(|a| a.get("id"))
        .and_then(|id| match id {
            Value::String(s) => s.parse().ok(),
            Value::Number(n) => n.as_u64(),
            _ => None,
        });
    ChromeEvent {
        name: raw.name,
        cat: raw.cat,
        ts_us: ts,
        dur_us: dur,
        pid,
        tid,
        instance_id,
    }
}

/// The GPU's name in a device track's process name,
/// `DEVICE<host>[Intel(R) Data Center GPU Max 1100] 0:29:0:0 #0` → `Intel(R) Data Center GPU Max
/// 1100` (`chromelogger.h`); the whole text when it has no bracketed name.
pub fn device_name(process_name: &str) -> &str {
    process_name
        .split_once("]")
        .and_then(|(head, _)| head.rsplit_once('['))
        .map(|(_, name)| name.trim())
        .filter(|name| !name.is_empty())
        .unwrap_or(process_name)
}

/// One timed loop of the benchmark harness: an ITT task `[domain::]model run loop[::label]`
/// and the device commands that started inside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// The task name after `model run loop::`, when there is one.
    pub label: Option<String>,
    pub start_us: f64,
    pub end_us: f64,
    /// Indexes into [`ChromeTrace::events`].
    pub commands: Vec<usize>,
}

/// The label of an ITT benchmark task, `Some(None)` for an unlabelled one, `None` for other
/// events. Unitrace names ITT tasks `<domain>::<task>`, so the domain is skipped.
pub fn benchmark_label(name: &str) -> Option<Option<&str>> {
    let at = name.find(BENCHMARK_TASK)?;
    let before = &name[..at];
    if !(before.is_empty() || before.ends_with("::")) {
        return None;
    }
    let after = &name[at + BENCHMARK_TASK.len()..];
    if after.is_empty() {
        return Some(None);
    }
    after.strip_prefix("::").map(Some)
}

/// Slice the device commands into benchmark segments, in time order. A command belongs to the
/// segment whose task window contains its start (device and host times share unitrace's epoch
/// clock); nested tasks give the command to the innermost one.
pub fn benchmark_segments(trace: &ChromeTrace) -> Vec<Segment> {
    let mut segments: Vec<Segment> = trace
        .events
        .iter()
        .filter(|e| !e.is_device_command())
        .filter_map(|e| {
            let label = benchmark_label(&e.name)?;
            Some(Segment {
                label: label.map(String::from),
                start_us: e.ts_us,
                end_us: e.end_us(),
                commands: Vec::new(),
            })
        })
        .collect();
    segments.sort_by(|a, b| a.start_us.total_cmp(&b.start_us));
    for (index, event) in trace.events.iter().enumerate() {
        if !event.is_device_command() {
            continue;
        }
        let inner = segments
            .iter_mut()
            .filter(|s| s.start_us <= event.ts_us && event.ts_us <= s.end_us)
            .min_by(|a, b| (a.end_us - a.start_us).total_cmp(&(b.end_us - b.start_us)));
        if let Some(segment) = inner {
            segment.commands.push(index);
        }
    }
    segments
}

/// Which of several timeline files was taken, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineChoice {
    pub index: usize,
    pub reason: String,
}

/// The process a timeline file belongs to, from unitrace's naming `<app>.<pid>[.<rank>].json`:
/// `python3.11.4242.json` → (`python3.11`, 4242). With two trailing numbers the larger is the
/// pid: an MPI rank is small, and an app name may end in a version (`python3.11`).
pub fn timeline_process(file_name: &str) -> Option<(String, u32)> {
    let stem = file_name.rsplit('/').next()?.strip_suffix(".json")?;
    let (rest, last) = stem.rsplit_once('.')?;
    let last: u32 = last.parse().ok()?;
    let (app, pid) = match rest.rsplit_once('.') {
        Some((app, before)) => match before.parse::<u32>() {
            Ok(before) if before > last => (app, before),
            _ => (rest, last),
        },
        None => (rest, last),
    };
    (!app.is_empty()).then(|| (app.to_string(), pid))
}

/// Choose the profiled process's timeline among unitrace's `<app>.<pid>.json` files: a python
/// process before helpers such as `ninja`; among those, one with benchmark tasks; then the one
/// with the most device commands; then the largest.
pub fn choose_timeline(candidates: &[(&str, &[u8])]) -> Option<TimelineChoice> {
    let facts: Vec<(bool, bool, usize, usize)> = candidates
        .iter()
        .map(|(name, bytes)| {
            (
                app_name(name).contains("python"),
                contains(bytes, BENCHMARK_TASK.as_bytes()),
                count(bytes, b"\"gpu_op\""),
                bytes.len(),
            )
        })
        .collect();
    let index = (0..candidates.len()).max_by(|&a, &b| facts[a].cmp(&facts[b]).then(b.cmp(&a)))?;
    let (python, tasks, commands, size) = facts[index];
    let name = candidates[index].0;
    if candidates.len() == 1 {
        return Some(TimelineChoice {
            index,
            reason: format!("`{name}` is the only timeline"),
        });
    }
    let mut why = Vec::new();
    if python {
        why.push("a python process".to_string());
    }
    if tasks {
        why.push(format!("has `{BENCHMARK_TASK}` tasks"));
    }
    why.push(format!("{commands} device commands"));
    why.push(format!("{size} bytes"));
    let others: Vec<&str> = candidates
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, (n, _))| *n)
        .collect();
    Some(TimelineChoice {
        index,
        reason: format!(
            "chose `{name}` ({}) over {}",
            why.join(", "),
            others
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

/// `python3.1234.json` → `python3`; `my.app.1.0.json` → `my.app`.
fn app_name(file: &str) -> &str {
    let base = file.rsplit('/').next().unwrap_or(file);
    let mut stem = base.strip_suffix(".json").unwrap_or(base);
    while let Some((head, tail)) = stem.rsplit_once('.') {
        if tail.is_empty() || !tail.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        stem = head;
    }
    stem
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_file_names_give_the_process() {
        let p = |n: &str| timeline_process(n);
        assert_eq!(p("python3.4242.json"), Some(("python3".into(), 4242)));
        assert_eq!(p("python3.11.4242.json"), Some(("python3.11".into(), 4242)));
        assert_eq!(p("app.4242.3.json"), Some(("app".into(), 4242)));
        assert_eq!(p("out/ninja.7.json"), Some(("ninja".into(), 7)));
        assert_eq!(p("trace.json"), None);
        assert_eq!(p("4242.json"), None);
    }

    const TRACE: &[u8] =
        include_bytes!("../../../tests/fixtures/unitrace/synthetic_python.4242.json");

    #[test]
    fn reads_device_commands_tasks_and_metadata() {
        let t = parse_chrome(TRACE, "python.json").unwrap();
        assert!(!t.truncated);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let kernels: Vec<&ChromeEvent> = t.device_commands().collect();
        assert_eq!(kernels.len(), 5);
        assert_eq!(kernels[0].instance_id, Some(1));
        assert!(t.process_names.values().any(|n| n.starts_with("DEVICE<")));
        assert!(!t.thread_names.is_empty());
        let segments = benchmark_segments(&t);
        let labels: Vec<Option<&str>> = segments.iter().map(|s| s.label.as_deref()).collect();
        assert_eq!(
            labels,
            [
                Some("task.py::Test::test_benchmark[512]"),
                Some("task.py::Test::test_benchmark[1024]")
            ]
        );
        assert_eq!(segments[0].commands.len(), 2);
        assert_eq!(segments[1].commands.len(), 2);
    }

    #[test]
    fn nul_bytes_are_removed_and_truncation_keeps_complete_events() {
        let cut = &TRACE[..TRACE.len() * 2 / 3];
        let mut damaged = cut.to_vec();
        damaged.splice(10..10, [0u8, 0, 0]);
        let t = parse_chrome(&damaged, "python.json").unwrap();
        assert!(t.truncated);
        let kinds: Vec<&str> = t.diagnostics.iter().map(|d| d.kind.as_str()).collect();
        assert_eq!(kinds, ["unitrace_nul_bytes", "unitrace_truncated_timeline"]);
        let full = parse_chrome(TRACE, "x").unwrap();
        assert!(!t.events.is_empty() && t.events.len() < full.events.len());
        assert_eq!(t.events[..], full.events[..t.events.len()]);
        assert!(parse_chrome(b"not json", "x").is_err());
        assert!(parse_chrome(b"", "x").is_err());
        assert!(
            parse_chrome(b"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":\"bad\"}]}", "x")
                .unwrap()
                .truncated
        );
    }

    #[test]
    fn device_names_come_out_of_the_device_track() {
        let track = "DEVICE<node1>[Intel(R) Data Center GPU Max 1100] 0:29:0:0 #0";
        assert_eq!(device_name(track), "Intel(R) Data Center GPU Max 1100");
        assert_eq!(device_name("HOST<node1>"), "HOST<node1>");
    }

    #[test]
    fn itt_task_names_give_labels() {
        assert_eq!(
            benchmark_label("ittapi::model run loop::a[1]"),
            Some(Some("a[1]"))
        );
        assert_eq!(benchmark_label("model run loop"), Some(None));
        assert_eq!(benchmark_label("my model run loops"), None);
        assert_eq!(benchmark_label("zeCommandListAppendLaunchKernel"), None);
    }

    #[test]
    fn timeline_choice_prefers_the_python_process_and_says_why() {
        let ninja: &[u8] = b"{\"traceEvents\":[{\"cat\": \"gpu_op\"},{\"cat\": \"gpu_op\"}]}";
        let other: &[u8] = b"{\"traceEvents\":[]}";
        let files = [
            ("ninja.77.json", ninja),
            ("python3.4242.json", TRACE),
            ("python3.9.json", other),
        ];
        let choice = choose_timeline(&files).unwrap();
        assert_eq!(choice.index, 1);
        assert!(
            choice.reason.contains("a python process"),
            "{}",
            choice.reason
        );
        assert!(
            choice.reason.contains("`ninja.77.json`"),
            "{}",
            choice.reason
        );
        assert_eq!(
            choose_timeline(&files[..1]).unwrap().reason,
            "`ninja.77.json` is the only timeline"
        );
        assert_eq!(choose_timeline(&[]), None);
        assert_eq!(app_name("dir/my.app.99.0.json"), "my.app");
    }
}
