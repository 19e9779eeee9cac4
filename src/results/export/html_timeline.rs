//! The page's timelines, taken from the Chrome trace of the same report (its lanes, its layout of
//! kernels without start times, its notes on clocks): one panel for the CPU clock (steps,
//! processes, scopes) and one for the GPU clock (kernels and memory commands, one lane per
//! stream). The slices travel as compact JSON that the page's script draws on a canvas, which
//! stays fast at 10,000 launches and zooms to a single microsecond.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::results::export::Report;
use crate::results::export::chrome;

/// One panel: lanes, the distinct slice names, and the slices as flat
/// `[lane, start µs, duration µs, name index, …]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timeline {
    pub title: String,
    pub lanes: Vec<String>,
    pub names: Vec<String>,
    /// Four numbers per slice.
    pub slices: Vec<f64>,
    pub note: String,
}

impl Timeline {
    pub fn slice_count(&self) -> usize {
        self.slices.len() / 4
    }
}

/// The CPU and GPU panels of `report` (either may be empty).
pub fn timelines(report: &Report) -> (Timeline, Timeline) {
    let trace = chrome::trace(report);
    let empty = Vec::new();
    let events = trace["traceEvents"].as_array().unwrap_or(&empty);
    let mut processes: BTreeMap<i64, String> = BTreeMap::new();
    let mut threads: BTreeMap<(i64, i64), String> = BTreeMap::new();
    let mut labels: BTreeMap<i64, String> = BTreeMap::new();
    for event in events.iter().filter(|e| e["ph"] == "M") {
        let (pid, tid) = (id(&event["pid"]), id(&event["tid"]));
        let name = event["args"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match event["name"].as_str() {
            Some("process_name") => {
                processes.insert(pid, name);
            }
            Some("thread_name") => {
                threads.insert((pid, tid), name);
            }
            Some("process_labels") => {
                let text = event["args"]["labels"].as_str().unwrap_or_default();
                labels.insert(pid, text.to_string());
            }
            _ => {}
        }
    }
    let mut cpu = Timeline {
        title: "Steps and processes (CPU clock)".to_string(),
        ..Default::default()
    };
    let mut gpu = Timeline {
        title: "Kernels and memory commands (GPU clock, one lane per stream)".to_string(),
        ..Default::default()
    };
    let mut lane_index: BTreeMap<(bool, i64, i64), usize> = BTreeMap::new();
    let mut name_index: [BTreeMap<String, usize>; 2] = Default::default();
    for event in events.iter().filter(|e| e["ph"] == "X") {
        let (pid, tid) = (id(&event["pid"]), id(&event["tid"]));
        let thread = threads.get(&(pid, tid)).cloned().unwrap_or_default();
        let on_gpu = !thread.starts_with("CPU");
        let panel = if on_gpu { &mut gpu } else { &mut cpu };
        let lane = *lane_index.entry((on_gpu, pid, tid)).or_insert_with(|| {
            let process = processes.get(&pid).cloned().unwrap_or_default();
            panel.lanes.push(format!("{process} · {thread}"));
            panel.lanes.len() - 1
        });
        let name = event["name"].as_str().unwrap_or_default();
        let names = &mut name_index[usize::from(on_gpu)];
        let name = match names.get(name) {
            Some(index) => *index,
            None => {
                panel.names.push(name.to_string());
                names.insert(name.to_string(), panel.names.len() - 1);
                panel.names.len() - 1
            }
        };
        let ts = event["ts"].as_f64().unwrap_or(0.0);
        let dur = event["dur"].as_f64().unwrap_or(0.0);
        panel
            .slices
            .extend([lane as f64, round(ts), round(dur), name as f64]);
    }
    let clocks = trace["otherData"]["clocks"].as_str().unwrap_or_default();
    cpu.note = clocks.to_string();
    gpu.note = labels.into_values().collect::<Vec<_>>().join("; ");
    (cpu, gpu)
}

fn id(value: &Value) -> i64 {
    value.as_i64().unwrap_or(0)
}

/// Nanosecond precision is enough and keeps the JSON short.
fn round(us: f64) -> f64 {
    (us * 1e3).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::run::ProfileRun;

    #[test]
    fn the_h200_capture_has_its_kernels_on_one_stream_and_its_profile_step_on_the_cpu() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/runs/h200-baseline"
        );
        let run = ProfileRun::read(std::path::Path::new(path)).unwrap();
        let (cpu, gpu) = timelines(&Report::from_run(run, None));
        assert_eq!(gpu.slice_count(), 4);
        assert_eq!(gpu.lanes, ["app [1579] · GPU 0 stream 7"]);
        assert_eq!(gpu.names[0], "vector_add");
        // Laid out back to back: the second kernel starts where the first ends.
        assert_eq!(gpu.slices[5], gpu.slices[2]);
        assert!(gpu.note.contains("without start times"), "{}", gpu.note);
        assert_eq!(cpu.names, ["profile"]);
    }
}
