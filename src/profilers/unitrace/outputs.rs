//! All files of one unitrace pass to one [`ParsedOutput`], without I/O: the caller hands over
//! `(file name, bytes)` pairs (`trace.<pid>`, `trace.metrics.<pid>`, `<app>.<pid>.json`).
//!
//! Records come from the most detailed source present, so no launch is counted twice: the
//! Chrome timeline (per launch, joined with the metric rows of the same kernel instance), else
//! the metric rows, else the text device timeline, else the device timing summary (aggregated).
//! `session["record_source"]` and each record's `record_source` metric say which. Memory
//! commands (copies, fills, barriers) come the same way from the Chrome timeline, else the
//! text timeline, else the summary (metric rows cover kernels only), into `memory_commands`.

use super::chrome::{benchmark_segments, choose_timeline, parse_chrome, timeline_process};
use super::metrics::{Metrics, parse_metrics};
use super::records::{
    Commands, chrome_commands, chrome_records, metric_records, summary_memory_records,
    summary_records, timeline_commands, timeline_records,
};
use super::samples::fold_samples;
use super::tables::{Tables, parse_tables};
use super::timeline::{Timeline, parse_timeline};
use crate::model::DeviceInfo;
use crate::model::parsed::{Diagnostic, NO_DATA, ParsedOutput, Severity};

fn is_json(name: &str) -> bool {
    name.ends_with(".json")
}

/// The pid in unitrace's text file names: `trace.<pid>`, `trace.metrics.<pid>`, each with an
/// optional `.<rank>` (MPI) after the pid.
pub fn trace_file_pid(file_name: &str) -> Option<u32> {
    let name = file_name.rsplit('/').next()?;
    let rest = name.strip_prefix(super::TRACE_PREFIX)?;
    let rest = rest.strip_prefix("metrics.").unwrap_or(rest);
    rest.split('.').next()?.parse().ok()
}

fn with_file(file: &str, diagnostics: Vec<Diagnostic>) -> impl Iterator<Item = Diagnostic> + '_ {
    diagnostics.into_iter().map(move |mut d| {
        if !d.message.starts_with(file) {
            d.message = format!("{file}: {}", d.message);
        }
        d
    })
}

fn info(kind: &str, message: String) -> Diagnostic {
    Diagnostic {
        severity: Severity::Info,
        metric: None,
        kind: kind.into(),
        message,
        hint: None,
    }
}

