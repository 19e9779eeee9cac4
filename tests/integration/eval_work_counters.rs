//! A work pass's launches carry the counters the audit's work checks read, taken from the
//! normalized records of a real H200 capture (tests/fixtures/ncu-h200-tensor: PyTorch matmuls
//! in bf16, fp16 and tf32 and RNG fills, with every tensor-pipe counter and the SM clock);
//! a duration-only witness capture carries none. Those counters decide whether the reference's
//! work pass is needed (`eval::precision::needs_reference_work`).

use polyprof::eval::evidence::{EvalEvidence, WitnessEvidence};
use polyprof::eval::precision::{lower_precision_flops, needs_reference_work, work_flops};
use polyprof::eval::witness::launches_from_records;
use polyprof::model::record::Precision;
use polyprof::profilers::ncu::{ParseOptions, parse};

use crate::support::fixture;

fn launches(path: &str) -> Vec<polyprof::eval::evidence::WitnessLaunch> {
    let bytes = std::fs::read(fixture(path)).unwrap();
    let parsed = parse(&bytes, &ParseOptions::default());
    launches_from_records(&parsed.kernels)
}

#[test]
fn work_counters_come_from_the_records() {
    let launches = launches("ncu-h200-tensor/mm_tensor.csv");
    let bf16 = launches
        .iter()
        .find(|l| l.short_name.starts_with("nvjet_sm90_tst"))
        .expect("the bf16 matmul");
    let counters = bf16
        .counters
        .as_ref()
        .expect("counters on a counted launch");
    assert_eq!(counters.flops.tensor_bf16, Some(2.0 * 4096f64.powi(3)));
    let clock = counters.sm_clock_hz.expect("the SM clock");
    assert!((1.4e9..2.0e9).contains(&clock), "{clock}");
}

#[test]
fn a_duration_only_capture_gives_no_counters() {
    let launches = launches("ncu-h200-nvtx/nvtx.log");
    assert!(!launches.is_empty());
    assert!(launches.iter().all(|l| l.counters.is_none()));
}

/// An fp32 task's evidence (tests/fixtures/eval/honest) whose work pass recorded the launches of
/// the capture whose short names contain `prefix`.
fn fp32_task_with_work(prefix: &str) -> EvalEvidence {
    let text = std::fs::read_to_string(fixture("eval/honest/evidence.json")).unwrap();
    let mut evidence: EvalEvidence = serde_json::from_str(&text).unwrap();
    let launches: Vec<_> = launches("ncu-h200-tensor/mm_tensor.csv")
        .into_iter()
        .filter(|l| l.short_name.contains(prefix))
        .collect();
    assert!(!launches.is_empty(), "no {prefix} launch in the capture");
    evidence.work = Some(WitnessEvidence {
        profiler: "ncu".into(),
        run_dir: "work.000".into(),
        clock_control: Some("none".into()),
        cache_control: Some("all".into()),
        launches,
        error: None,
    });
    evidence
}

#[test]
fn tensor_math_below_the_tasks_precision_calls_for_the_reference_work_pass() {
    // The bf16 and fp16 cuBLAS matmuls of the capture, in an fp32 task: 2·4096³ FLOPs each in
    // 16-bit tensor math.
    for (prefix, precision) in [
        ("nvjet_sm90_tst", Precision::TensorBf16),
        ("nvjet_sm90_hsh", Precision::TensorFp16),
    ] {
        let evidence = fp32_task_with_work(prefix);
        assert!(needs_reference_work(&evidence), "{prefix}");
        let flops = work_flops(evidence.work.as_ref().unwrap());
        assert_eq!(
            lower_precision_flops(&flops, 32, false),
            [(precision, 2.0 * 4096f64.powi(3))],
            "{prefix}"
        );
    }
    // tf32 counts as lower only where the task does not allow it.
    let mut tf32 = fp32_task_with_work("sm90_xmma_gemm_f32f32_tf32f32");
    assert!(needs_reference_work(&tf32));
    tf32.settings.allow_tf32 = true;
    assert!(!needs_reference_work(&tf32));
}

#[test]
fn rng_fills_with_hfma2_mma_moves_do_not() {
    // PyTorch's RNG fills run HFMA2.MMA constant moves through the tensor pipe: no FP16 math,
    // and no tensor FLOPs (this capture has no SASS FP16 counter; the subtraction of the moves
    // from one is eval::precision's unit test).
    let fills = fp32_task_with_work("distribution_elementwise");
    let flops = work_flops(fills.work.as_ref().unwrap());
    assert!(
        flops.fp16_hfma2_mma.is_some_and(|moves| moves > 0.0),
        "{flops:?}"
    );
    assert!(!needs_reference_work(&fills), "{flops:?}");
}

/// The work-pass launches the audit's unit tests read (tests/fixtures/eval-work, compiled into
/// src/eval/work_captures.rs): each is `launches_from_records` of a real H200 capture, and must
/// stay what the parser gives today. Regenerate with
/// `UPDATE_WORK_LAUNCHES=1 cargo test --test integration eval_work_counters`.
#[test]
fn the_audit_tests_launches_are_the_parsed_captures() {
    let pairs = [
        (
            "ncu-h200/raw_page_selected_metrics.stdout",
            "eval-work/kernels.launches.json",
        ),
        (
            "ncu-h200-fp8/fp8_clock_none.csv",
            "eval-work/fp8_matmul.launches.json",
        ),
        (
            "ncu-h200-tensor/mm_tensor.csv",
            "eval-work/mm_tensor.launches.json",
        ),
    ];
    let mut stale = Vec::new();
    for (capture, committed) in pairs {
        let parsed = launches(capture);
        assert!(
            parsed.iter().all(|l| l.counters.is_some()),
            "{capture}: every launch carries counters"
        );
        let text = serde_json::to_string_pretty(&parsed).unwrap() + "\n";
        let path = fixture(committed);
        if std::env::var_os("UPDATE_WORK_LAUNCHES").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(committed);
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} differ from the parsed captures; regenerate with UPDATE_WORK_LAUNCHES=1"
    );
}
