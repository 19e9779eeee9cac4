//! `polyprof parse --profiler unitrace|ocl-unitrace|vtune FILE…` through the real binary, on the
//! real pti-gpu and VTune fixtures (and the two synthetic ones, as their READMEs say): names,
//! call counts, total and average times exactly as printed.

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// Run `polyprof parse --json --profiler P FILES…`, expect `code`, return the document.
fn parse_json(profiler: &str, files: &[PathBuf], code: i32) -> (Value, String) {
    let output = Command::cargo_bin("polyprof")
        .unwrap()
        .args(["parse", "--json", "--profiler", profiler])
        .args(files)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    (
        serde_json::from_slice(&output.stdout).unwrap_or(Value::Null),
        stderr,
    )
}

fn metric(kernel: &Value, name: &str) -> Value {
    kernel["metrics"][name]["value"].clone()
}

#[test]
fn level_zero_summary_gives_aggregated_records_as_printed() {
    let (doc, _) = parse_json(
        "unitrace",
        &[fixture("unitrace/dpc_gemm_device_timing.txt")],
        0,
    );
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1);
    let gemm = &kernels[0];
    assert_eq!(
        gemm["name"],
        "RunAndCheck(sycl::_V1::queue, std::vector<float, std::allocator<float> > const&, std::vector<float, std::allocator<float> > const&, std::vector<float, std::allocator<float> >&, unsigned int, float)::{lambda(sycl::_V1::handler&)#1}::operator()(sycl::_V1::handler&) const::__GEMM"
    );
    assert_eq!(gemm["profiler"], "unitrace");
    assert_eq!(gemm["calls"], 4);
    assert_eq!(gemm["duration_ns"], 89769760.0);
    assert_eq!(metric(gemm, "gpu_time_avg"), 22442440.0);
    assert_eq!(metric(gemm, "gpu_time_min"), 22436320.0);
    assert_eq!(metric(gemm, "gpu_time_max"), 22454240.0);
    assert_eq!(metric(gemm, "simd_width"), 32.0);
    assert_eq!(metric(gemm, "record_source"), "summary");
    assert_eq!(doc["session"]["record_source"], "summary");
    assert_eq!(
        doc["session"]["Total Device Time for L0 backend (ns)"],
        "97642160"
    );
}

#[test]
fn opencl_summary_reads_bare_names() {
    let (doc, _) = parse_json(
        "ocl-unitrace",
        &[fixture("unitrace/cl_gemm_device_timing.txt")],
        0,
    );
    let gemm = &doc["kernels"][0];
    assert_eq!(doc["kernels"].as_array().unwrap().len(), 1);
    assert_eq!(
        (gemm["name"].as_str(), gemm["profiler"].as_str()),
        (Some("GEMM"), Some("ocl-unitrace"))
    );
    assert_eq!(gemm["calls"], 4);
    assert_eq!(gemm["duration_ns"], 44280640.0);
    assert_eq!(metric(gemm, "gpu_time_avg"), 11070160.0);
}

#[test]
fn timelines_give_per_launch_records() {
    let files = [
        fixture("unitrace/dpc_gemm_device_timing.txt"),
        fixture("unitrace/dpc_gemm_device_timeline.txt"),
    ];
    let (doc, _) = parse_json("unitrace", &files, 0);
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(
        kernels.len(),
        4,
        "one record per GEMM launch, none for memory copies"
    );
    assert!(
        kernels
            .iter()
            .all(|k| k["calls"] == 1 && k["short_name"] == "RunAndCheck")
    );
    assert_eq!(kernels[0]["duration_ns"], 2853760.0);
    assert_eq!(kernels[0]["grid"], serde_json::json!([1, 1024, 1]));
    assert_eq!(doc["session"]["record_source"], "timeline");
    let (cl, _) = parse_json(
        "ocl-unitrace",
        &[fixture("unitrace/cl_gemm_device_timeline.txt")],
        0,
    );
    let durations: Vec<f64> = cl["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["duration_ns"].as_f64().unwrap())
        .collect();
    assert_eq!(durations, [2858400.0, 2873600.0, 2853920.0, 2852480.0]);
}

#[test]
fn metric_sections_give_memory_bytes_occupancy_and_flops() {
    let (doc, stderr) = parse_json(
        "unitrace",
        &[fixture("unitrace/gemm_fp16_bytes.1799860")],
        0,
    );
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 3);
    let h = &kernels[1];
    assert_eq!(h["short_name"], "hgemm_nocopy_nn_64x40_4x8");
    assert_eq!(h["duration_ns"], 4733040.0);
    assert_eq!(h["dram_bytes_read"], 848934528.0);
    assert_eq!(h["dram_bytes_write"], 125991296.0);
    assert_eq!(h["achieved_occupancy_pct"], 46.8018);
    assert_eq!(metric(h, "xve_active_pct"), 90.354);
    assert!(!stderr.contains("no_metrics"), "{stderr}");
    let (flops, _) = parse_json(
        "unitrace",
        &[fixture("unitrace/gemm_fp16_flops.1799853")],
        0,
    );
    assert_eq!(flops["kernels"][1]["flops"]["fp32"], 8102400.0 * 32.0);
}

