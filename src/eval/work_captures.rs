//! Real work-pass launches for the work rules' unit tests: `launches_from_records` of three H200
//! ncu captures (tests/fixtures/eval-work, README there), compiled in, and evidence around them.

use super::evidence::{EvalEvidence, TensorSpec, WitnessEvidence, WitnessLaunch};
use super::test_support::evidence;

/// The launches of capture `name` (`kernels`, `fp8_matmul`, `mm_tensor`).
pub fn launches(name: &str) -> Vec<WitnessLaunch> {
    let text = match name {
        "kernels" => include_str!("../../tests/fixtures/eval-work/kernels.launches.json"),
        "fp8_matmul" => include_str!("../../tests/fixtures/eval-work/fp8_matmul.launches.json"),
        "mm_tensor" => include_str!("../../tests/fixtures/eval-work/mm_tensor.launches.json"),
        other => panic!("no work capture {other}"),
    };
    serde_json::from_str(text).unwrap_or_else(|e| panic!("the {name} launches: {e}"))
}

/// Launch `id` of capture `name`.
pub fn launch(name: &str, id: u64) -> WitnessLaunch {
    launches(name)
        .into_iter()
        .find(|l| l.launch_id == id)
        .unwrap_or_else(|| panic!("{name} has no launch {id}"))
}

/// A work pass (caches flushed before each kernel) whose calls 10 and 11 (the test evidence's
/// witness trials) each ran `launches`, on the worker's thread.
pub fn work_pass(launches: &[WitnessLaunch]) -> WitnessEvidence {
    let mut placed = Vec::new();
    for (call, offset) in [(10u32, 0u64), (11, 1000)] {
        for launch in launches {
            let mut launch = launch.clone();
            launch.launch_id += offset;
            launch.ranges = vec![format!("polyprof/call/{call}")];
            launch.thread_id = launch.process_id.map(u64::from);
            placed.push(launch);
        }
    }
    WitnessEvidence {
        profiler: "ncu".into(),
        run_dir: "work.000".into(),
        clock_control: Some("none".into()),
        cache_control: Some("all".into()),
        launches: placed,
        error: None,
    }
}

/// A contiguous array of `shape`, `item` bytes per element.
pub fn tensor(dtype: &str, shape: &[u64], item: u64) -> TensorSpec {
    let mut stride = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        stride[d] = stride[d + 1] * shape[d + 1] as i64;
    }
    TensorSpec {
        dtype: dtype.into(),
        shape: shape.to_vec(),
        stride,
        nbytes: shape.iter().fold(item, |bytes, &n| bytes * n),
        value: None,
        stats: None,
    }
}

/// The test evidence on an H200, every trial with `inputs` and reference outputs `outputs`,
/// and a work pass of `launches` per call.
pub fn work_evidence(
    inputs: &[TensorSpec],
    outputs: &[TensorSpec],
    launches: &[WitnessLaunch],
) -> EvalEvidence {
    let mut e = evidence();
    e.environment.device_name = Some("NVIDIA H200".into());
    e.settings.work_pass = true;
    for trial in &mut e.trials {
        trial.inputs = inputs.to_vec();
        trial.reference_outputs = outputs.to_vec();
    }
    e.work = Some(work_pass(launches));
    e
}

/// The candidate's timed samples all `ms` per call.
pub fn set_score(e: &mut EvalEvidence, ms: f64) {
    for block in &mut e.samples {
        if block.side == super::evidence::Side::Candidate {
            block.times_ms = vec![ms; block.times_ms.len()];
        }
    }
}
