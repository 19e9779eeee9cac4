//! Small constructors of evidence for the audit's unit tests: an honest CUDA eval by default,
//! each test changing the one thing it is about.

use super::evidence::{
    ArrayStats, Comparison, Conditions, DeviceState, EVIDENCE_VERSION, Environment, EvalEvidence,
    EvalSettings, ProblemInfo, Side, SourceFile, TensorSpec, TimingBlock, TrialEvidence,
    TrialPhase, WitnessEvidence, WitnessLaunch,
};
use crate::model::calibration::{CalibratedQuantity, Calibration, CalibrationCheck};

pub fn settings() -> EvalSettings {
    EvalSettings {
        trials: 2,
        timing_blocks: 2,
        repeat: 3,
        warmup: 2,
        atol: 1e-2,
        rtol: 1e-2,
        flush_l2: true,
        witness_calls: 2,
        witness_profiler: Some("ncu".into()),
        witness_tolerance: 0.5,
        suspicious_speedup: 10.0,
        require_candidate_kernels: false,
        min_plausible_ms: 0.001,
        init_seed: 42,
        work_pass: false,
        work_calls: 0,
        flops_per_call: None,
        allow_tf32: false,
        timed_checks: 0,
        scored_trace: false,
    }
}

/// A passing comparison of 1,024 elements.
pub fn comparison(passed: bool) -> Comparison {
    Comparison {
        passed,
        mismatch: (!passed).then(|| "values".to_string()),
        max_abs_diff: Some(if passed { 1e-4 } else { 0.5 }),
        max_rel_diff: Some(if passed { 1e-3 } else { 2.0 }),
        mismatched_elements: if passed { 0 } else { 17 },
        total_elements: 1024,
        poisoned_elements: 0,
        detail: None,
    }
}

pub fn trial(index: u32, phase: TrialPhase, passed: bool) -> TrialEvidence {
    TrialEvidence {
        index,
        phase,
        seed: 1000 + u64::from(index),
        inputs: vec![array(&format!("input-{index}"), -1.0, 1.0)],
        reference_outputs: vec![array(&format!("output-{index}"), 0.0, 1.0)],
        candidate_outputs: vec![array(
            &format!("{}-{index}", if passed { "output" } else { "wrong" }),
            0.0,
            1.0,
        )],
        comparison: Some(comparison(passed)),
        inputs_unchanged: Some(true),
        host_ms: None,
        timed_call: None,
        block: None,
    }
}

/// A 4×4 float32 array with statistics: `digest` stands for its bytes.
pub fn array(digest: &str, min: f64, max: f64) -> TensorSpec {
    TensorSpec {
        dtype: "float32".into(),
        shape: vec![4, 4],
        stride: vec![4, 1],
        nbytes: 64,
        value: None,
        stats: Some(ArrayStats {
            min: Some(min),
            max: Some(max),
            mean: Some((min + max) / 2.0),
            nan_count: 0,
            digest: digest.into(),
        }),
    }
}

/// Quiet GPU conditions: clocks up, no throttling, nobody else on it.
pub fn conditions() -> Conditions {
    Conditions {
        sm_clock_mhz: Some(1980.0),
        mem_clock_mhz: Some(2619.0),
        max_sm_clock_mhz: Some(1980.0),
        temperature_c: Some(41.0),
        power_w: Some(120.0),
        throttle_reasons: Vec::new(),
        other_processes: Vec::new(),
    }
}

/// A block taken on a reset device under quiet conditions.
pub fn block(side: Side, block: u32, times_ms: &[f64]) -> TimingBlock {
    TimingBlock {
        side,
        block,
        method: "graph_pairs".into(),
        batch: 1,
        times_ms: times_ms.to_vec(),
        device_state: Some(DeviceState {
            persisting_l2_limit_bytes: Some(0),
            persisting_l2_reset: true,
            note: None,
        }),
        conditions_before: Some(conditions()),
        conditions_after: Some(conditions()),
        input_trials: Vec::new(),
        warmup_trial: None,
        checked_calls: Vec::new(),
        other_side_stopped: None,
        bystanders_stopped: 0,
    }
}

pub fn launch(
    launch_id: u64,
    short_name: &str,
    ranges: &[&str],
    duration_ns: f64,
) -> WitnessLaunch {
    WitnessLaunch {
        launch_id,
        name: format!("void {short_name}(float *)"),
        short_name: short_name.to_string(),
        duration_ns: Some(duration_ns),
        ranges: ranges.iter().map(|r| r.to_string()).collect(),
        // ncu names the thread only inside a range; the worker's is the process's main thread.
        thread_id: (!ranges.is_empty()).then_some(575),
        stream: Some("7".into()),
        process_id: Some(575),
        counters: None,
    }
}

