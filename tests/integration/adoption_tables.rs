//! Every table fits, round two: the table-printing commands adoption_cli.rs does not run
//! (`doctor` at 60 columns, the streamed VTune `parse` table, `eval --candidate DIR`, `cache
//! list`) and every command's `--help`, piped with `COLUMNS` set, no line over it; long
//! identifiers (a job's, a candidate's or a kernel's name) stay whole.

use std::path::Path;

use polyprof::model::batch::now_unix_s;
use polyprof::model::profile_cache::{CacheEntry, LaunchFingerprint, ProfileContext, ProfileKey};
use polyprof::model::record::KernelRecord;
use polyprof::pipeline::profile_cache::ProfileCache;

use crate::support::eval::{problem, python_with_numpy};
use crate::support::{fixture, polyprof};

/// stdout of `polyprof ARGS` piped, with `COLUMNS=width`.
fn piped(args: &[&str], width: usize) -> String {
    let out = polyprof()
        .args(args)
        .env("COLUMNS", width.to_string())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every line of `text` at most `width` characters; the failure shows the offending lines.
fn fits(what: &str, text: &str, width: usize) {
    assert!(!text.trim().is_empty(), "{what} printed nothing");
    let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > width).collect();
    assert!(
        long.is_empty(),
        "{what}: lines over {width}:\n{}\n--- all of it:\n{text}",
        long.join("\n")
    );
}

#[test]
fn doctor_fits_60_and_80_columns() {
    for width in [60, 80] {
        let text = piped(&["doctor"], width);
        fits(&format!("doctor at {width}"), &text, width);
        // Whole: the paths of the hints (a path is not broken to fit).
        assert!(
            text.contains("`/opt/nvidia/nsight-compute/<version>`"),
            "{text}"
        );
    }
}

#[test]
fn the_streamed_vtune_parse_table_fits_80_columns() {
    let file = fixture("vtune/synthetic_gpu_hotspots.tsv");
    let wide = piped(
        &["parse", "--profiler", "vtune", file.to_str().unwrap()],
        400,
    );
    assert!(
        wide.lines().any(|l| l.chars().count() > 80),
        "the fixture's table fits 80 columns anyway: the test proves nothing\n{wide}"
    );
    let text = piped(
        &["parse", "--profiler", "vtune", file.to_str().unwrap()],
        80,
    );
    fits("parse --profiler vtune", &text, 80);
    assert!(text.contains("left out to fit 80 columns"), "{text}");
}

/// The names of `polyprof`'s commands (and of `polyprof COMMAND`'s, for those that have
/// some), from the help's `Commands:` list.
fn commands(parent: &[&str]) -> Vec<String> {
    let mut args = parent.to_vec();
    args.push("--help");
    let help = piped(&args, 200);
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn every_help_fits_80_columns() {
    let top = commands(&[]);
    assert!(top.len() > 15, "{top:?}");
    fits("--help", &piped(&["--help"], 80), 80);
    for command in &top {
        let text = piped(&[command, "--help"], 80);
        fits(&format!("{command} --help"), &text, 80);
        for sub in commands(&[command]) {
            let text = piped(&[command, &sub, "--help"], 80);
            fits(&format!("{command} {sub} --help"), &text, 80);
        }
    }
}

#[test]
fn cache_list_fits_80_columns_with_a_long_kernel_name() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("profiles");
    let cache = ProfileCache::open(&dir).unwrap();
    let long = "flash_attention_forward_kernel_with_a_very_long_templated_name_of_its_own";
    cache
        .put(&CacheEntry {
            record: KernelRecord {
                profiler: "ncu".into(),
                name: format!("{long}(float *)"),
                short_name: long.into(),
                duration_ns: Some(1000.0),
                ..KernelRecord::default()
            },
            key: ProfileKey::new(
                LaunchFingerprint {
                    module_sha256: format!("{:064x}", 7),
                    function: "_Z6kernelPf".into(),
                    grid: [128, 1, 1],
                    block: [256, 1, 1],
                    dynamic_shared_bytes: 0,
                },
                ProfileContext {
                    device: "NVIDIA H200".into(),
                    driver: "580.95.05".into(),
                    tool: "ncu 2025.3.1.0".into(),
                    clock_control: "base".into(),
                    metric_set: "default".into(),
                    scope: "problem-1".into(),
                },
            ),
            origin_run: "runs/a-job-with-a-long-identifier/ncu.000".into(),
            profiled_unix_s: now_unix_s(),
            profile_s: 0.17,
        })
        .unwrap();
    let text = piped(&["cache", "list", "--dir", dir.to_str().unwrap()], 80);
    fits("cache list", &text, 80);
    assert!(text.contains(long), "the kernel name is split:\n{text}");
}

#[test]
fn eval_of_a_candidate_folder_fits_80_columns() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let candidates = dir.path().join("candidates");
    std::fs::create_dir(&candidates).unwrap();
    let long = "a_candidate_with_a_rather_long_descriptive_file_name_v2.py";
    std::fs::copy(problem("honest.py"), candidates.join(long)).unwrap();
    std::fs::copy(problem("raises.py"), candidates.join("raises.py")).unwrap();
    let out = eval_cpu_at_80(&python, &candidates, &dir.path().join("evals"));
    let text = String::from_utf8_lossy(&out.stdout);
    fits("eval --candidate DIR", &text, 80);
    assert!(
        text.contains(long),
        "the candidate's name is split:\n{text}"
    );
}

/// `polyprof eval --device cpu` (small and quick, as [`crate::support::eval::eval_cpu`]) of
/// every candidate in `candidates`, piped with `COLUMNS=80`.
fn eval_cpu_at_80(python: &Path, candidates: &Path, dir: &Path) -> std::process::Output {
    polyprof()
        .args(["eval", "--device", "cpu", "--trials", "3", "--blocks", "2"])
        .args(["--repeat", "3", "--warmup", "1", "--python"])
        .arg(python)
        .arg("--reference")
        .arg(problem("reference.py"))
        .arg("--candidate")
        .arg(candidates)
        .arg("--output-dir")
        .arg(dir)
        .env("COLUMNS", "80")
        .output()
        .unwrap()
}
