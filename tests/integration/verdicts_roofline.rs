//! Tensor-core verdicts on real H200 output (tests/fixtures/ncu-h200-tensor: three PyTorch
//! matmuls and five RNG fills, captured with every tensor-pipe counter and the SM clock).

use polyprof::model::record::{FlopCounts, KernelRecord, Precision};
use polyprof::profilers::ncu::{ParseOptions, parse};
use polyprof::results::devices::DeviceTable;
use polyprof::results::roofline::{
    Bound, ClockState, Inputs, Limiter, RooflineInputs, evaluate_inputs, evaluate_record,
};

use crate::support::fixture;

fn kernels() -> Vec<KernelRecord> {
    let path = fixture("ncu-h200-tensor/mm_tensor.csv");
    let bytes = std::fs::read(&path).unwrap();
    let parsed = parse(&bytes, &ParseOptions::default());
    assert_eq!(parsed.kernels.len(), 8, "{:?}", parsed.diagnostics);
    parsed.kernels
}

fn find<'a>(kernels: &'a [KernelRecord], prefix: &str) -> &'a KernelRecord {
    kernels
        .iter()
        .find(|k| k.short_name.starts_with(prefix))
        .unwrap_or_else(|| panic!("no kernel {prefix}"))
}

fn h200() -> polyprof::results::devices::DevicePeaks {
    DeviceTable::builtin()
        .unwrap()
        .lookup("NVIDIA H200")
        .unwrap()
        .clone()
}

#[test]
fn tensor_flops_per_precision_equal_the_matmul_flop_counts() {
    let kernels = kernels();
    let two_n_cubed = |n: f64| 2.0 * n * n * n;
    let bf16 = find(&kernels, "nvjet_sm90_tst");
    assert_eq!(bf16.flops.tensor_bf16, Some(two_n_cubed(4096.0)));
    assert_eq!(bf16.flops.tensor_fp16, Some(0.0));
    assert_eq!(bf16.total_flops(), Some(two_n_cubed(4096.0)));
    let fp16 = find(&kernels, "nvjet_sm90_hsh");
    assert_eq!(fp16.flops.tensor_fp16, Some(two_n_cubed(4096.0)));
    let tf32 = find(&kernels, "sm90_xmma_gemm_f32f32_tf32f32");
    assert_eq!(tf32.flops.tensor_tf32, Some(two_n_cubed(2048.0)));
    // The RNG fills execute HFMA2.MMA (constant moves), no matrix math: labelled, not counted.
    let fills: Vec<&KernelRecord> = kernels
        .iter()
        .filter(|k| k.short_name.contains("distribution_elementwise"))
        .collect();
    assert_eq!(fills.len(), 5);
    for fill in fills {
        assert_eq!(fill.flops.tensor_total(), Some(0.0));
        assert!(fill.flops.fp16_hfma2_mma.is_some_and(|f| f > 0.0));
        assert_eq!(fill.flops.total(), Some(0.0));
    }
}

#[test]
fn matmuls_are_compute_bound_on_the_tensor_pipe_at_the_clock_they_ran() {
    let kernels = kernels();
    let peaks = h200();
    for (prefix, precision, sm_sol) in [
        ("nvjet_sm90_tst", Precision::TensorBf16, 90.44),
        ("nvjet_sm90_hsh", Precision::TensorFp16, 90.29),
        (
            "sm90_xmma_gemm_f32f32_tf32f32",
            Precision::TensorTf32,
            72.85,
        ),
    ] {
        let record = find(&kernels, prefix);
        let point = evaluate_record(Some(&peaks), record);
        assert_eq!(point.bound, Bound::Compute, "{prefix}");
        assert_eq!(point.limiter, Limiter::TensorPipe, "{prefix}");
        assert_eq!(point.precision, Some(precision), "{prefix}");
        assert_eq!(point.clock_state, Some(ClockState::BelowBoost), "{prefix}");
        assert!(point.inputs.contains(Inputs::FLOPS));
        assert!(point.inputs.contains(Inputs::SM_CLOCK));
        // Scaled to the clock the launch ran at, % of tensor peak equals ncu's SM speed of
        // light within half a point: the tensor peak is 4096 FLOP/clk/SM at 1830 MHz.
        let pct = point.pct_peak_compute.unwrap();
        assert!(
            (pct - sm_sol).abs() < 0.5,
            "{prefix}: {pct} vs SOL {sm_sol}"
        );
        let ghz = point.sm_clock_ghz.unwrap();
        assert!((1.5..1.8).contains(&ghz), "{prefix}: {ghz}");
        let tflops = point.gflops_per_s.unwrap() / 1e3;
        let expected = record.total_flops().unwrap() / record.duration_ns.unwrap() / 1e3;
        assert!((tflops - expected).abs() < 1e-9);
    }
    let bf16 = evaluate_record(Some(&peaks), find(&kernels, "nvjet_sm90_tst"));
    let verdict = bf16.verdict();
    assert!(
        verdict.starts_with("compute-bound, tensor pipe (bf16), 90 % of peak at 1.59 GHz"),
        "{verdict}"
    );
    let json = serde_json::to_value(bf16).unwrap();
    assert_eq!(json["limiter"], "tensor_pipe");
    assert_eq!(json["precision"], "tensor_bf16");
    assert_eq!(json["inputs"], serde_json::json!(["flops", "sm_clock"]));
}

