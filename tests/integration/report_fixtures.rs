//! Builds the run.json fixtures under tests/fixtures/runs/ from the REAL Nsight Compute output
//! kept verbatim in tests/fixtures/runs/ncu-h200-source/, and checks that the committed files
//! still match. Regenerate with `UPDATE_FIXTURES=1 cargo test --test integration report_fixtures`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use polyprof::model::record::short_kernel_name;
use polyprof::model::run::{DeviceInfo, StepRun};
use polyprof::pipeline::{Outcome, RunResult, StreamCapture, Timings};
use polyprof::profilers::RawArtifact;
use polyprof::results::{FlopCounts, KernelRecord, Metric, MetricValue, ProfileRun};

use crate::support::fixture;

fn root() -> PathBuf {
    fixture("runs")
}

fn number(text: &str) -> f64 {
    text.replace(',', "").parse().unwrap()
}

fn dims(text: &str) -> [u64; 3] {
    let parts: Vec<u64> = text
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(|p| p.trim().parse().unwrap())
        .collect();
    [parts[0], parts[1], parts[2]]
}

/// The four kernels of `ncu --csv --page raw --metrics … ./app 1` on the H200.
fn real_records() -> Vec<KernelRecord> {
    let raw =
        std::fs::read_to_string(root().join("ncu-h200-source/raw_page_selected_metrics.stdout"))
            .unwrap();
    let csv_text: String = raw
        .lines()
        .filter(|l| l.starts_with('"'))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(csv_text.as_bytes());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let header: HashMap<&str, usize> = rows[0].iter().enumerate().map(|(i, h)| (h, i)).collect();
    // rows[1] holds the units (byte, ns, %, inst); the data follows.
    rows[2..]
        .iter()
        .map(|row| {
            let get = |name: &str| &row[header[name]];
            let fadd = number(get("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"));
            let fmul = number(get("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"));
            let ffma = number(get("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"));
            let name = get("Kernel Name").to_string();
            let mut metrics = std::collections::BTreeMap::new();
            for (metric, unit) in [
                ("launch__occupancy_limit_registers", "block"),
                ("launch__waves_per_multiprocessor", ""),
            ] {
                metrics.insert(
                    metric.into(),
                    Metric {
                        value: MetricValue::Number(number(get(metric))),
                        unit: unit.into(),
                    },
                );
            }
            KernelRecord {
                profiler: "ncu".into(),
                process_id: Some(get("Process ID").parse().unwrap()),
                process_name: Some(get("Process Name").into()),
                launch_id: get("ID").parse().unwrap(),
                short_name: short_kernel_name(&name),
                name,
                device: Some(get("Device").into()),
                stream: Some(get("Stream").into()),
                grid: Some(dims(get("Grid Size"))),
                block: Some(dims(get("Block Size"))),
                start_ns: None,
                duration_ns: Some(number(get("gpu__time_duration.sum"))),
                calls: 1,
                dram_bytes_read: Some(number(get("dram__bytes_read.sum"))),
                dram_bytes_write: Some(number(get("dram__bytes_write.sum"))),
                dram_bytes: Some(number(get("dram__bytes.sum"))),
                achieved_occupancy_pct: Some(number(get(
                    "sm__warps_active.avg.pct_of_peak_sustained_active",
                ))),
                sm_throughput_pct: Some(number(get(
                    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                ))),
                registers_per_thread: Some(number(get("launch__registers_per_thread")) as u32),
                shared_mem_per_block: Some(
                    (number(get("launch__shared_mem_per_block_static"))
                        + number(get("launch__shared_mem_per_block_dynamic")))
                        as u64,
                ),
                // add + mul + 2·fma, all FP32 here.
                flops: FlopCounts {
                    fp32: Some(fadd + fmul + 2.0 * ffma),
                    ..Default::default()
                },
                metrics,
                ..Default::default()
            }
        })
        .collect()
}

