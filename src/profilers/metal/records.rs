//! A Metal System Trace's GPU intervals as normalized [`KernelRecord`]s: one record per encoder
//! run on the GPU (command buffer id + encoder id), its GPU time the union of the encoder's
//! intervals, because Metal also writes nested rows for one encoder (a later start, the same
//! end) and their sum would count the overlap twice. Intervals without both ids stay one record
//! each. The record's name is the interval's label: the encoder's own label when the program set
//! one (`computeEncoder.label`), else Instruments' positional `Command Buffer N:Compute Command M`.

use std::borrow::Cow;
use std::collections::HashMap;

use super::xctrace::{GpuInterval, GpuTrace, union_ns};
use crate::model::DeviceInfo;
use crate::model::parsed::ParsedOutput;
use crate::model::record::{KernelRecord, Metric, MetricValue};

/// Where the records came from, as every backend's `record_source` says it.
pub const RECORD_SOURCE: &str = "xctrace_gpu_intervals";

fn text(value: &str) -> Metric {
    Metric {
        value: MetricValue::Text(value.to_string()),
        unit: Cow::Borrowed(""),
    }
}

fn number(value: f64, unit: &'static str) -> Metric {
    Metric {
        value: MetricValue::Number(value),
        unit: Cow::Borrowed(unit),
    }
}

/// `bench (42)` → `bench`.
fn process_name(shown: &str) -> &str {
    match shown.rsplit_once(" (") {
        Some((name, rest)) if rest.ends_with(')') => name,
        _ => shown,
    }
}

/// One record per encoder, in order of its first interval.
pub fn kernel_records(trace: &GpuTrace) -> Vec<KernelRecord> {
    let mut groups: Vec<Vec<&GpuInterval>> = Vec::new();
    let mut index: HashMap<(&str, &str), usize> = HashMap::new();
    for interval in &trace.intervals {
        let key = interval
            .cmdbuffer_id
            .as_deref()
            .zip(interval.encoder_id.as_deref());
        match key.and_then(|k| index.get(&k).copied()) {
            Some(at) => groups[at].push(interval),
            None => {
                if let Some(k) = key {
                    index.insert(k, groups.len());
                }
                groups.push(vec![interval]);
            }
        }
    }
    groups
        .iter()
        .enumerate()
        .map(|(n, group)| encoder_record(n as u64, group))
        .collect()
}

fn encoder_record(launch_id: u64, group: &[&GpuInterval]) -> KernelRecord {
    let first = group[0];
    let label = group
        .iter()
        .find_map(|i| i.label.clone())
        .unwrap_or_else(|| "(no label)".to_string());
    let start = group.iter().map(|i| i.start_ns).min().unwrap_or(0);
    let busy = union_ns(group.iter().map(|i| (i.start_ns, i.end_ns())));
    let mut record = KernelRecord {
        profiler: "metal".into(),
        process_id: first.pid,
        process_name: first
            .process
            .as_deref()
            .map(|p| process_name(p).to_string()),
        launch_id,
        short_name: label.clone(),
        name: label,
        device: first.gpu.clone(),
        stream: first.channel.clone(),
        start_ns: Some(start as f64),
        duration_ns: Some(busy as f64),
        calls: 1,
        ..Default::default()
    };
    let m = &mut record.metrics;
    m.insert("record_source".into(), text(RECORD_SOURCE));
    if let Some(id) = &first.cmdbuffer_id {
        m.insert("cmdbuffer_id".into(), text(id));
    }
    if let Some(id) = &first.encoder_id {
        m.insert("encoder_id".into(), text(id));
    }
    m.insert("gpu_intervals".into(), number(group.len() as f64, ""));
    record
}

/// The trace as a parser's output: the records, the GPU name as the device, and the trace-wide
/// figures (busy time as the union of all intervals, span, counts) as session facts.
pub fn parsed_output(trace: &GpuTrace) -> ParsedOutput {
    let kernels = kernel_records(trace);
    let mut out = ParsedOutput {
        device: kernels
            .iter()
            .find_map(|k| k.device.clone())
            .map(|name| DeviceInfo {
                name,
                ..Default::default()
            }),
        kernels,
        ..Default::default()
    };
    let s = &mut out.session;
    s.insert("record_source".into(), RECORD_SOURCE.into());
    s.insert("gpu_busy_ns".into(), trace.busy_ns.to_string());
    s.insert("gpu_span_ns".into(), trace.span_ns.to_string());
    s.insert("gpu_intervals".into(), trace.intervals.len().to_string());
    s.insert(
        "command_buffers".into(),
        trace.by_command_buffer.len().to_string(),
    );
    if let Some(pid) = trace.pid {
        s.insert("target_pid".into(), pid.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(start: u64, duration: u64, cb: &str, enc: &str, label: &str) -> GpuInterval {
        GpuInterval {
            start_ns: start,
            duration_ns: duration,
            channel: Some("Compute".into()),
            label: Some(label.into()),
            pid: Some(42),
            process: Some("bench (42)".into()),
            cmdbuffer_id: Some(cb.into()),
            encoder_id: Some(enc.into()),
            gpu: Some("Apple M1".into()),
        }
    }

    fn trace(intervals: Vec<GpuInterval>) -> GpuTrace {
        GpuTrace {
            pid: Some(42),
            intervals,
            busy_ns: 0,
            span_ns: 0,
            by_label: Vec::new(),
            by_command_buffer: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn nested_rows_of_one_encoder_are_one_record_with_the_union() {
        let records = kernel_records(&trace(vec![
            interval(1_000, 500, "1", "1", "saxpy"),
            // Metal's nested row of the same encoder: later start, same end.
            interval(1_200, 300, "1", "1", "saxpy"),
            interval(2_000, 100, "1", "2", "reduce"),
        ]));
        assert_eq!(records.len(), 2);
        let saxpy = &records[0];
        assert_eq!(
            (saxpy.name.as_str(), saxpy.start_ns, saxpy.duration_ns),
            ("saxpy", Some(1_000.0), Some(500.0))
        );
        assert_eq!(saxpy.metric("gpu_intervals"), Some(2.0));
        assert_eq!(saxpy.process_name.as_deref(), Some("bench"));
        assert_eq!(saxpy.process_id, Some(42));
        assert_eq!(saxpy.stream.as_deref(), Some("Compute"));
        assert_eq!(saxpy.device.as_deref(), Some("Apple M1"));
        assert_eq!(
            (records[1].launch_id, records[1].duration_ns),
            (1, Some(100.0))
        );
    }

    #[test]
    fn intervals_without_ids_stay_apart() {
        let mut a = interval(0, 10, "1", "1", "x");
        a.encoder_id = None;
        let mut b = a.clone();
        b.start_ns = 5;
        assert_eq!(kernel_records(&trace(vec![a, b])).len(), 2);
        assert_eq!(process_name("no pid"), "no pid");
        assert_eq!(process_name("my app (x) (7)"), "my app (x)");
    }
}