#[test]
fn without_tensor_counters_the_speed_of_light_still_calls_matmuls_compute_bound() {
    // Today's preset before tensor counters: the same launches with no FLOPs at all.
    let peaks = h200();
    for mut record in kernels()
        .into_iter()
        .filter(|k| k.short_name.contains("gemm") || k.short_name.starts_with("nvjet"))
    {
        record.flops = FlopCounts::default();
        let point = evaluate_record(Some(&peaks), &record);
        assert_eq!(point.bound, Bound::Compute, "{}", record.short_name);
        assert_eq!(point.limiter, Limiter::Sm);
        assert!(point.inputs.contains(Inputs::SM_THROUGHPUT));
        assert!(!point.inputs.contains(Inputs::FLOPS));
    }
}

#[test]
fn a_93_percent_sm_kernel_with_a_fifth_of_bandwidth_is_not_memory_bound() {
    // The cuBLAS bf16 8192³ case: no FLOPs counted, SM speed of light 93 %, DRAM at
    // 20.5 % of the H200's 4.8 TB/s over its GPU time.
    let peaks = h200();
    let time_ns = 1.404e6;
    let inputs = RooflineInputs {
        bytes: Some(0.205 * 4800.0 * time_ns),
        gpu_time_ns: Some(time_ns),
        sm_throughput_pct: Some(93.0),
        dram_throughput_pct: Some(20.5),
        ..Default::default()
    };
    let point = evaluate_inputs(Some(&peaks), &inputs);
    assert_eq!(point.bound, Bound::Compute);
    assert_eq!(point.limiter, Limiter::Sm);
    assert!((point.pct_peak_bandwidth.unwrap() - 20.5).abs() < 1e-6);
    assert_eq!(
        point.inputs.names(),
        ["dram_bytes", "sm_throughput_pct", "dram_throughput_pct"]
    );
}

#[test]
fn memory_limiters_are_named_dram_or_cache() {
    let peaks = h200();
    let base = RooflineInputs {
        gpu_time_ns: Some(1e5),
        sm_throughput_pct: Some(30.0),
        ..Default::default()
    };
    let dram = evaluate_inputs(
        Some(&peaks),
        &RooflineInputs {
            memory_throughput_pct: Some(85.0),
            dram_throughput_pct: Some(84.0),
            ..base
        },
    );
    assert_eq!((dram.bound, dram.limiter), (Bound::Memory, Limiter::Dram));
    let cache = evaluate_inputs(
        Some(&peaks),
        &RooflineInputs {
            memory_throughput_pct: Some(85.0),
            dram_throughput_pct: Some(12.0),
            ..base
        },
    );
    assert_eq!((cache.bound, cache.limiter), (Bound::Memory, Limiter::L2));
    let idle = evaluate_inputs(
        Some(&peaks),
        &RooflineInputs {
            sm_throughput_pct: Some(5.0),
            dram_throughput_pct: Some(3.0),
            ..base
        },
    );
    assert_eq!(
        (idle.bound, idle.limiter),
        (Bound::Latency, Limiter::Latency)
    );
}

