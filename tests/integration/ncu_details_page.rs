//! Details-page parsing (long, ragged rows, rule rows) against the H200 and CC 12.0 fixtures.

use crate::support::ncu::*;
use polyprof::model::record::MetricValue;
use polyprof::profilers::Severity;

#[test]
fn h200_details_page_fields_and_rules() {
    let parsed = parse_fixture("ncu-h200/details_page.stdout");
    assert_eq!(parsed.kernels.len(), 4);
    let va = kernel(&parsed, "vector_add");
    assert_eq!(va.duration_ns, Some(58_848.0));
    assert!(close(va.memory_throughput_pct, 66.84));
    assert!(close(va.sm_throughput_pct, 41.09));
    assert!(close(va.achieved_occupancy_pct, 74.39));
    assert!(close(va.theoretical_occupancy_pct, 100.0));
    assert_eq!(va.registers_per_thread, Some(16));
    assert_eq!(va.shared_mem_per_block, Some(0));
    assert_eq!(va.grid, Some([65536, 1, 1]));
    let freq = &va.metrics["GPU Speed Of Light Throughput: DRAM Frequency"];
    assert_eq!(
        (freq.value.as_f64(), &*freq.unit),
        (Some(3_196_392_967.19), "hz")
    );
    let policy = &va.metrics["Launch Statistics: Cluster Scheduling Policy"];
    assert_eq!(policy.value, MetricValue::Text("PolicySpread".into()));
    let rules: Vec<(&str, &str)> = va
        .rules
        .iter()
        .map(|r| (r.name.as_str(), r.kind.as_str()))
        .collect();
    assert_eq!(
        rules,
        [("SOLBottleneck", "OPT"), ("AchievedOccupancy", "OPT")]
    );
    let achieved = &va.rules[1];
    assert_eq!(achieved.section, "Occupancy");
    assert_eq!(achieved.estimated_speedup_pct, Some(25.61));
    assert_eq!(achieved.estimated_speedup_type, "local");
    assert!(achieved.description.contains("theoretical (100.0%)"));
    assert_eq!(va.rules[0].estimated_speedup_pct, None);
    let total_rules: usize = parsed.kernels.iter().map(|k| k.rules.len()).sum();
    assert_eq!(total_rules, 12);
    let tiled = kernel(&parsed, "matmul_tiled<32>");
    assert_eq!(tiled.shared_mem_per_block, Some(8192));
}

#[test]
fn base_units_flag_changes_nothing_on_a_live_run() {
    let auto = parse_fixture("ncu-h200/details_page.stdout");
    let base = parse_fixture("ncu-h200/details_page_base_units.stdout");
    assert_eq!(auto.kernels.len(), base.kernels.len());
    for (a, b) in auto.kernels.iter().zip(&base.kernels) {
        let units_a: Vec<(&str, &str)> = a
            .metrics
            .iter()
            .map(|(k, m)| (k.as_str(), &*m.unit))
            .collect();
        let units_b: Vec<(&str, &str)> = b
            .metrics
            .iter()
            .map(|(k, m)| (k.as_str(), &*m.unit))
            .collect();
        assert_eq!(units_a, units_b, "{}", a.short_name);
    }
    assert_eq!(kernel(&base, "vector_add").process_id, Some(1502));
}

#[test]
fn detailed_set_log_as_the_python_pipeline_runs_it() {
    let parsed = parse_fixture("ncu-h200/set_detailed_log.csv");
    assert_eq!(parsed.kernels.len(), 4);
    let va = kernel(&parsed, "vector_add");
    assert_eq!(va.duration_ns, Some(58_496.0));
    let mwa = &va.metrics["Memory Workload Analysis: Memory Throughput"];
    assert_eq!(
        (mwa.value.as_f64(), &*mwa.unit),
        (Some(3_241_347_921_225.38), "byte/s")
    );
    // The SOL section's `Memory Throughput` (%) fills the field, not the MWA one (byte/s).
    assert!(close(va.memory_throughput_pct, 67.39));
    let pipes = va
        .rules
        .iter()
        .find(|r| r.name == "HighPipeUtilization")
        .unwrap();
    assert_eq!(pipes.estimated_speedup_pct, Some(93.13));
    let compression = va
        .rules
        .iter()
        .find(|r| r.name == "MemoryL2Compression")
        .unwrap();
    assert_eq!(compression.estimated_speedup_type, "global");
    let total_rules: usize = parsed.kernels.iter().map(|k| k.rules.len()).sum();
    assert_eq!(total_rules, 22);
}

