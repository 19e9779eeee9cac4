//! Raw-page parsing against the real H200 fixtures (ncu 2025.3.1). Every figure below was read
//! from the fixture file named in the test.

use crate::support::ncu::*;
use polyprof::model::record::MetricValue;
use polyprof::profilers::Severity;
use polyprof::profilers::ncu::options::MINIMAL_METRICS;

#[test]
fn default_set_raw_page() {
    let parsed = parse_fixture("ncu-h200/raw_page.stdout");
    assert_eq!(parsed.kernels.len(), 4);
    let names: Vec<&str> = parsed
        .kernels
        .iter()
        .map(|k| k.short_name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "vector_add",
            "matmul_naive",
            "matmul_tiled<32>",
            "reduce_sum"
        ]
    );
    let va = kernel(&parsed, "vector_add");
    assert_eq!(va.profiler, "ncu");
    assert_eq!((va.process_id, va.launch_id), (Some(1346), 0));
    assert_eq!(va.process_name.as_deref(), Some("app"));
    assert_eq!(
        va.name,
        "vector_add(const float *, const float *, float *, int)"
    );
    assert_eq!(va.grid, Some([65536, 1, 1]));
    assert_eq!(va.block, Some([256, 1, 1]));
    assert_eq!(va.duration_ns, Some(59_744.0));
    assert_eq!(va.registers_per_thread, Some(16));
    assert_eq!(va.shared_mem_per_block, Some(0));
    assert!(close(va.achieved_occupancy_pct, 74.30));
    assert!(close(va.theoretical_occupancy_pct, 100.0));
    assert!(close(va.sm_throughput_pct, 40.45));
    assert!(close(va.memory_throughput_pct, 65.79));
    assert_eq!(va.device.as_deref(), Some("NVIDIA H200"));
    // The default set has no DRAM byte counters: fields stay empty, not zero.
    assert_eq!(va.dram_bytes_read, None);
    let tiled = kernel(&parsed, "matmul_tiled<32>");
    assert_eq!(tiled.duration_ns, Some(248_352.0));
    assert_eq!(tiled.shared_mem_per_block, Some(8192));
    assert_eq!(tiled.block, Some([32, 32, 1]));
    let reduce = kernel(&parsed, "reduce_sum");
    assert_eq!(reduce.shared_mem_per_block, Some(1024));
    // Every other metric is kept with its unit; device attributes go to the session once.
    let limit = &tiled.metrics["launch__occupancy_limit_shared_mem"];
    assert_eq!((limit.value.as_f64(), &*limit.unit), (Some(3.0), "block"));
    assert_eq!(tiled.metrics["gpu__time_duration.sum"].unit, "ns");
    assert!(
        !tiled
            .metrics
            .keys()
            .any(|k| k.starts_with("device__attribute_"))
    );
    assert_eq!(parsed.session["device.0.display_name"], "NVIDIA H200");
    assert_eq!(
        parsed.session["device.0.max_shared_memory_per_multiprocessor"],
        "233472"
    );
    assert_eq!(parsed.session["compute_capability"], "9.0");
    assert_eq!(parsed.session["device_name"], "NVIDIA H200");
    assert_eq!(parsed.session["process.1346"], "/tmp/cap/app");
    // Only the unlocked-clocks note: nothing is wrong with this run.
    assert_eq!(kinds(&parsed), ["unlocked_clocks"]);
    assert!(
        parsed
            .diagnostics
            .iter()
            .all(|d| d.severity == Severity::Info)
    );
}

#[test]
fn selected_metrics_fill_dram_and_flops() {
    let requested = [
        "gpu__time_duration.sum",
        "dram__bytes.sum",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "launch__registers_per_thread",
        "launch__occupancy_limit_registers",
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    ];
    let parsed = parse_requested("ncu-h200/raw_page_selected_metrics.stdout", &requested);
    assert_eq!(parsed.kernels.len(), 4);
    assert_eq!(
        kinds(&parsed),
        ["unlocked_clocks"],
        "{:?}",
        parsed.diagnostics
    );
    let va = kernel(&parsed, "vector_add");
    assert_eq!(va.duration_ns, Some(58_784.0));
    assert_eq!(va.dram_bytes_read, Some(134_228_992.0));
    assert_eq!(va.dram_bytes_write, Some(54_839_296.0));
    assert_eq!(va.dram_bytes, Some(189_068_288.0));
    assert_eq!(va.total_dram_bytes(), Some(189_068_288.0));
    // One FADD per element: 2^24 FLOPs, no FMA.
    assert_eq!(va.flops.fp32, Some(16_777_216.0));
    assert_eq!(va.flops.fp16, None, "fp16 counters were not requested");
    let naive = kernel(&parsed, "matmul_naive");
    // 1024^3 FFMA = 2·1024^3 FLOPs.
    assert_eq!(naive.flops.fp32, Some(2_147_483_648.0));
    assert_eq!(naive.total_flops(), Some(2_147_483_648.0));
    let gflops = naive.gflops_per_s().unwrap();
    assert!((gflops - 2_147_483_648.0 / 415_840e-9 / 1e9).abs() < 1e-6);
    assert!(naive.arithmetic_intensity().unwrap() > 200.0);
    // Rollups ncu adds on its own stay available.
    assert_eq!(va.metric("dram__bytes_read.max"), Some(2_857_984.0));
}

