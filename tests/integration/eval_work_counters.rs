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
