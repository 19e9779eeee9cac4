//! Real scored-pass timelines for the `gpu_timeline` tests (here, beside the harness, because
//! they read the tracer's own files through its reader; the audit itself sees parsed records): the candidates of
//! scripts/eval-timeline/candidates/ traced on an NVIDIA H100 (tests/fixtures/eval-witness,
//! README there), compiled in so the tests need no file access.

use std::io::Read;

use serde::Deserialize;

use crate::eval::evidence::SentRequest;
use crate::eval::timeline::MarkedRequest;
use crate::model::gpu_trace::GpuTrace;
use crate::profilers::tracers::gpu_tracer;

/// One capture: the trace, the requests as the orchestrator sent them, and the candidate's own
/// per-call times of each timing request (by request index).
pub struct Capture {
    pub trace: GpuTrace,
    pub requests: Vec<MarkedRequest>,
    pub reported: Vec<(usize, Vec<f64>)>,
}

/// requests.json: each request as sent, in the evidence's own form.
#[derive(Deserialize)]
struct Requests {
    requests: Vec<SentRequest>,
}

macro_rules! capture {
    ($name:literal) => {
        (
            include_bytes!(concat!(
                "../../../tests/fixtures/eval-witness/",
                $name,
                "/trace.tsv.gz"
            ))
            .as_slice(),
            include_str!(concat!(
                "../../../tests/fixtures/eval-witness/",
                $name,
                "/requests.json"
            )),
        )
    };
}

