//! The minimal preset's pipe loads in place of the SM speed of light, on real H200 output
//! (tests/fixtures/ncu-h200-pipes: both captured side by side, see its README).

use polyprof::model::record::KernelRecord;
use polyprof::model::verdict_metrics::PIPE_LOADS;
use polyprof::profilers::ncu::{MetricFilter, ParseOptions, parse};
use polyprof::results::devices::DeviceTable;
use polyprof::results::roofline::{Bound, Inputs, Limiter, RooflineInputs, evaluate_inputs};

use crate::support::fixture;

const SM_SOL: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";

fn parse_all(bytes: &[u8]) -> Vec<KernelRecord> {
    let options = ParseOptions {
        keep: MetricFilter::All,
        ..Default::default()
    };
    parse(bytes, &options).kernels
}

fn capture(file: &str) -> Vec<u8> {
    std::fs::read(fixture(&format!("ncu-h200-pipes/{file}"))).unwrap()
}

fn kernels(file: &str) -> Vec<KernelRecord> {
    parse_all(&capture(file))
}

/// The capture as the minimal preset collects it: the SM speed of light's columns (every
/// rollup ncu printed of it) taken out of the CSV, the rest as ncu wrote it.
fn without_sol(file: &str) -> Vec<KernelRecord> {
    let bytes = capture(file);
    let text = String::from_utf8(bytes).unwrap();
    let mut out = Vec::new();
    let mut keep: Option<Vec<bool>> = None;
    for line in text.lines() {
        if !line.starts_with('"') {
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
            continue;
        }
        let cells = crate::support::csv_cells(line, b',');
        let keep = keep.get_or_insert_with(|| {
            cells
                .iter()
                .map(|h| !h.starts_with("sm__throughput."))
                .collect()
        });
        let kept: Vec<&String> = cells
            .iter()
            .zip(keep.iter())
            .filter(|(_, k)| **k)
            .map(|(c, _)| c)
            .collect();
        let mut writer = csv::WriterBuilder::new()
            .quote_style(csv::QuoteStyle::Always)
            .from_writer(Vec::new());
        writer.write_record(kept).unwrap();
        out.extend(writer.into_inner().unwrap());
    }
    parse_all(&out)
}

#[test]
fn the_busiest_pipe_is_the_sm_speed_of_light_for_kernels_that_load_the_sms() {
    for file in ["values_mix.csv", "values_app.csv"] {
        let with = kernels(file);
        let without = without_sol(file);
        assert_eq!(with.len(), without.len());
        for (kernel, minimal) in with.iter().zip(&without) {
            let sol = kernel.metric(SM_SOL).unwrap();
            // Parsed with both: the speed of light wins.
            assert_eq!(kernel.sm_throughput_pct, Some(sol), "{}", kernel.short_name);
            // Without it, the parser gives the busiest pipe load.
            assert_eq!(minimal.metric(SM_SOL), None);
            let load = minimal.sm_throughput_pct.unwrap();
            let busiest = PIPE_LOADS
                .iter()
                .filter_map(|name| minimal.metric(name))
                .fold(0.0, f64::max);
            assert_eq!(load, busiest, "{}", kernel.short_name);
            assert!(load <= sol + 0.5, "{}: {load} > {sol}", kernel.short_name);
            if sol >= 30.0 && !kernel.short_name.starts_with("vector_add") {
                assert!(sol - load < 1.0, "{}: {load} vs {sol}", kernel.short_name);
            }
        }
    }
    assert_eq!(
        kernels("values_mix.csv").len() + kernels("values_app.csv").len(),
        13
    );
}

#[test]
fn pipe_loads_name_the_compute_limiter() {
    let h200 = DeviceTable::builtin().unwrap();
    let peaks = h200.lookup("NVIDIA H200");
    let mut all = without_sol("values_mix.csv");
    all.extend(without_sol("values_app.csv"));
    let verdict = |prefix: &str| {
        let kernel = all
            .iter()
            .find(|k| k.short_name.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix}"));
        evaluate_inputs(peaks, &RooflineInputs::from_record(kernel))
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
    let mut sol_only = RooflineInputs::from_record(&kernels("values_mix.csv")[1]);
    sol_only.busiest_pipe = None;
    assert_eq!(evaluate_inputs(peaks, &sol_only).limiter, Limiter::Sm);
}