fn run(label: &str, kernels: Vec<KernelRecord>, wall_s: f64) -> ProfileRun {
    let argv = polyprof::model::arg::args(["./app", "1"]);
    let mut run = ProfileRun::new(
        label,
        "ncu",
        &argv,
        Path::new("polyprof-runs").join(label).as_path(),
    );
    run.started_unix_s = 1_796_047_200.0;
    run.profiler.version = Some("2025.3.1.0".into());
    run.profiler.configuration = Some("selected metrics".into());
    run.device = Some(DeviceInfo {
        name: "NVIDIA H200".into(),
        compute_capability: Some("9.0".into()),
        arch: Some("sm_90".into()),
    });
    let ncu_argv: Vec<String> = [
        "ncu", "--csv", "--page", "raw", "--metrics",
        "gpu__time_duration.sum,dram__bytes.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
        "./app", "1",
    ]
    .map(String::from)
    .to_vec();
    let outcome = Outcome::Exited { code: 0 };
    run.steps.push(StepRun {
        name: "profile".into(),
        attempts: vec![RunResult {
            argv: polyprof::model::arg::args(ncu_argv),
            outcome: outcome.clone(),
            pid: None,
            marker: None,
            timings: Timings {
                spawn_s: 0.004,
                first_output_s: Some(0.41),
                marker_s: None,
                exit_s: Some(wall_s),
                end_s: wall_s,
            },
            leaked: false,
            killed: Vec::new(),
            stdout: StreamCapture {
                total_bytes: 21_546,
                lines: 9,
                head: vec![
                    "==WARNING== Note: Running with unmodified GPU clocks. If not controlled otherwise, profiling results may be inconsistent.".into(),
                    "==PROF== Connected to process 1579 (/tmp/cap/app)".into(),
                    "done: no error".into(),
                    "==PROF== Disconnected from process 1579".into(),
                ],
                ..Default::default()
            },
            stderr: StreamCapture::default(),
            warnings: Vec::new(),
        }],
        accepted: true,
        rejection: None,
    });
    run.outcome = Some(outcome);
    run.artifacts.push(RawArtifact {
        name: "ncu.stdout".into(),
        path: Path::new("polyprof-runs").join(label).join("ncu.stdout"),
        size: 21_546,
        content: Vec::new(),
        truncated: false,
    });
    run.kernels = kernels;
    run
}

/// The baseline with matmul_tiled<32> 22 % slower (as if built with a worse tile size) and
/// ±1 % noise on the others: a stand-in candidate for diff tests, not a measurement.
fn regressed(mut kernels: Vec<KernelRecord>) -> Vec<KernelRecord> {
    for record in &mut kernels {
        let factor = match record.short_name.as_str() {
            "matmul_tiled<32>" => 1.22,
            "vector_add" => 1.004,
            "reduce_sum" => 0.99,
            _ => 1.0,
        };
        record.duration_ns = record.duration_ns.map(|t| (t * factor).round());
    }
    kernels
}

fn check_or_write(dir: &str, run: &ProfileRun) {
    let path = root().join(dir).join("run.json");
    let generated = serde_json::to_value(run).unwrap();
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&generated).unwrap() + "\n",
        )
        .unwrap();
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run UPDATE_FIXTURES=1 cargo test --test integration report_fixtures",
            path.display()
        )
    });
    let committed: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        committed,
        generated,
        "{} is stale; run UPDATE_FIXTURES=1 cargo test --test integration report_fixtures",
        path.display()
    );
    // And it reads back through the library.
    assert_eq!(&ProfileRun::read(&path).unwrap(), run);
}

#[test]
fn real_numbers_reach_the_records() {
    let records = real_records();
    let names: Vec<&str> = records.iter().map(|r| r.short_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "vector_add",
            "matmul_naive",
            "matmul_tiled<32>",
            "reduce_sum"
        ]
    );
    assert_eq!(records[0].duration_ns, Some(58_784.0));
    assert_eq!(records[0].dram_bytes, Some(189_068_288.0));
    assert_eq!(records[1].flops.fp32, Some(2_147_483_648.0));
    assert_eq!(records[2].shared_mem_per_block, Some(8_192));
    assert_eq!(records[3].flops.fp32, Some(25_133_056.0));
}

#[test]
fn baseline_fixture_is_current() {
    check_or_write("h200-baseline", &run("ncu.000", real_records(), 2.5));
}

#[test]
fn regressed_fixture_is_current() {
    check_or_write(
        "h200-regressed",
        &run("ncu.000", regressed(real_records()), 2.6),
    );
}