#[test]
fn requested_metric_absent_is_an_error_naming_it() {
    let parsed = parse_requested(
        "ncu-h200/raw_page_selected_metrics.stdout",
        &["gpu__time_duration.sum", "dram__bytes_raed.sum"],
    );
    let missing: Vec<_> = parsed
        .diagnostics
        .iter()
        .filter(|d| d.kind == "metric_missing")
        .collect();
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].severity, Severity::Error);
    assert!(missing[0].message.contains("`dram__bytes_raed.sum`"));
}

#[test]
fn imported_report_in_base_units() {
    let parsed = parse_fixture("ncu-h200/import_raw_base_units.stdout");
    let durations: Vec<f64> = parsed
        .kernels
        .iter()
        .filter_map(|k| k.duration_ns)
        .collect();
    assert_eq!(durations, [58_080.0, 414_080.0, 246_016.0, 60_704.0]);
    let va = kernel(&parsed, "vector_add");
    assert_eq!(va.dram_bytes_read, Some(134_222_848.0));
    assert!(close(va.memory_throughput_pct, 67.72));
    assert_eq!(va.process_id, Some(2950));
    // No ncu message at all in an export: no diagnostics.
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
}

#[test]
fn minimal_preset_matches_what_the_import_fixture_carries() {
    // The import fixture was made with a metric list close to the minimal preset: every preset
    // name that appears there must land in a record field or the metrics map.
    let parsed = parse_fixture("ncu-h200/import_raw_base_units.stdout");
    let va = kernel(&parsed, "vector_add");
    for name in MINIMAL_METRICS {
        if let Some(metric) = va.metrics.get(*name) {
            assert!(matches!(metric.value, MetricValue::Number(_)), "{name}");
        }
    }
}

#[test]
fn pytest_stdout_mixes_summary_and_csv() {
    let parsed = parse_fixture("ncu-h200/pytest_target_processes_all.stdout");
    assert_eq!(parsed.kernels.len(), 21);
    assert!(parsed.kernels.iter().all(|k| k.process_id == Some(2110)));
    let gemm = &parsed.kernels[2];
    assert_eq!(
        gemm.short_name,
        "cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>"
    );
    assert_eq!(gemm.duration_ns, Some(345_376.0));
    assert_eq!(gemm.dram_bytes, Some(33_831_680.0));
    assert_eq!(gemm.grid, Some([128, 1, 1]));
    assert_eq!(kinds(&parsed), ["unlocked_clocks"]);
}

#[test]
fn log_file_holds_the_csv_and_stdout_only_the_program() {
    let parsed = parse_fixture("ncu-h200/pytest_log_file.csv");
    assert_eq!(parsed.kernels.len(), 21);
    assert_eq!(parsed.kernels[20].duration_ns, Some(4_000.0));
    assert_eq!(
        parsed.kernels[20].short_name.split('<').next(),
        Some("at::reduce_kernel")
    );
    // The matching stdout has only pytest's lines: no table, no ncu message.
    let stdout = parse_fixture("ncu-h200/pytest_log_file.stdout");
    assert!(stdout.kernels.is_empty());
    assert!(stdout.diagnostics.is_empty());
}

#[test]
fn two_processes_share_one_block_keyed_by_pid_and_id() {
    let parsed = parse_fixture("ncu-h200/pytest_xdist_two_processes.stdout");
    assert_eq!(parsed.kernels.len(), 21);
    let first: Vec<_> = parsed
        .kernels
        .iter()
        .filter(|k| k.process_id == Some(2749))
        .collect();
    let second: Vec<_> = parsed
        .kernels
        .iter()
        .filter(|k| k.process_id == Some(2752))
        .collect();
    assert_eq!((first.len(), second.len()), (18, 3));
    // IDs keep counting across processes.
    let ids: Vec<u64> = parsed.kernels.iter().map(|k| k.launch_id).collect();
    assert_eq!(ids, (0..21).collect::<Vec<_>>());
    assert_eq!(second[2].duration_ns, Some(342_944.0));
    // `[100%]==PROF== Disconnected…` glued to pytest's progress line is still recognized.
    assert_eq!(parsed.session["process.2752"], "/usr/bin/python3.12");
}

#[test]
fn sigterm_mid_run_still_yields_the_profiled_kernels() {
    let parsed = parse_fixture("ncu-h200/hang_after_summary_sigterm_log.csv");
    assert_eq!(parsed.kernels.len(), 2);
    assert_eq!(parsed.kernels[1].duration_ns, Some(60_064.0));
    assert!(kinds(&parsed).contains(&"target_shutdown"));
    // The program's own stdout (hang_after.py printed a pytest-style summary) has no data.
    let stdout = parse_fixture("ncu-h200/hang_after_summary_sigterm.stdout");
    assert!(stdout.kernels.is_empty());
    let script = String::from_utf8(read("ncu-h200/hang_after.py")).unwrap();
    let printed = String::from_utf8(read("ncu-h200/hang_after_summary_sigterm.stdout")).unwrap();
    assert!(
        script.contains(printed.trim()),
        "the stdout fixture is hang_after.py's summary"
    );
}

#[test]
fn launches_share_metric_names_parsed_once_per_header() {
    // Each metric column's name is allocated once; every launch's key points at it.
    let parsed = parse_fixture("ncu-h200/raw_page.stdout");
    assert!(parsed.kernels.len() >= 2);
    let first = &parsed.kernels[0].metrics;
    for kernel in &parsed.kernels[1..] {
        for name in kernel.metrics.keys() {
            let (shared, _) = first.get_key_value(name.as_str()).unwrap();
            assert_eq!(shared.as_str().as_ptr(), name.as_str().as_ptr(), "{name}");
        }
    }
}
