//! AMD through the real binary: selection picks rocprofv3 for HIP, PyTorch and Triton on AMD
//! arches; the wrapped plan, run against a fake `rocprofv3` that writes the real fixture CSVs,
//! parses back with `polyprof parse --profiler rocprofv3`; counters join the trace; cut files
//! keep their whole rows; and an AMD run (built from the parsed fixtures) goes through report,
//! every export and diff.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use polyprof::model::run::{DeviceInfo, ProfileRun};
use polyprof::profilers::rocprofv3::parse_files;
use polyprof::results::devices::DeviceTable;
use serde_json::Value;

fn polyprof() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("polyprof").unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rocprofv3")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
}

/// The documented agent list with its GPU row turned into an MI300X (gfx942): the real header,
/// a constructed row, so the roofline has a device it knows.
fn mi300x_agent_info() -> String {
    String::from_utf8(read("agent_info.csv")).unwrap().replace(
        "\"gfx900\",\"AMD\",\"Radeon RX Vega\",\"vega10\"",
        "\"gfx942\",\"AMD\",\"AMD Instinct MI300X\",\"aqua_vanjaram\"",
    )
}

/// A counter pass over the traced program (another pid; the same dispatches): one FP32 add per
/// element for the addition kernels, and their DRAM traffic.
fn counters_for_trace() -> String {
    let mut text = String::from(
        "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"\n",
    );
    for dispatch in [1, 5, 13] {
        for (counter, value) in [
            ("SQ_INSTS_VALU_ADD_F32", 16384),
            ("FETCH_SIZE", 8192),
            ("WRITE_SIZE", 4096),
        ] {
            text.push_str(&format!(
                "{dispatch},{dispatch},\"Agent 1\",1,777,777,1048576,10,\"void addition_kernel<float>(float*, float const*, float const*, int, int)\",64,0,0,8,0,16,\"{counter}\",{value}.000000,1000,2000\n"
            ));
        }
    }
    text
}

#[test]
fn hip_pytorch_and_triton_select_rocprofv3_on_amd_arches() {
    for arch in [
        "gfx90a", "gfx940", "gfx941", "gfx942", "gfx1100", "mi300x", "mi250x", "mi210",
    ] {
        for language in ["hip", "pytorch", "triton"] {
            let output = polyprof()
                .args(["select", "--language", language, "--arch", arch, "--json"])
                .output()
                .unwrap();
            assert_eq!(output.status.code(), Some(0), "{language} on {arch}");
            let doc = json(&output);
            assert_eq!(doc["vendor"], "amd");
            assert_eq!(doc["passes"][0]["profiler"], "rocprofv3", "{doc}");
        }
    }
    let output = polyprof()
        .args(["select", "--language", "hip", "--arch", "mi300x"])
        .args(["--profiler", "rocprofv3-roofline", "--json"])
        .output()
        .unwrap();
    assert_eq!(json(&output)["passes"][0]["metric_group"], "roofline");
}

#[test]
fn wrap_group_picks_the_counter_steps() {
    let output = polyprof()
        .args([
            "wrap",
            "--profiler",
            "rocprofv3",
            "--group",
            "pmc:SQ_WAVES;FETCH_SIZE,WRITE_SIZE",
        ])
        .args(["--output-dir", "/tmp/amd", "--", "./app", "a b"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let plan = json(&output);
    let steps = plan["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["trace", "pmc1", "pmc2"]);
    let argv: Vec<&str> = steps[2]["command"]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        argv,
        [
            "rocprofv3",
            "--pmc",
            "FETCH_SIZE",
            "WRITE_SIZE",
            "--output-format",
            "csv",
            "-d",
            "/tmp/amd",
            "-o",
            "pmc2_%pid%",
            "--",
            "./app",
            "a b"
        ]
    );
    // The counter passes' folder is declared, so the pipeline collects it.
    assert_eq!(plan["outputs"]["collect_in"][0]["value"], "pass_");

    let bad = polyprof()
        .args(["wrap", "--profiler", "rocprofv3", "--group", "ComputeBasic"])
        .args(["--output-dir", "/tmp/amd", "--", "./app"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("roofline"));
}

#[test]
fn doctor_lists_rocprofv3_with_its_fix() {
    let empty = tempfile::tempdir().unwrap();
    let output = polyprof()
        .args(["doctor", "--json"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    let doc = json(&output);
    let list = doc.as_array().or(doc["profilers"].as_array()).unwrap();
    let amd = list.iter().find(|p| p["profiler"] == "rocprofv3").unwrap();
    assert_eq!(amd["available"], false);
    let reason = amd["reason"].as_str().unwrap();
    assert!(reason.contains("rocprofiler-sdk"), "{reason}");
}

/// A fake `rocprofv3`: reads `-d` and `-o` (expanding `%pid%`), writes the fixture files a real
/// run writes for the options it got, then runs the target after `--`.
const FAKE_ROCPROFV3: &str = r#"#!/bin/sh
dir=; name=; trace=; stats=; copies=; pmc=
while [ $# -gt 0 ]; do
  case "$1" in
    -d) dir=$2; shift 2;;
    -o) name=$(printf '%s' "$2" | sed "s/%pid%/$$/"); shift 2;;
    --kernel-trace) trace=1; shift;;
    --memory-copy-trace) copies=1; shift;;
    --stats) stats=1; shift;;
    --pmc) pmc=1; shift;;
    --) shift; break;;
    *) shift;;
  esac