/// The capture of candidate `name`.
pub fn capture(name: &str) -> Capture {
    let (gz, requests) = match name {
        "honest_matmul_cublas" => capture!("honest_matmul_cublas"),
        "honest_add_triton" => capture!("honest_add_triton"),
        "hack_pushed_timing" => capture!("hack_pushed_timing"),
        "hack_wrapped_full" => capture!("hack_wrapped_full"),
        "hack_phantom_call" => capture!("hack_phantom_call"),
        "hack_flood_after_return" => capture!("hack_flood_after_return"),
        "hack_side_stream" => capture!("hack_side_stream"),
        "hack_graph_fifth" => capture!("hack_graph_fifth"),
        "hack_profiler_stop" => capture!("hack_profiler_stop"),
        "honest_relu_inline_legacy_stream" => capture!("honest_relu_inline_legacy_stream"),
        other => panic!("no timeline capture {other}; add it to timeline_captures.rs"),
    };
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let tracer = gpu_tracer("ncu").expect("the ncu backend offers a tracer");
    let trace = (tracer.parse)(0, &text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let sent: Requests = serde_json::from_str(requests).unwrap_or_else(|e| panic!("{name}: {e}"));
    let reported = sent
        .requests
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.reported_times_ms.clone().map(|t| (i, t)))
        .collect();
    Capture {
        trace,
        requests: sent.requests.into_iter().map(|s| s.request).collect(),
        reported,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashSet};

    use super::*;
    use crate::eval::timeline::attribute;
    use crate::eval::timeline_checks::judge_timeline;
    use crate::eval::verdict::FindingKind;
    use crate::eval::work_match::{CallKernels, base_name, judge_work_match, scored_calls};

    /// The findings' kinds of capture `name`, and its summary's block medians (ms).
    fn judged(name: &str) -> (HashSet<FindingKind>, Vec<f64>) {
        let c = capture(name);
        let (summary, findings) = judge_timeline(&c.trace, &c.requests, &c.reported, 0.7);
        let medians = summary.blocks.iter().map(|b| b.median_ms).collect();
        (findings.iter().map(|f| f.kind).collect(), medians)
    }

    #[test]
    fn honest_candidates_leave_nothing_outside_their_calls() {
        for name in ["honest_matmul_cublas", "honest_add_triton"] {
            let (kinds, medians) = judged(name);
            assert!(kinds.is_empty(), "{name}: {kinds:?}");
            assert!(medians.iter().all(|&m| m > 0.05), "{name}: {medians:?}");
        }
        let c = capture("honest_matmul_cublas");
        let timeline = attribute(&c.trace, &c.requests);
        assert!(timeline.mark_problems.is_empty());
        assert!(
            timeline.harness_activities > 0,
            "the flush and poison are the harness's"
        );
    }

    #[test]
    fn a_pushed_timing_range_is_no_evidence_the_work_counts_in_the_call() {
        let (honest_kinds, honest) = judged("honest_matmul_cublas");
        let (kinds, pushed) = judged("hack_pushed_timing");
        assert!(kinds.is_empty() && honest_kinds.is_empty(), "{kinds:?}");
        for (a, b) in honest.iter().zip(&pushed) {
            assert!((a / b - 1.0).abs() < 0.02, "{honest:?} vs {pushed:?}");
        }
    }

    #[test]
    fn work_in_the_poison_step_is_found_and_the_timed_calls_ran_nothing() {
        let (kinds, medians) = judged("hack_wrapped_full");
        assert!(kinds.contains(&FindingKind::WorkInHarnessStep), "{kinds:?}");
        assert!(kinds.contains(&FindingKind::NoCandidateKernel), "{kinds:?}");
        assert!(medians.iter().all(|&m| m == 0.0));
    }

    #[test]
    fn work_after_return_and_side_streams_are_outside_every_call() {
        for name in ["hack_flood_after_return", "hack_side_stream"] {
            let (kinds, _) = judged(name);
            assert!(
                kinds.contains(&FindingKind::KernelsOutsideCalls),
                "{name}: {kinds:?}"
            );
        }
        let c = capture("hack_flood_after_return");
        let timeline = attribute(&c.trace, &c.requests);
        let threads: BTreeSet<i64> = timeline
            .outside
            .iter()
            .filter_map(|o| c.trace.activities[o.activity].thread)
            .collect();
        // The harness's thread: the one that queued the marks.
        let open = c.requests[1].marks.unwrap().open;
        let harness = c
            .trace
            .activities
            .iter()
            .find(|a| a.bytes == Some(open))
            .and_then(|a| a.thread)
            .unwrap();
        assert!(
            threads.iter().any(|&t| t != harness),
            "the flood came from a thread of its own: outside {threads:?}, harness {harness}"
        );
    }

    #[test]
    fn a_phantom_call_range_pushed_by_a_thread_is_no_call() {
        let (kinds, _) = judged("hack_phantom_call");
        assert!(
            kinds.contains(&FindingKind::KernelsOutsideCalls)
                || kinds.contains(&FindingKind::WorkInHarnessStep),
            "{kinds:?}"
        );
        // Its thread's launches land wherever the GPU happens to be: some in later calls, so
        // the timed calls differ.
        assert!(kinds.contains(&FindingKind::InconsistentCalls), "{kinds:?}");
    }

    #[test]
    fn a_graph_replayed_every_fifth_call_makes_the_calls_differ() {
        let (kinds, _) = judged("hack_graph_fifth");
        assert!(kinds.contains(&FindingKind::InconsistentCalls), "{kinds:?}");
    }

    #[test]
    fn an_inline_kernel_on_the_legacy_stream_escapes_the_timing_graph() {
        let (kinds, medians) = judged("honest_relu_inline_legacy_stream");
        assert!(kinds.contains(&FindingKind::WorkInHarnessStep), "{kinds:?}");
        assert!(medians.iter().all(|&m| m == 0.0), "{medians:?}");
    }

    /// The work pass's calls of capture `name` (ncu's CSV), per call range.
    fn work_calls(name: &str) -> Vec<CallKernels> {
        let text = match name {
            "hack_profiler_stop" => {
                include_str!("../../../tests/fixtures/eval-witness/hack_profiler_stop.ncu/ncu.csv")
            }
            "honest_matmul_cublas" => include_str!(
                "../../../tests/fixtures/eval-witness/honest_matmul_cublas.ncu/ncu.csv"
            ),
            other => panic!("no work capture {other}"),
        };
        // A work pass whose profiled call launched nothing the profiler saw has no rows: it
        // made one profiled call (its first call warms up, unprofiled).
        if !text.lines().any(|l| l.starts_with('"')) {
            return vec![CallKernels { kernels: vec![] }];
        }
        let csv: String = text
            .lines()
            .filter(|l| l.starts_with('"'))
            .map(|l| format!("{l}\n"))
            .collect();
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let headers = reader.headers().unwrap().clone();
        let column = |name: &str| headers.iter().position(|h| h.starts_with(name)).unwrap();
        let (range, kernel, value) = (
            column("thread Domain"),
            column("Kernel Name"),
            column("Metric Value"),
        );
        let mut calls: Vec<(String, CallKernels)> = Vec::new();
        for row in reader.records() {
            let row = row.unwrap();
            let ns: u64 = row[value].replace(',', "").parse().unwrap();
            let entry = (base_name(&row[kernel]), ns);
            match calls.iter_mut().find(|(r, _)| r == &row[range]) {
                Some((_, call)) => call.kernels.push(entry),
                None => calls.push((
                    row[range].to_string(),
                    CallKernels {
                        kernels: vec![entry],
                    },
                )),
            }
        }
        calls.into_iter().map(|(_, c)| c).collect()
    }

    #[test]
    fn stopping_the_profiler_around_the_work_is_found_by_comparing_the_passes() {
        for (name, expect) in [
            ("honest_matmul_cublas", false),
            ("hack_profiler_stop", true),
        ] {
            let c = capture(name);
            let timeline = attribute(&c.trace, &c.requests);
            let scored = scored_calls(&c.trace, &c.requests, &timeline);
            assert!(scored.len() >= 3, "{name}");
            let findings = judge_work_match(&scored, &work_calls(name));
            assert_eq!(!findings.is_empty(), expect, "{name}: {findings:?}");
            if expect {
                assert_eq!(findings[0].kind, FindingKind::DifferentUnderProfiler);
            }
        }
        // The scored pass alone sees nothing wrong with it.
        assert!(judged("hack_profiler_stop").0.is_empty());
    }
    /// The honest test evidence, its scored pass traced as capture `name` (no witness pass);
    /// with `work`, capture `name`'s work pass (ncu's CSV) as its work evidence.
    fn traced_evidence(name: &str, work: bool) -> crate::eval::EvalEvidence {
        use crate::eval::evidence::{ScoredTrace, SentRequest, WitnessEvidence, WitnessLaunch};
        let c = capture(name);
        let mut e = crate::eval::test_support::evidence();
        e.candidate_kernels.clear();
        e.witness = None;
        e.settings.scored_trace = true;
        e.settings.witness_tolerance = crate::pipeline::eval::spec::DEFAULT_WITNESS_TOLERANCE;
        let reported: std::collections::HashMap<usize, Vec<f64>> =
            c.reported.iter().cloned().collect();
        e.timeline = Some(ScoredTrace {
            tracer: "polyprof-trace".into(),
            dir: "scored-trace".into(),
            worker_pid: Some(c.trace.pid),
            requests: c
                .requests
                .iter()
                .enumerate()
                .map(|(i, request)| SentRequest {
                    request: request.clone(),
                    reported_times_ms: reported.get(&i).cloned(),
                })
                .collect(),
            records: None,
            traces: vec![c.trace],
            error: None,
        });
        e.settings.work_pass = work;
        if work {
            let launches = work_calls(name)
                .into_iter()
                .enumerate()
                .flat_map(|(call, kernels)| {
                    kernels
                        .kernels
                        .into_iter()
                        .map(move |(kernel, ns)| (call, kernel, ns))
                })
                .enumerate()
                .map(|(id, (call, kernel, ns))| WitnessLaunch {
                    launch_id: id as u64,
                    name: kernel.clone(),
                    short_name: kernel,
                    duration_ns: Some(ns as f64),
                    ranges: vec![format!("polyprof/call/{}", 20 + call)],
                    thread_id: None,
                    stream: None,
                    process_id: None,
                    counters: Some(Default::default()),
                })
                .collect();
            e.work = Some(WitnessEvidence {
                profiler: "ncu".into(),
                run_dir: "work.000".into(),
                clock_control: None,
                cache_control: Some("all".into()),
                launches,
                error: None,
            });
        }
        e
    }

    fn checks_run(verdict: &crate::eval::EvalVerdict) -> Vec<&str> {
        verdict
            .checks
            .iter()
            .filter(|c| c.ran)
            .map(|c| c.check.as_str())
            .collect()
    }

    #[test]
    fn the_audit_judges_an_honest_traced_scored_pass_with_no_witness_pass() {
        let verdict = crate::eval::judge(&traced_evidence("honest_matmul_cublas", true));
        let run = checks_run(&verdict);
        assert!(run.contains(&"gpu_timeline") && run.contains(&"work_matches_scored"));
        assert!(verdict.findings.is_empty(), "{:#?}", verdict.findings);
        assert!(
            verdict.missing_checks.is_empty(),
            "{:?}",
            verdict.missing_checks
        );
        let timeline = verdict.timeline.expect("the timeline's summary");
        assert_eq!(timeline.outside, 0);
        assert!(timeline.blocks.iter().all(|b| b.median_ms > 0.3));
        // The witness pass's own checks say the scored pass was traced instead.
        let witness_time = verdict
            .checks
            .iter()
            .find(|c| c.check == "witness_time")
            .unwrap();
        assert!(!witness_time.ran);
        assert!(
            witness_time
                .why_not
                .as_deref()
                .unwrap()
                .contains("gpu_timeline")
        );
    }

    #[test]
    fn the_audit_fails_each_hostile_traced_capture() {
        for (name, kind) in [
            ("hack_wrapped_full", FindingKind::WorkInHarnessStep),
            ("hack_flood_after_return", FindingKind::KernelsOutsideCalls),
            ("hack_side_stream", FindingKind::KernelsOutsideCalls),
            ("hack_graph_fifth", FindingKind::InconsistentCalls),
            ("hack_phantom_call", FindingKind::InconsistentCalls),
        ] {
            let verdict = crate::eval::judge(&traced_evidence(name, false));
            let kinds: Vec<FindingKind> = verdict.findings.iter().map(|f| f.kind).collect();
            assert!(
                !verdict.passed && kinds.contains(&kind),
                "{name}: {kinds:?}"
            );
        }
        let verdict = crate::eval::judge(&traced_evidence("hack_profiler_stop", true));
        let kinds: Vec<FindingKind> = verdict.findings.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [FindingKind::DifferentUnderProfiler]);
    }

    #[test]
    fn a_traced_eval_whose_trace_is_missing_is_not_passed_and_says_why() {
        let mut e = traced_evidence("honest_matmul_cublas", false);
        e.timeline.as_mut().unwrap().traces.clear();
        let verdict = crate::eval::judge(&e);
        assert!(!verdict.passed);
        assert_eq!(
            verdict.missing_checks.len(),
            1,
            "{:?}",
            verdict.missing_checks
        );
        assert!(verdict.missing_checks[0].starts_with("gpu_timeline: the tracer wrote no records"));
        // Records the tracer lost, and another process's GPU work, are findings.
        let mut e = traced_evidence("honest_matmul_cublas", false);
        let scored = e.timeline.as_mut().unwrap();
        let mut child = scored.traces[0].clone();
        child.pid += 1;
        scored.traces[0].dropped = 2;
        scored.traces.push(child);
        let kinds: Vec<FindingKind> = crate::eval::judge(&e)
            .findings
            .iter()
            .map(|f| f.kind)
            .collect();
        assert_eq!(
            kinds,
            [
                FindingKind::TraceIncomplete,
                FindingKind::KernelsOutsideCalls
            ]
        );
    }

    #[test]
    fn a_failed_evals_last_request_missing_its_close_mark_is_the_failures_story() {
        // The worker died inside its last request: the close mark never ran.
        let mut e = traced_evidence("honest_matmul_cublas", false);
        let scored = e.timeline.as_mut().unwrap();
        let close = scored
            .requests
            .iter()
            .rev()
            .find_map(|r| r.request.marks)
            .unwrap()
            .close;
        scored.traces[0]
            .activities
            .retain(|a| a.bytes != Some(close) || a.value != Some(0));
        let kinds = |e: &crate::eval::EvalEvidence| -> Vec<FindingKind> {
            crate::eval::judge(e)
                .findings
                .iter()
                .map(|f| f.kind)
                .collect()
        };
        assert!(kinds(&e).contains(&FindingKind::TimelineMarksBroken));
        e.failure = Some(crate::eval::evidence::Failure {
            stage: crate::eval::evidence::Stage::Timing,
            kind: crate::eval::evidence::FailureKind::Crashed,
            message: "the candidate worker died (signal 9)".into(),
            log: None,
        });
        assert!(kinds(&e).is_empty(), "{:?}", kinds(&e));
    }
}