#[test]
fn cc120_exports_with_auto_scaled_units() {
    let parsed = parse_fixture("ncu-cc120/kernel_0001/ncu.details.csv");
    assert_eq!(parsed.kernels.len(), 1);
    let k = &parsed.kernels[0];
    assert_eq!(k.process_id, Some(1_740_670));
    assert_eq!(k.process_name.as_deref(), Some("python3.12"));
    assert_eq!(k.block, Some([32, 4, 1]));
    assert_eq!(k.grid, Some([224, 1, 1]));
    assert!(
        k.short_name
            .ends_with("cublasGemvTensorStridedBatched<__nv_bfloat16>, float>>")
    );
    // `6.75 us` → ns, `2.33 Mbyte` → bytes, `13.72 Ghz` → hz, `345.14 Gbyte/s` → byte/s.
    assert!(close(k.duration_ns, 6_750.0));
    assert!(close(k.dram_bytes_read, 2_330_000.0));
    assert_eq!(k.dram_bytes_write, Some(0.0));
    assert!(close(
        k.metric("GPU Speed Of Light Throughput: DRAM Frequency"),
        13.72e9
    ));
    assert!(close(
        k.metric("Memory Workload Analysis: Memory Throughput"),
        345.14e9
    ));
    assert_eq!(
        k.metrics["Memory Workload Analysis: Memory Throughput"].unit,
        "byte/s"
    );
    assert!(close(k.theoretical_occupancy_pct, 16.67));
    assert!(close(k.achieved_occupancy_pct, 11.32));
    assert!(close(k.metric("Occupancy: Block Limit Registers"), 2.0));
    assert_eq!(
        k.metrics["flop_count_hp.sum"].value,
        MetricValue::Text("n/a".into())
    );
    assert_eq!(k.rules.len(), 4);
    let theoretical = k
        .rules
        .iter()
        .find(|r| r.name == "TheoreticalOccupancy")
        .unwrap();
    assert_eq!(
        (theoretical.kind.as_str(), theoretical.estimated_speedup_pct),
        ("OPT", Some(80.34))
    );
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);

    let other = parse_fixture("ncu-cc120/kernel_0009/ncu.details.csv");
    let k = &other.kernels[0];
    assert_eq!(k.grid, Some([4, 12, 54]));
    assert!(close(k.duration_ns, 160_740.0));
    assert!(close(k.dram_bytes_read, 99_630_000.0));
    assert!(close(k.dram_bytes_write, 6_020_000.0));
    assert_eq!(k.short_name, "fmha_cutlassF_bf16_aligned_64x64_rf_sm80");
}

#[test]
fn cc120_requested_but_uncollectable_metric_is_a_warning() {
    let parsed = parse_requested(
        "ncu-cc120/kernel_0009/ncu.metrics.csv",
        &[
            "sm__ops_path_tensor_src_bf16_dst_bf16.sum",
            "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
        ],
    );
    let k = &parsed.kernels[0];
    assert_eq!(
        k.metric("sm__ops_path_tensor_src_bf16_dst_fp32.sum"),
        Some(10_192_158_720.0)
    );
    let warnings: Vec<_> = parsed
        .diagnostics
        .iter()
        .filter(|d| d.kind == "metric_not_available")
        .collect();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].severity, Severity::Warning);
    assert!(
        warnings[0]
            .message
            .contains("sm__ops_path_tensor_src_bf16_dst_bf16.sum")
    );
}

#[test]
fn every_cc120_section_export_parses() {
    for kernel_dir in ["kernel_0001", "kernel_0009"] {
        let mut rules = 0;
        for (file, min_metrics) in [
            ("ncu.metrics.csv", 11),
            ("ncu.section_MemoryWorkloadAnalysis.csv", 7),
            ("ncu.section_Occupancy.csv", 13),
            ("ncu.section_SchedulerStats.csv", 5),
            ("ncu.section_SpeedOfLight.csv", 10),
            ("ncu.section_SpeedOfLight_RooflineChart.csv", 12),
        ] {
            let parsed = parse_fixture(&format!("ncu-cc120/{kernel_dir}/{file}"));
            assert_eq!(parsed.kernels.len(), 1, "{kernel_dir}/{file}");
            let k = &parsed.kernels[0];
            assert!(
                k.metrics.len() >= min_metrics,
                "{kernel_dir}/{file}: {}",
                k.metrics.len()
            );
            assert!(parsed.diagnostics.is_empty(), "{kernel_dir}/{file}");
            rules += k.rules.len();
        }
        assert!(rules >= 6, "{kernel_dir}: {rules}");
    }
    // The roofline export has a `Body Item Label` column (21 fields): it becomes part of the
    // key, so the chart's repeated labels stay apart; the value is normalized from Ghz.
    let parsed = parse_fixture("ncu-cc120/kernel_0001/ncu.section_SpeedOfLight_RooflineChart.csv");
    let k = &parsed.kernels[0];
    let key = "GPU Speed Of Light Roofline Chart: Double Precision Roofline: SM Frequency";
    assert!(close(k.metric(key), 2.15e9));
    assert!(!k.metrics.keys().any(|k| k.ends_with("#2")));
    assert!(close(
        k.metric("GPU Speed Of Light Roofline Chart: Predicated-On FFMA Thread Instructions Executed Per Cycle"),
        79.06
    ));
}