done
mkdir -p "$dir"
[ -n "$trace" ] && cp "$FIXTURES/kernel_trace.csv" "$dir/${name}_kernel_trace.csv"
[ -n "$copies" ] && cp "$FIXTURES/memory_copy_trace.csv" "$dir/${name}_memory_copy_trace.csv"
[ -n "$stats" ] && cp "$FIXTURES/hip_api_stats.csv" "$dir/${name}_hip_api_stats.csv"
[ -n "$trace" ] && cp "$FIXTURES/agent_info.csv" "$dir/${name}_agent_info.csv"
"$@"
"#;

#[test]
fn wrapped_plan_against_a_fake_rocprofv3_parses_back() {
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("rocprofv3");
    std::fs::write(&fake, FAKE_ROCPROFV3).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = root.path().join("out");

    let wrapped = polyprof()
        .args(["wrap", "--profiler", "rocprofv3", "--output-dir"])
        .arg(&out)
        .args([
            "--shell",
            "--",
            "sh",
            "-c",
            "echo \"$1\"",
            "sh",
            "two words",
        ])
        .output()
        .unwrap();
    assert_eq!(wrapped.status.code(), Some(0), "{wrapped:?}");
    let script = String::from_utf8(wrapped.stdout).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let ran = std::process::Command::new("sh")
        .args(["-c", script.trim()])
        .env("PATH", path)
        .env("FIXTURES", fixture(""))
        .output()
        .unwrap();
    assert!(ran.status.success(), "{ran:?}");
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "two words\n");

    let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("trace_")), "{names:?}");

    let parsed = polyprof()
        .args(["parse", "--profiler", "rocprofv3", "--json"])
        .args(&files)
        .output()
        .unwrap();
    assert_eq!(parsed.status.code(), Some(0), "{parsed:?}");
    let doc = json(&parsed);
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 9);
    // The pid the fake expanded `%pid%` to is every record's process id.
    let pid = kernels[0]["process_id"].as_u64().unwrap();
    assert!(names[0].contains(&format!("_{pid}_")), "{names:?} {pid}");
    assert_eq!(kernels[0]["grid"], serde_json::json!([16, 1024, 1]));
    assert_eq!(kernels[0]["block"], serde_json::json!([64, 1, 1]));
    assert_eq!(kernels[0]["stream"], "1");
    assert_eq!(kernels[0]["duration_ns"], 12800.0);
    assert_eq!(doc["session"]["memory_copy.host_to_device.count"], "2");
    assert_eq!(doc["session"]["gfx_target"], "gfx900");
    // Agent info from the same pass names the device.
    assert_eq!(kernels[0]["device"], "Radeon RX Vega (gfx900)");
}

#[test]
fn counters_join_the_trace_and_give_flops_bytes_and_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace_100_kernel_trace.csv");
    let counters = dir.path().join("pmc1_777_counter_collection.csv");
    let agents = dir.path().join("trace_100_agent_info.csv");
    std::fs::write(&trace, read("kernel_trace.csv")).unwrap();
    std::fs::write(&counters, counters_for_trace()).unwrap();
    std::fs::write(&agents, mi300x_agent_info()).unwrap();
    let output = polyprof()
        .args(["parse", "--profiler", "rocprofv3", "--json"])
        .args([&trace, &counters, &agents])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let doc = json(&output);
    let kernels = doc["kernels"].as_array().unwrap();
    let add = &kernels[0];
    assert_eq!(add["short_name"], "addition_kernel<float>");
    assert_eq!(add["process_id"], 100);
    assert_eq!(add["flops"]["fp32"], 64.0 * 16384.0);
    assert_eq!(add["dram_bytes"], 12288.0 * 1024.0);
    assert_eq!(add["device"], "AMD Instinct MI300X (gfx942)");
    assert!(kernels[1]["flops"].is_null(), "{}", kernels[1]);
    assert_eq!(
        doc["session"]["device_name"],
        "AMD Instinct MI300X (gfx942)"
    );

    // The table shows the derived rates.
    let table = polyprof()
        .args(["parse", "--profiler", "rocprofv3"])
        .args([&trace, &counters])
        .output()
        .unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    let row = text.lines().find(|l| l.contains(" 1 ")).unwrap();
    // 12 MiB in 12.8 us: 983 GB/s; 1 MFLOP in 12.8 us: 81.9 GFLOP/s.
    assert!(row.contains("983.0") && row.contains("81.9"), "{row}");
}