/// The witness of an honest candidate: setup, a warmup and two calls of `relu_kernel`
/// (0.2 ms each), nothing else.
pub fn witness() -> WitnessEvidence {
    WitnessEvidence {
        profiler: "ncu".into(),
        run_dir: "witness.000".into(),
        clock_control: Some("none".into()),
        cache_control: None,
        launches: vec![
            launch(0, "fill_kernel", &["polyprof/setup"], 5_000.0),
            launch(1, "relu_kernel", &["polyprof/warmup"], 200_000.0),
            launch(2, "fill_kernel", &["polyprof/poison"], 5_000.0),
            launch(3, "relu_kernel", &["polyprof/call/10"], 200_000.0),
            launch(4, "fill_kernel", &["polyprof/poison"], 5_000.0),
            launch(5, "relu_kernel", &["polyprof/call/11"], 200_000.0),
        ],
        error: None,
    }
}

/// An honest eval: two correctness trials, two timing blocks a side (reference 1 ms, candidate
/// 0.2 ms per call), two checked timed outputs, two witnessed calls (trials 10 and 11).
pub fn evidence() -> EvalEvidence {
    EvalEvidence {
        schema_version: EVIDENCE_VERSION,
        problem: ProblemInfo {
            reference: SourceFile {
                path: "ref.py".into(),
                sha256: "0".repeat(64),
            },
            candidate: SourceFile {
                path: "cand.py".into(),
                sha256: "1".repeat(64),
            },
            framework: "torch".into(),
            device: "cuda".into(),
            reference_flops: None,
            flops_note: None,
        },
        settings: settings(),
        environment: Environment {
            device_name: Some("NVIDIA H200".into()),
            ..Environment::default()
        },
        candidate_kernels: vec!["relu_kernel".into()],
        trials: vec![
            trial(0, TrialPhase::Correctness, true),
            trial(1, TrialPhase::Correctness, true),
            trial(2, TrialPhase::Timed, true),
            trial(3, TrialPhase::Timed, true),
            trial(10, TrialPhase::Witness, true),
            trial(11, TrialPhase::Witness, true),
        ],
        samples: vec![
            block(Side::Reference, 0, &[1.0, 1.01, 0.99]),
            block(Side::Candidate, 0, &[0.2, 0.201, 0.199]),
            block(Side::Candidate, 1, &[0.2, 0.202, 0.198]),
            block(Side::Reference, 1, &[1.0, 1.02, 0.98]),
        ],
        timeline: None,
        witness: Some(witness()),
        work: None,
        reference_work: None,
        reference_work_reused: None,
        calibration: None,
        // Confined as an eval on a Landlock ABI 7 kernel is.
        sandbox: Some(super::evidence::SandboxEvidence {
            kind: "landlock".into(),
            abi: Some(7),
            confines: super::evidence::CONFINED
                .iter()
                .map(|c| c.to_string())
                .collect(),
            read: vec!["/usr".into()],
            write: vec!["<scratch>".into()],
            ..Default::default()
        }),
        reference_timing: None,
        trusted_run: None,
        build: None,
        judged: None,
        failure: None,
    }
}

/// An H200 calibration: DRAM reads and the FLOP counters of the micro-kernels within 2 %, DRAM
/// writes 8 % off (untrusted), an empty kernel 2 µs.
pub fn calibration() -> Calibration {
    let check = |kernel: &str, quantity: CalibratedQuantity, expected: f64, measured: f64| {
        CalibrationCheck {
            kernel: kernel.into(),
            quantity,
            expected,
            measured: Some(measured),
            measured_upper: None,
            duration_ns: None,
            share_of_peak: None,
        }
    };
    Calibration {
        device_name: "NVIDIA H200".into(),
        device_uuid: None,
        driver: Some("580.159.04".into()),
        tool: "ncu 2025.3.1.0".into(),
        created_unix_s: 1_796_000_000,
        path: Some("calibration/h200.json".into()),
        launch_floor_ns: Some(2_000.0),
        checks: vec![
            check("copy", CalibratedQuantity::DramBytesRead, 1e9, 1.001e9),
            check("copy", CalibratedQuantity::DramBytesWrite, 1e9, 0.92e9),
            check("fma_fp32", CalibratedQuantity::Fp32Flops, 1e9, 1e9),
            check("fma_fp16", CalibratedQuantity::Fp16Flops, 1e9, 1e9),
            check("mma_fp16", CalibratedQuantity::TensorFp16Flops, 1e9, 1e9),
            check("mma_bf16", CalibratedQuantity::TensorBf16Flops, 1e9, 1e9),
            check("mma_fp8", CalibratedQuantity::TensorFp8Flops, 1e9, 1.01e9),
        ],
    }
}
