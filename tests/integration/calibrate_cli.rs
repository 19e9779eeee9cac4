//! `polyprof calibrate` where it cannot calibrate: the real binary with a PATH that has no
//! nvcc, no ncu and no nvidia-smi says, for each, what is missing and what to do, exits 3,
//! prints nothing on stdout (also with `--json`) and writes nothing into the cache.

use crate::support::{assert_exit, polyprof};

#[test]
fn without_nvcc_ncu_or_a_gpu_each_is_named_with_its_fix() {
    let empty_path = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    for json in [false, true] {
        let mut command = polyprof();
        command
            .arg("calibrate")
            .arg("--cache-dir")
            .arg(cache.path().join("calibration"))
            .env("PATH", empty_path.path())
            .env_remove("CUDA_VISIBLE_DEVICES");
        if json {
            command.arg("--json");
        }
        let out = command.output().unwrap();
        assert_exit(&out, 3);
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("polyprof: error: cannot calibrate on this machine:"),
            "{stderr}"
        );
        for (tool, fix) in [
            ("an NVIDIA GPU", "nvidia-smi is not on PATH"),
            ("ncu", "install Nsight Compute"),
            ("nvcc", "install the CUDA toolkit"),
        ] {
            let line = stderr
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("- {tool}:")))
                .unwrap_or_else(|| panic!("no line for {tool}: {stderr}"));
            assert!(line.contains(fix), "{line}");
        }
    }
    // Nothing was measured, so nothing was cached or built.
    assert!(!cache.path().join("calibration").join("work").exists());
    let cached: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .collect();
    assert!(cached.is_empty(), "{cached:?}");
}

#[test]
fn calibrate_is_a_listed_command() {
    let out = polyprof().arg("--help").output().unwrap();
    assert_exit(&out, 0);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.lines()
            .any(|l| l.trim_start().starts_with("calibrate ")),
        "{help}"
    );
}

#[test]
fn a_profiler_without_a_calibration_capability_is_refused_saying_which_has_one() {
    let cache = tempfile::tempdir().unwrap();
    let out = polyprof()
        .args(["calibrate", "--profiler", "rocprofv3", "--cache-dir"])
        .arg(cache.path())
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`rocprofv3` has no calibration capability") && stderr.contains("(`ncu`)"),
        "{stderr}"
    );
    let out = polyprof()
        .args(["calibrate", "--profiler", "nsys", "--cache-dir"])
        .arg(cache.path())
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("none, ncu, unitrace"), "{stderr}");
    // Refused before anything ran: nothing was built or cached.
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
}
