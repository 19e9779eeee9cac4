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