#[test]
fn clocks_locked_at_base_are_said_and_bandwidth_follows_the_memory_clock() {
    let peaks = h200();
    let work = FlopCounts {
        tensor_bf16: Some(1e12),
        ..Default::default()
    };
    let locked = evaluate_inputs(
        Some(&peaks),
        &RooflineInputs {
            flops: work,
            gpu_time_ns: Some(2e6),
            sm_clock_hz: Some(1.59e9),
            clocks_locked: Some(true),
            ..Default::default()
        },
    );
    assert_eq!(locked.clock_state, Some(ClockState::LockedBase));
    assert!(
        locked.verdict().ends_with("(clocks locked at base)"),
        "{}",
        locked.verdict()
    );
    // 1e12 FLOP in 2 ms = 500 TFLOP/s; peak at 1.59 GHz = 989.5 · 1590/1830.
    let expected = 100.0 * 500.0 / (989.5 * 1590.0 / 1830.0);
    assert!((locked.pct_peak_compute.unwrap() - expected).abs() < 1e-9);
    // DRAM at half its clock: the same bytes are twice the share of the scaled bandwidth.
    let full = RooflineInputs {
        bytes: Some(1e9),
        gpu_time_ns: Some(1e6),
        dram_clock_hz: Some(3.201e9),
        ..Default::default()
    };
    let half = RooflineInputs {
        dram_clock_hz: Some(1.6005e9),
        ..full
    };
    let full = evaluate_inputs(Some(&peaks), &full);
    let half = evaluate_inputs(Some(&peaks), &half);
    assert!(
        (half.pct_peak_bandwidth.unwrap() - 2.0 * full.pct_peak_bandwidth.unwrap()).abs() < 1e-9
    );
    assert_eq!(full.dram_clock_ghz, Some(3.201));
}

#[test]
fn the_details_page_names_cache_bound_kernels_by_their_memory_speed_of_light() {
    // `--set detailed` on the H200 (tests/fixtures/ncu-h200/details_page.stdout): matmul_tiled
    // has Memory Throughput 84.95 % (L1/TEX 88.83 %) but DRAM 0.70 % and SM 71.29 %.
    let path = fixture("ncu-h200/details_page.stdout");
    let parsed = parse(&std::fs::read(path).unwrap(), &ParseOptions::default());
    let peaks = h200();
    let verdict = |name: &str| {
        let record = find(&parsed.kernels, name);
        evaluate_record(Some(&peaks), record)
    };
    let tiled = verdict("matmul_tiled<32>");
    assert_eq!((tiled.bound, tiled.limiter), (Bound::Memory, Limiter::L2));
    assert!(tiled.inputs.contains(Inputs::MEMORY_THROUGHPUT));
    assert!(tiled.inputs.contains(Inputs::DRAM_THROUGHPUT));
    let vector_add = verdict("vector_add");
    assert_eq!(
        (vector_add.bound, vector_add.limiter),
        (Bound::Memory, Limiter::Dram)
    );
}

/// No FP8 launch was captured, so this builds one from the real bf16 cuBLAS launch of the
/// capture: its 2·4096³ tensor FLOPs counted as FP8 twice over (the H200's FP8 peak is twice
/// its BF16 peak, so the share stays the capture's 90.4 %), plus the FP32 work an FP8 GEMM does
/// on the side (scaling, amax) sized to 13 % of the FMA pipe over the launch's time. Tensor
/// cores and the FMA pipe run at once: the share is the busier pipe's, 90.4 %, not the 103 %
/// that adding the two times gave.
#[test]
fn fp8_matmul_with_fp32_side_work_stays_at_its_tensor_share() {
    let peaks = h200();
    let bf16 = find(&kernels(), "nvjet_sm90_tst").clone();
    let captured = evaluate_record(Some(&peaks), &bf16);
    let time_ns = bf16.duration_ns.unwrap();
    let clock_hz = captured.sm_clock_ghz.unwrap() * 1e9;
    let fp32_peak_at_clock = 67.0 * clock_hz / 1.98e9; // TFLOP/s = 10^3 FLOP per ns
    let mut fp8 = bf16.clone();
    fp8.flops.tensor_fp8 = Some(2.0 * bf16.flops.tensor_bf16.unwrap());
    fp8.flops.tensor_bf16 = Some(0.0);
    fp8.flops.fp32 = Some(0.13 * time_ns * fp32_peak_at_clock * 1e3);

    let point = evaluate_record(Some(&peaks), &fp8);
    let pct = point.pct_peak_compute.unwrap();
    let tensor_only = captured.pct_peak_compute.unwrap();
    assert!((pct - tensor_only).abs() < 1e-6, "{pct} vs {tensor_only}");
    assert!(pct < 100.0, "{pct}");
    assert_eq!(point.precision, Some(Precision::TensorFp8));
    assert_eq!(
        (point.bound, point.limiter),
        (Bound::Compute, Limiter::TensorPipe)
    );
    assert_eq!(point.above_peak, None);

    // FP32 work that is the busier pipe names the share and the precision.
    let mut simt = fp8.clone();
    simt.flops.fp32 = Some(0.95 * time_ns * fp32_peak_at_clock * 1e3);
    let point = evaluate_record(Some(&peaks), &simt);
    assert!((point.pct_peak_compute.unwrap() - 95.0).abs() < 1e-6);
    assert_eq!(point.precision, Some(Precision::Fp32));
}

