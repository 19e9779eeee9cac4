//! Real scored-pass timelines for the `gpu_timeline` tests: the candidates of
//! scripts/eval-timeline/candidates/ traced on an NVIDIA H100 (tests/fixtures/eval-witness,
//! README there), compiled in so the tests need no file access.

use std::io::Read;

use serde::Deserialize;

use super::timeline::MarkedRequest;
use crate::model::gpu_trace::GpuTrace;
use crate::profilers::ncu::trace_log::parse_trace;

/// One capture: the trace, the requests as the orchestrator sent them, and the candidate's own
/// per-call times of each timing request (by request index).
pub struct Capture {
    pub trace: GpuTrace,
    pub requests: Vec<MarkedRequest>,
    pub reported: Vec<(usize, Vec<f64>)>,
}

#[derive(Deserialize)]
struct Sent {
    #[serde(flatten)]
    request: MarkedRequest,
    #[serde(default)]
    reported_times_ms: Option<Vec<f64>>,
}

#[derive(Deserialize)]
struct Requests {
    requests: Vec<Sent>,
}

macro_rules! capture {
    ($name:literal) => {
        (
            include_bytes!(concat!(
                "../../tests/fixtures/eval-witness/",
                $name,
                "/trace.tsv.gz"
            ))
            .as_slice(),
            include_str!(concat!(
                "../../tests/fixtures/eval-witness/",
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
        "honest_relu_inline" => capture!("honest_relu_inline"),
        "hack_pushed_timing" => capture!("hack_pushed_timing"),
        "hack_wrapped_full" => capture!("hack_wrapped_full"),
        "hack_phantom_call" => capture!("hack_phantom_call"),
        "hack_flood_after_return" => capture!("hack_flood_after_return"),
        "hack_side_stream" => capture!("hack_side_stream"),
        "hack_graph_fifth" => capture!("hack_graph_fifth"),
        "hack_profiler_stop" => capture!("hack_profiler_stop"),
        other => panic!("no timeline capture {other}; add it to timeline_captures.rs"),
    };
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let trace = parse_trace(0, &text).unwrap_or_else(|e| panic!("{name}: {e}"));
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
