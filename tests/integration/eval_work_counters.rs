//! A work pass's launches carry the counters the audit's work checks read, taken from the
//! normalized records of a real H200 capture (tests/fixtures/ncu-h200-tensor: PyTorch matmuls
//! in bf16, fp16 and tf32 and RNG fills, with every tensor-pipe counter and the SM clock);
//! a duration-only witness capture carries none.

use polyprof::eval::witness::launches_from_records;
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