/// A share above 100 % of the clock-scaled peak cannot be: the point says so, the JSON carries
/// it, and the table report prints a warning and marks the cell.
#[test]
fn a_share_above_the_clock_scaled_peak_is_a_diagnostic() {
    let peaks = h200();
    let mut fast = find(&kernels(), "nvjet_sm90_tst").clone();
    // The same FLOPs in 85 % of the captured time: 106 % of the tensor peak at its clock.
    fast.duration_ns = fast.duration_ns.map(|t| t * 0.85);
    let point = evaluate_record(Some(&peaks), &fast);
    assert!(point.pct_peak_compute.unwrap() > 100.0);
    assert_eq!(
        point.above_peak,
        Some(polyprof::results::roofline::AbovePeak::Compute)
    );
    let verdict = point.verdict();
    assert!(
        verdict.contains("ABOVE PEAK: 106.4 % of the compute peak (bf16) at 1.59 GHz"),
        "{verdict}"
    );
    assert_eq!(
        serde_json::to_value(point).unwrap()["above_peak"],
        "compute"
    );

    let mut run =
        polyprof::results::ProfileRun::new("ncu.000", "ncu", &[], std::path::Path::new("x"));
    run.kernels.push(fast);
    let report = polyprof::results::export::Report::from_run(run, Some(peaks));
    let table = polyprof::results::export::table::render_fitted(&report, None);
    let warning = table
        .lines()
        .find(|l| l.starts_with("warning  above_peak: nvjet_sm90_tst"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(warning.contains("106.4 % of the compute peak"), "{warning}");
    assert!(table.contains("106.4!"), "{table}");
}

/// The real cuBLAS FP8 matmul (tests/fixtures/ncu-h200-fp8, both clock policies): its FP32
/// epilogue runs beside the tensor work, so the compute share is the tensor pipe's and stays
/// below 100 % of the peak at the clock the launch ran at (main added the two: 103 %).
#[test]
fn the_captured_fp8_matmul_stays_below_its_clock_scaled_peak() {
    let peaks = h200();
    for file in ["fp8_clock_base.csv", "fp8_clock_none.csv"] {
        let bytes = std::fs::read(fixture(&format!("ncu-h200-fp8/{file}"))).unwrap();
        let parsed = parse(&bytes, &ParseOptions::default());
        let matmul = find(&parsed.kernels, "nvjet_sm90_qqtst");
        // 2·8192³ and 0.2 % more: ncu counts 2·8192²·8208 for this cuBLAS kernel.
        let fp8 = matmul.flops.tensor_fp8.unwrap();
        assert!(
            (fp8 / (2.0 * 8192f64.powi(3)) - 1.0).abs() < 0.005,
            "{file}: {fp8}"
        );
        assert!(
            matmul.flops.fp32.is_some_and(|f| f > 4e9),
            "{file}: the epilogue's FP32"
        );
        let point = evaluate_record(Some(&peaks), matmul);
        let pct = point.pct_peak_compute.unwrap();
        assert!(
            (85.0..=100.0).contains(&pct),
            "{file}: {pct} % of the FP8 peak"
        );
        assert_eq!(point.precision, Some(Precision::TensorFp8), "{file}");
        assert_eq!(point.bound, Bound::Compute, "{file}");
        assert_eq!(point.above_peak, None, "{file}");
    }
}
