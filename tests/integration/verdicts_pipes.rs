//! The minimal preset's pipe loads in place of the SM speed of light, on real H200 output
//! (tests/fixtures/ncu-h200-pipes: both captured side by side, see its README).

use polyprof::model::record::KernelRecord;
use polyprof::model::verdict_metrics::PIPE_LOADS;
use polyprof::profilers::ncu::{MetricFilter, ParseOptions, parse};
use polyprof::results::roofline::{
    Bound, DeviceTable, Inputs, Limiter, RooflineInputs, evaluate_inputs,
};

use crate::support::fixture;

const SM_SOL: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";

fn kernels(file: &str) -> Vec<KernelRecord> {
    let bytes = std::fs::read(fixture(&format!("ncu-h200-pipes/{file}"))).unwrap();
    let options = ParseOptions {
        keep: MetricFilter::All,
        ..Default::default()
    };
    parse(&bytes, &options).kernels
}

/// The record as the minimal preset collects it: pipe loads, no speed of light.
fn without_sol(record: &KernelRecord) -> KernelRecord {
    let mut record = record.clone();
    record.metrics.retain(|name, _| name != SM_SOL);
    record.sm_throughput_pct = PIPE_LOADS
        .iter()
        .filter_map(|name| record.metric(name))
        .reduce(f64::max);
    record
}

#[test]
fn the_busiest_pipe_is_the_sm_speed_of_light_for_kernels_that_load_the_sms() {
    let mut all = kernels("values_mix.csv");
    all.extend(kernels("values_app.csv"));
    assert_eq!(all.len(), 13);
    for kernel in &all {
        let sol = kernel.metric(SM_SOL).unwrap();
        // Parsed with both: the speed of light wins.
        assert_eq!(kernel.sm_throughput_pct, Some(sol), "{}", kernel.short_name);
        let load = without_sol(kernel).sm_throughput_pct.unwrap();
        assert!(load <= sol + 0.5, "{}: {load} > {sol}", kernel.short_name);
        if sol >= 30.0 && !kernel.short_name.starts_with("vector_add") {
            assert!(sol - load < 1.0, "{}: {load} vs {sol}", kernel.short_name);
        }
    }
}

#[test]
fn pipe_loads_name_the_compute_limiter() {
    let h200 = DeviceTable::builtin().unwrap();
    let peaks = h200.lookup("NVIDIA H200");
    let mut all = kernels("values_mix.csv");
    all.extend(kernels("values_app.csv"));
    let verdict = |prefix: &str| {
        let kernel = all
            .iter()
            .find(|k| k.short_name.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix}"));
        evaluate_inputs(peaks, &RooflineInputs::from_record(&without_sol(kernel)))
    };
    // No FLOP counters in this capture: the loads alone decide.
    for (prefix, limiter) in [
        ("nvjet_sm90_tst", Limiter::TensorPipe),
        ("nvjet_sm90_hsh", Limiter::TensorPipe),
        ("sm90_xmma_gemm_f32f32_tf32f32", Limiter::TensorPipe),
        ("cutlass::Kernel2<cutlass_80_simt_sgemm", Limiter::Issue),
        ("matmul_tiled<32>", Limiter::LsuPipe),
        ("matmul_naive", Limiter::LsuPipe),
    ] {
        let point = verdict(prefix);
        assert_eq!(point.bound, Bound::Compute, "{prefix}");
        assert_eq!(point.limiter, limiter, "{prefix}");
        assert!(point.inputs.contains(Inputs::PIPE_LOADS), "{prefix}");
        assert!(point.inputs.contains(Inputs::SM_THROUGHPUT), "{prefix}");
    }
    // A speed of light with no pipe loads names no pipe.
    let mut sol_only = RooflineInputs::from_record(&all[1]);
    sol_only.busiest_pipe = None;
    assert_eq!(evaluate_inputs(peaks, &sol_only).limiter, Limiter::Sm);
}