#[test]
fn chrome_timeline_is_chosen_deliberately_and_sliced_into_benchmarks() {
    let dir = tempfile::tempdir().unwrap();
    let helper = dir.path().join("ninja.77.json");
    std::fs::write(&helper, "{ \"traceEvents\":[\n{\"ph\": \"X\", \"cat\": \"gpu_op\", \"name\": \"x\", \"ts\": 1, \"dur\": 1}\n]\n}\n").unwrap();
    let python = dir.path().join("python3.4242.json");
    std::fs::copy(fixture("unitrace/synthetic_python.4242.json"), &python).unwrap();
    let (doc, _) = parse_json("unitrace", &[helper, python], 0);
    assert_eq!(doc["session"]["timeline_file"], "python3.4242.json");
    assert_eq!(doc["session"]["record_source"], "chrome_timeline");
    let choice = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "unitrace_timeline_choice")
        .unwrap();
    let reason = choice["message"].as_str().unwrap();
    assert!(
        reason.starts_with("chose `python3.4242.json` (a python process"),
        "{reason}"
    );
    assert!(reason.ends_with("over `ninja.77.json`"), "{reason}");
    let kernels = doc["kernels"].as_array().unwrap();
    let labels: Vec<&str> = kernels
        .iter()
        .map(|k| k["metrics"]["benchmark"]["value"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "task.py::Test::test_benchmark[512]",
            "task.py::Test::test_benchmark[512]",
            "task.py::Test::test_benchmark[1024]",
            "task.py::Test::test_benchmark[1024]"
        ]
    );
    assert_eq!(kernels[0]["stream"], "Thread 4242 CCS<0,0>");
}

#[test]
fn damaged_timeline_keeps_what_is_readable_and_warns() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(fixture("unitrace/synthetic_python.4242.json")).unwrap();
    bytes.truncate(bytes.len() * 3 / 4);
    bytes.splice(40..40, [0u8; 8]);
    let cut = dir.path().join("python3.1.json");
    std::fs::write(&cut, bytes).unwrap();
    let (doc, stderr) = parse_json("unitrace", &[cut], 0);
    assert!(
        stderr.contains("unitrace_truncated_timeline") && stderr.contains("unitrace_nul_bytes"),
        "{stderr}"
    );
    let kernels = doc["kernels"].as_array().unwrap();
    assert!(!kernels.is_empty() && kernels.len() < 4, "{kernels:?}");
}

#[test]
fn vtune_gpu_report_merges_variants_and_skips_outside_rows() {
    let (doc, _) = parse_json("vtune", &[fixture("vtune/synthetic_gpu_hotspots.tsv")], 0);
    let kernels = doc["kernels"].as_array().unwrap();
    let names: Vec<&str> = kernels
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gemm_kernel", "softmax_kernel"]);
    assert_eq!(kernels[0]["duration_ns"], 300000000.0);
    assert_eq!(kernels[0]["calls"], 120);
    assert_eq!(metric(&kernels[0], "simd_width"), 16.0);
    assert_eq!(metric(&kernels[0], "xve_stalled_pct"), 20.1);
    assert_eq!(doc["session"]["grouping"], "Computing Task");
}

#[test]
fn vtune_cpu_reports_give_function_records_with_cpu_time() {
    let (doc, _) = parse_json(
        "vtune",
        &[fixture(
            "vtune/grappolo-friendster-t192-dram-hotspots-fn.csv",
        )],
        0,
    );
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 475);
    assert_eq!(kernels[0]["short_name"], "buildLocalMapCounter");
    assert_eq!(metric(&kernels[0], "cpu_time"), 31090513078000.0);
    assert_eq!(metric(&kernels[2], "CPU Time"), 5366.89834);
    // A file without any table is a clear failure, not an empty success.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.tsv");
    std::fs::write(
        &empty,
        "vtune: Error: 0x40000024 (No data) -- No data is collected.\n",
    )
    .unwrap();
    let (_, stderr) = parse_json("vtune", &[empty], 2);
    assert!(
        stderr.contains("empty.tsv") && stderr.contains("no table header"),
        "{stderr}"
    );
}
