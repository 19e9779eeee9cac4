//! `report --format proton` read by the real `proton-viewer` (the `triton` wheel from PyPI, run
//! offline: it needs no GPU to read files), for an NVIDIA, an AMD and an Intel run: every
//! metric the viewer derives works, `tflop/s` and `util` included.
//!
//! The viewer is installed once into a virtual environment under the test target directory
//! (`scripts/test.sh` does it beforehand); the test says SKIPPED only when that install fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{assert_exit, fixture, polyprof};

/// Where the viewer's virtual environment lives; scripts/test.sh installs into the same place.
fn venv() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("proton-venv")
}

fn viewer_works(venv: &Path) -> bool {
    Command::new(venv.join("bin/python"))
        .args(["-c", "import triton.profiler.viewer"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The `proton-viewer` executable, installed when missing; `None` when it cannot be.
fn proton_viewer() -> Option<PathBuf> {
    let venv = venv();
    if !viewer_works(&venv) {
        let created = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success());
        let installed = created
            && Command::new(venv.join("bin/python"))
                .args(["-m", "pip", "install", "-q", "triton", "llnl-hatchet"])
                .status()
                .is_ok_and(|s| s.success());
        if !installed || !viewer_works(&venv) {
            crate::support::record_skip(
                &crate::support::this_test(),
                &format!(
                    "cannot install proton-viewer (`pip install triton llnl-hatchet` into {})",
                    venv.display()
                ),
            );
            return None;
        }
    }
    Some(venv.join("bin/proton-viewer"))
}

/// `polyprof parse --profiler PROFILER --run-dir DIR FILES…`.
fn parsed(dir: &Path, profiler: &str, files: &[PathBuf]) -> PathBuf {
    let run_dir = dir.join(profiler);
    let out = polyprof()
        .args(["parse", "--profiler", profiler, "--run-dir"])
        .arg(&run_dir)
        .args(files)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    run_dir
}

/// The AMD capture's trace, counters and agents under the names rocprofv3 gives them.
fn amd_files(dir: &Path) -> Vec<PathBuf> {
    [
        "kernel_trace.csv",
        "counter_collection.csv",
        "agent_info.csv",
    ]
    .iter()
    .map(|name| {
        let to = dir.join(format!("run_1_{name}"));
        std::fs::copy(fixture(&format!("rocprofv3/{name}")), &to).unwrap();
        to
    })
    .collect()
}

#[test]
fn proton_viewer_derives_every_metric_for_nvidia_amd_and_intel_runs() {
    let Some(viewer) = proton_viewer() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs = [
        ("nvidia", fixture("runs/h200-baseline")),
        (
            "amd",
            parsed(dir.path(), "rocprofv3", &amd_files(dir.path())),
        ),
        (
            "intel",
            parsed(
                dir.path(),
                "unitrace",
                &[fixture("unitrace/synthetic_python.4242.json")],
            ),
        ),
    ];
    for (vendor, run_dir) in runs {
        let file = dir.path().join(format!("{vendor}.proton.json"));
        let out = polyprof()
            .args(["report", "--format", "proton", "-o"])
            .arg(&file)
            .arg(&run_dir)
            .output()
            .unwrap();
        assert_exit(&out, 0);
        for metric in [
            "time/ns",
            "tflop/s",
            "gflop32/s",
            "gbyte/s",
            "util",
            "count",
        ] {
            let out = Command::new(&viewer)
                .args(["-m", metric])
                .arg(&file)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && !stderr.contains("Traceback"),
                "{vendor}: proton-viewer -m {metric} failed\n{stdout}\n{stderr}"
            );
            assert!(!stdout.trim().is_empty(), "{vendor} {metric}: no tree");
        }
    }
}

/// `util` of every kernel frame as proton-viewer's own `parse` derives it (full precision; the
/// tree prints three decimals), by frame name.
fn viewer_util(viewer: &Path, file: &Path) -> Vec<(String, f64)> {
    let python = viewer.with_file_name("python");
    let script = "import sys\nfrom triton.profiler import viewer\n\
                  gf, _ = viewer.parse(['util'], sys.argv[1])\n\
                  for _, row in gf.dataframe.iterrows():\n    \
                  print(repr(float(row['util'])) + '\\t' + row['name'])\n";
    let out = Command::new(python)
        .args(["-c", script])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let (value, name) = line.split_once('\t')?;
            let value: f64 = value.parse().ok()?;
            value.is_finite().then(|| (name.to_string(), value))
        })
        .collect()
}

/// polyprof's utilisation of each kernel name from `--format json`: the larger of its least
/// compute time (its share of the clock-scaled peak of each precision) and its least DRAM time,
/// over its GPU time, its launches added up as Proton's node adds them.
fn polyprof_util(json: &serde_json::Value) -> std::collections::BTreeMap<String, f64> {
    let mut sums: std::collections::BTreeMap<String, (f64, f64, f64)> = Default::default();
    for kernel in json["kernels"].as_array().unwrap() {
        let time = kernel["duration_ns"].as_f64().unwrap_or(0.0);
        let share = |key: &str| kernel["roofline"][key].as_f64().unwrap_or(0.0) / 100.0;
        let entry = sums
            .entry(kernel["short_name"].as_str().unwrap().to_string())
            .or_default();
        entry.0 += share("pct_peak_compute") * time;
        entry.1 += share("pct_peak_bandwidth") * time;
        entry.2 += time;
    }
    sums.into_iter()
        .map(|(name, (compute, bytes, time))| (name, compute.max(bytes) / time))
        .collect()
}

#[test]
fn proton_viewer_util_agrees_with_polyprof_within_one_percent_on_nvidia_amd_and_intel() {
    let Some(viewer) = proton_viewer() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The AMD capture ran on a Radeon RX Vega (gfx900) and the Intel one names no device:
    // --device gives them the MI300X's and the Max 1100's peaks, as a user would.
    let runs = [
        ("nvidia", fixture("runs/h200-baseline"), None),
        (
            "amd",
            parsed(dir.path(), "rocprofv3", &amd_files(dir.path())),
            Some("MI300X"),
        ),
        (
            "intel",
            parsed(
                dir.path(),
                "unitrace",
                &[
                    fixture("unitrace/gemm_fp16_flops.1799853"),
                    fixture("unitrace/gemm_fp16_bytes.1799860"),
                ],
            ),
            Some("PVC Max 1100"),
        ),
    ];
    for (vendor, run_dir, device) in runs {
        let export = |format: &str, file: &Path| {
            let mut command = polyprof();
            command.args(["report", "--format", format, "-o"]).arg(file);
            if let Some(device) = device {
                command.args(["--device", device]);
            }
            assert_exit(&command.arg(&run_dir).output().unwrap(), 0);
        };
        let proton = dir.path().join(format!("{vendor}.util.proton.json"));
        let json_file = dir.path().join(format!("{vendor}.util.json"));
        export("proton", &proton);
        export("json", &json_file);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json_file).unwrap()).unwrap();
        let expected = polyprof_util(&json);
        let got = viewer_util(&viewer, &proton);
        assert!(!expected.is_empty(), "{vendor}: no kernels");
        for (name, want) in &expected {
            let (_, util) = got
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("{vendor}: no util for {name}: {got:?}"));
            assert!(
                (util - want).abs() <= 0.01 * want.abs() + 1e-9,
                "{vendor} {name}: proton-viewer util {util}, polyprof {want}"
            );
        }
        // The run has work to judge: the shares are not all zero where it counted some.
        if vendor != "amd" {
            assert!(
                expected.values().any(|u| *u > 0.01),
                "{vendor}: {expected:?}"
            );
        }
    }
}