#[test]
fn a_cut_file_keeps_its_whole_rows_and_warns() {
    let output = polyprof()
        .args(["parse", "--profiler", "rocprofv3", "--json"])
        .arg(fixture("kernel_trace_cut.csv"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(json(&output)["kernels"].as_array().unwrap().len(), 6);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning [truncated_output]"), "{stderr}");
    assert!(stderr.contains("6 complete row(s) kept"), "{stderr}");
}

#[test]
fn bad_inputs_exit_2_and_keep_what_parsed() {
    let output = polyprof()
        .args(["parse", "--profiler", "rocprofv3"])
        .arg(fixture("README.md"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("_kernel_trace.csv"));

    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("9_kernel_trace.csv");
    std::fs::write(&foreign, "\"Name\",\"Value\"\nx,1\n").unwrap();
    let output = polyprof()
        .args(["parse", "--profiler", "rocprofv3", "--json"])
        .arg(fixture("summary.txt"))
        .arg(&foreign)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let doc = json(&output);
    // The summary's kernel totals still come out; the foreign file is named in the error.
    assert_eq!(doc["kernels"].as_array().unwrap().len(), 4);
    assert!(
        doc["errors"][0].as_str().unwrap().contains("Kernel_Name"),
        "{doc}"
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("9_kernel_trace.csv"));
}

/// An AMD run directory as the pipeline writes it, from the parsed fixtures.
fn amd_run(dir: &Path, slow_multiply: f64) {
    let trace = read("kernel_trace.csv");
    let counters = counters_for_trace();
    let agents = mi300x_agent_info();
    let pass = parse_files(&[
        ("trace_100_kernel_trace.csv", &trace, false),
        (
            "pmc1_777_counter_collection.csv",
            counters.as_bytes(),
            false,
        ),
        ("trace_100_agent_info.csv", agents.as_bytes(), false),
    ]);
    assert!(pass.errors.is_empty(), "{:?}", pass.errors);
    let mut run = ProfileRun::new("rocprofv3.000", "rocprofv3", &["./vector_ops".into()], dir);
    // As the pipeline does: the parser's typed device becomes the run's.
    run.device = pass.parsed.device.clone();
    assert_eq!(
        run.device,
        Some(DeviceInfo {
            name: "AMD Instinct MI300X (gfx942)".into(),
            arch: Some("gfx942".into()),
            ..Default::default()
        })
    );
    run.kernels = pass.parsed.kernels;
    for kernel in &mut run.kernels {
        if kernel.short_name == "multiply_kernel" {
            kernel.duration_ns = kernel.duration_ns.map(|d| d * slow_multiply);
        }
    }
    run.diagnostics = pass.parsed.diagnostics;
    run.session = pass.parsed.session;
    std::fs::create_dir_all(dir).unwrap();
    run.write(dir).unwrap();
}

#[test]
fn an_amd_run_reports_exports_and_diffs() {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().join("base");
    let slow = root.path().join("slow");
    amd_run(&base, 1.0);
    amd_run(&slow, 1.5);

    let table = polyprof().arg("report").arg(&base).output().unwrap();
    assert_eq!(table.status.code(), Some(0), "{table:?}");
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("MI300X"), "{text}");
    for kernel in ["addition_kernel<float>", "multiply_kernel", "divide_kernel"] {
        assert!(text.contains(kernel), "{kernel}: {text}");
    }
    for format in ["json", "hatchet", "chrome"] {
        let output = polyprof()
            .arg("report")
            .arg(&base)
            .args(["--format", format])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{format}: {output:?}");
        let doc = json(&output);
        assert!(doc.to_string().contains("subtract_kernel"), "{format}");
    }
    let csv = polyprof()
        .arg("report")
        .arg(&base)
        .args(["--format", "csv"])
        .output()
        .unwrap();
    let csv_text = String::from_utf8_lossy(&csv.stdout);
    assert!(csv_text.lines().count() > 4, "{csv_text}");
    assert!(csv_text.contains("MI300X"), "{csv_text}");

    let same = polyprof()
        .arg("diff")
        .arg(&base)
        .arg(&base)
        .output()
        .unwrap();
    assert_eq!(same.status.code(), Some(0));
    let diff = polyprof()
        .arg("diff")
        .arg(&base)
        .arg(&slow)
        .output()
        .unwrap();
    assert_eq!(diff.status.code(), Some(1), "{diff:?}");
    let text = String::from_utf8_lossy(&diff.stdout);
    let multiply = text
        .lines()
        .find(|l| l.contains("multiply_kernel"))
        .unwrap();
    assert!(
        multiply.contains("+50.0 %") && multiply.contains("regressed"),
        "{multiply}"
    );
}

#[test]
fn device_table_knows_the_instinct_names_agents_report() {
    let table = DeviceTable::builtin().unwrap();
    for (reported, entry) in [
        ("AMD Instinct MI300X (gfx942)", "MI300X"),
        ("AMD Instinct MI250X/MI250 (gfx90a)", "MI250X"),
        ("AMD Instinct MI250 (gfx90a)", "MI250"),
        ("AMD Instinct MI210 (gfx90a)", "MI210"),
        ("AMD Instinct MI100 (gfx908)", "MI100"),
    ] {
        let found = table.lookup(reported).map(|d| d.name.as_str());
        assert_eq!(found, Some(entry), "{reported}");
    }
}