/// Parse every file of a unitrace pass. `profiler` (`unitrace` or `ocl-unitrace`) goes into
/// each record.
pub fn parse_outputs(files: &[(&str, &[u8])], profiler: &str) -> ParsedOutput {
    let mut out = ParsedOutput::default();
    let mut tables = Tables::default();
    let mut timeline = Timeline::default();
    let mut metrics = Metrics::default();
    for (name, bytes) in files.iter().filter(|(n, _)| !is_json(n)) {
        let text = String::from_utf8_lossy(bytes);
        let parsed = parse_tables(&text);
        out.diagnostics.extend(with_file(name, parsed.diagnostics));
        tables.timing.extend(parsed.timing);
        tables.properties.extend(parsed.properties);
        tables.totals.extend(parsed.totals);
        let parsed = parse_timeline(&text);
        out.diagnostics.extend(with_file(name, parsed.diagnostics));
        timeline.entries.extend(parsed.entries);
        let parsed = parse_metrics(&text);
        out.diagnostics.extend(with_file(name, parsed.diagnostics));
        metrics.blocks.extend(parsed.blocks);
    }
    // Time-based samples (OpenCL) become one row per instance, as metric queries give.
    let metrics = fold_samples(metrics);
    for (label, value) in &tables.totals {
        out.session.insert(label.clone(), value.to_string());
    }

    let candidates: Vec<(&str, &[u8])> = files
        .iter()
        .filter(|(n, _)| is_json(n))
        .map(|(n, b)| (*n, *b))
        .collect();
    let mut source = None;
    if let Some(choice) = choose_timeline(&candidates) {
        let (name, bytes) = candidates[choice.index];
        out.session.insert("timeline_file".into(), name.to_string());
        out.diagnostics
            .push(info("unitrace_timeline_choice", choice.reason));
        match parse_chrome(bytes, name) {
            Ok(trace) => {
                let segments = benchmark_segments(&trace);
                out.diagnostics.extend(trace.diagnostics.iter().cloned());
                let mut records = chrome_records(&trace, &segments, Some(&metrics), profiler);
                // The timeline is one process's (`<app>.<pid>.json`): its launches get that
                // process, so reports show it between the pass and the kernels.
                if let Some((app, pid)) = timeline_process(name) {
                    for record in records.iter_mut().filter(|r| r.process_id.is_none()) {
                        record.process_id = Some(pid);
                        record.process_name = Some(app.clone());
                    }
                }
                if !segments.is_empty() {
                    out.session
                        .insert("benchmark_segments".into(), segments.len().to_string());
                }
                // The device the roofline table is matched against (`Max 1100`, `B580`, …).
                out.device = records
                    .iter()
                    .find_map(|r| r.device.clone())
                    .map(|name| DeviceInfo {
                        name,
                        ..Default::default()
                    });
                if !records.is_empty() {
                    out.kernels = records;
                    source = Some("chrome_timeline");
                    out.memory_commands =
                        chrome_commands(&trace, &segments, None, profiler, Commands::Memory);
                    if let Some((app, pid)) = timeline_process(name) {
                        for command in &mut out.memory_commands {
                            command.process_id = Some(pid);
                            command.process_name = Some(app.clone());
                        }
                    }
                }
            }
            Err(e) => out.diagnostics.push(Diagnostic {
                severity: Severity::Warning,
                metric: None,
                kind: "unitrace_bad_timeline".into(),
                message: e.to_string(),
                hint: Some("the text summaries and metric files are used instead".into()),
            }),
        }
    }
    if source.is_none() {
        out.memory_commands = timeline_commands(timeline.clone(), profiler, Commands::Memory);
        if out.memory_commands.is_empty() {
            out.memory_commands = summary_memory_records(&tables, profiler);
        }
        // The first source that gives kernels; later ones are not built.
        let from_metrics = metric_records(&metrics, profiler);
        (out.kernels, source) = if !from_metrics.is_empty() {
            (from_metrics, Some("metrics"))
        } else {
            let from_timeline = timeline_records(timeline, profiler);
            if !from_timeline.is_empty() {
                (from_timeline, Some("timeline"))
            } else {
                let from_summary = summary_records(&tables, profiler);
                let found = (!from_summary.is_empty()).then_some("summary");
                (from_summary, found)
            }
        };
        // Text files are merged before records are made, so a pid is only certain when every
        // `trace.<pid>` file of the pass names the same one (one profiled process).
        let mut pids = files
            .iter()
            .filter(|(n, _)| !is_json(n))
            .filter_map(|(n, _)| trace_file_pid(n));
        if let Some(pid) = pids.next()
            && pids.all(|other| other == pid)
        {
            let records = out.kernels.iter_mut().chain(&mut out.memory_commands);
            for record in records.filter(|r| r.process_id.is_none()) {
                record.process_id = Some(pid);
            }
        }
    }
    // Nothing of unitrace's at all (no summary, timeline, metric block or Chrome timeline): not
    // its output, which `polyprof parse` treats like an unreadable file.
    if source.is_none()
        && tables.is_empty()
        && out.memory_commands.is_empty()
        && !out.session.contains_key("timeline_file")
    {
        out.diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            metric: None,
            kind: NO_DATA.into(),
            message: "none of the files holds a unitrace summary, timeline, metric block or \
                      Chrome timeline"
                .into(),
            hint: Some("give the files unitrace wrote (`trace.<pid>`, `<app>.<pid>.json`)".into()),
        });
    }
    match source {
        Some(source) => {
            out.session.insert("record_source".into(), source.into());
        }
        None => out.diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            metric: None,
            kind: "no_kernels".into(),
            message: "no kernel in the unitrace output (no device timing summary, timeline or \
                      metric rows)"
                .into(),
            hint: Some(
                "check that the target launched GPU work and that collection was resumed \
                 (`unitrace --resume <session>` or `PTI_ENABLE_COLLECTION=1`) during it"
                    .into(),
            ),
        }),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::MetricValue;

    const DPC_D: &[u8] =
        include_bytes!("../../../tests/fixtures/unitrace/dpc_gemm_device_timing.txt");
    const DPC_T: &[u8] =
        include_bytes!("../../../tests/fixtures/unitrace/dpc_gemm_device_timeline.txt");
    const FP16: &[u8] = include_bytes!("../../../tests/fixtures/unitrace/gemm_fp16_bytes.1799860");
    const TRACE: &[u8] =
        include_bytes!("../../../tests/fixtures/unitrace/synthetic_python.4242.json");

    #[test]
    fn the_most_detailed_source_wins_and_is_named() {
        let summary = parse_outputs(&[("trace.1", DPC_D)], "unitrace");
        assert_eq!(summary.session["record_source"], "summary");
        assert_eq!(summary.kernels.len(), 1);
        assert_eq!(summary.kernels[0].calls, 4);
        assert_eq!(
            summary.session["Total Device Time for L0 backend (ns)"],
            "97642160"
        );

        let timeline = parse_outputs(&[("trace.1", DPC_D), ("trace.t", DPC_T)], "unitrace");
        assert_eq!(timeline.session["record_source"], "timeline");
        assert_eq!(timeline.kernels.len(), 4);
        assert_eq!(
            timeline.kernels[0].process_id,
            Some(1),
            "only trace.1 names a pid"
        );
        let two = parse_outputs(&[("trace.1", DPC_D), ("trace.2", DPC_T)], "unitrace");
        assert_eq!(
            two.kernels[0].process_id, None,
            "two processes: not guessed"
        );

        let metrics = parse_outputs(&[("trace.1799860", FP16)], "unitrace");
        assert_eq!(metrics.session["record_source"], "metrics");
        assert_eq!(metrics.kernels.len(), 3);

        let files = [
            ("trace.1", DPC_D),
            ("ninja.7.json", &b"{\"traceEvents\":[]}"[..]),
            ("python3.4242.json", TRACE),
        ];
        let chrome = parse_outputs(&files, "unitrace");
        assert_eq!(chrome.session["record_source"], "chrome_timeline");
        assert_eq!(chrome.session["timeline_file"], "python3.4242.json");
        assert_eq!(chrome.session["benchmark_segments"], "2");
        assert_eq!(chrome.kernels.len(), 4);
        assert_eq!(chrome.kernels[0].process_id, Some(4242));
        assert_eq!(chrome.kernels[0].process_name.as_deref(), Some("python3"));
        assert_eq!(
            chrome.device.as_ref().unwrap().name,
            "Intel(R) Data Center GPU Max 1100"
        );
        assert!(
            chrome
                .diagnostics
                .iter()
                .any(|d| d.kind == "unitrace_timeline_choice"
                    && d.message.contains("`ninja.7.json`"))
        );
        assert_eq!(
            chrome.kernels[0].metrics["record_source"].value,
            MetricValue::Text("chrome_timeline".into())
        );
    }

    #[test]
    fn text_file_names_give_the_pid() {
        assert_eq!(trace_file_pid("trace.4242"), Some(4242));
        assert_eq!(trace_file_pid("out/trace.metrics.4242"), Some(4242));
        assert_eq!(trace_file_pid("trace.4242.3"), Some(4242));
        assert_eq!(trace_file_pid("trace.t"), None);
        assert_eq!(trace_file_pid("dpc_gemm_device_timing.txt"), None);
    }

    #[test]
    fn opencl_samples_give_one_record_per_launch() {
        // `--metric-sampling` rows as `ComputeMetricsSampled` writes them (pti-gpu fcd0ca8):
        // several samples per instance, an idle sample before the first kernel.
        let sampled = b"\nKernel, GlobalInstanceId, GpuTime[ns], XVE_ACTIVE[%], XVE_STALL[%]\n\
            \"NoKernel(Before GEMM)\", 9, 50000, 0, 0\n\n\
            GEMM, 1, 50000, 80, 10\nGEMM, 1, 50000, 60, 10\n\n\
            GEMM, 2, 50000, 90, 5\n";
        let out = parse_outputs(&[("trace.metrics.77", &sampled[..])], "ocl-unitrace");
        assert_eq!(out.session["record_source"], "metrics");
        assert_eq!(out.kernels.len(), 2);
        let first = &out.kernels[0];
        assert_eq!((first.name.as_str(), first.launch_id), ("GEMM", 1));
        assert_eq!(first.duration_ns, Some(100000.0));
        assert_eq!(first.metric("xve_active_pct"), Some(70.0));
        assert_eq!(first.metric("xve_idle_pct"), Some(20.0));
        assert_eq!(first.metric("metric_samples"), Some(2.0));
        assert_eq!(out.kernels[1].metric("metric_samples"), Some(1.0));
    }

    #[test]
    fn damaged_or_empty_outputs_warn_and_keep_what_is_readable() {
        let cut = &TRACE[..TRACE.len() / 2];
        let out = parse_outputs(&[("python3.1.json", cut), ("trace.1", DPC_D)], "unitrace");
        assert!(
            out.diagnostics
                .iter()
                .any(|d| d.kind == "unitrace_truncated_timeline")
        );
        assert!(!out.kernels.is_empty());
        let broken = parse_outputs(
            &[("python3.1.json", &b"garbage"[..]), ("trace.1", DPC_D)],
            "unitrace",
        );
        assert_eq!(broken.session["record_source"], "summary");
        assert!(
            broken
                .diagnostics
                .iter()
                .any(|d| d.kind == "unitrace_bad_timeline")
        );
        let none = parse_outputs(&[("trace.1", &b"hello\0world"[..])], "ocl-unitrace");
        assert!(none.kernels.is_empty());
        assert!(none.diagnostics.iter().any(|d| d.kind == "no_kernels"));
    }
}
