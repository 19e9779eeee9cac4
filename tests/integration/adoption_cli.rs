//! What a new user hits first, through the real binary: one duration syntax on every duration
//! flag, tables that fit 80 columns when piped with `COLUMNS=80`, and completions that offer
//! the values of `--profiler`, `--language`, `--arch` and `--device`.

use std::path::Path;

use crate::support::batch::{sh_job, write_jobs};
use crate::support::{assert_exit, fixture, polyprof};

const DURATIONS: [&str; 3] = ["30s", "1m", "500us"];

/// clap and the flag's parser took the value (the command may then stop on something else,
/// such as a missing problem file, which the caller arranges).
fn accepted(out: &std::process::Output, flag: &str, value: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("invalid value") && !stderr.contains("not a duration"),
        "{flag} {value} was refused: {stderr}"
    );
}

#[test]
fn run_limits_take_every_duration_spelling() {
    let dir = tempfile::tempdir().unwrap();
    for flag in [
        "--timeout",
        "--inactivity-timeout",
        "--marker-grace",
        "--kill-grace",
    ] {
        for (i, value) in DURATIONS.iter().enumerate() {
            let out_dir = dir
                .path()
                .join(format!("{}-{i}", flag.trim_start_matches('-')));
            let out = polyprof()
                .args(["run", flag, value, "--output-dir"])
                .arg(&out_dir)
                .args(["--", "true"])
                .output()
                .unwrap();
            accepted(&out, flag, value);
        }
    }
    // 500us is a real limit: a command that sleeps is stopped by it.
    let out = polyprof()
        .args(["run", "--timeout", "500us", "--output-dir"])
        .arg(dir.path().join("stopped"))
        .args(["--json", "--", "sleep", "5"])
        .output()
        .unwrap();
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["outcome"]["kind"], "timed_out", "{run}");
}

#[test]
fn diff_floors_take_every_duration_spelling_and_bare_microseconds() {
    let runs = [
        fixture("runs/h200-baseline"),
        fixture("runs/h200-regressed"),
    ];
    for flag in ["--min-change", "--min-duration"] {
        for value in DURATIONS.iter().chain(&["2"]) {
            let out = polyprof()
                .arg("diff")
                .args(&runs)
                .args([flag, value, "--json"])
                .output()
                .unwrap();
            accepted(&out, flag, value);
        }
    }
    // A floor of 1m hides every change; a bare 0 (µs) none.
    let quiet = polyprof()
        .arg("diff")
        .args(&runs)
        .args(["--min-change", "1m"])
        .output()
        .unwrap();
    assert_exit(&quiet, 0);
}

#[test]
fn eval_batch_and_cache_durations_parse() {
    // Every value parses; the command then stops on what is missing (no problem file), not on
    // the flag.
    for flag in ["--timeout", "--setup-timeout"] {
        for value in DURATIONS {
            let out = polyprof()
                .args([
                    "eval",
                    "--device",
                    "cpu",
                    "--reference",
                    "/nonexistent/ref.py",
                ])
                .args(["--candidate", "/nonexistent/cand.py", flag, value])
                .output()
                .unwrap();
            accepted(&out, flag, value);
            assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/ref.py"));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let jobs = write_jobs(dir.path(), &[sh_job("one", "true")]);
    for (i, value) in DURATIONS.iter().enumerate() {
        let out = polyprof()
            .arg("batch")
            .arg(&jobs)
            .arg("--output-dir")
            .arg(dir.path().join(format!("root-{i}")))
            .args(["--timeout", value, "--quiet"])
            .output()
            .unwrap();
        accepted(&out, "batch --timeout", value);
    }
    let cache = dir.path().join("cache");
    for value in DURATIONS.iter().chain(&["7d", "3600"]) {
        let out = polyprof()
            .args(["cache", "expire", "--older-than", value, "--json"])
            .env("POLYPROF_PROFILE_CACHE", &cache)
            .env("XDG_CACHE_HOME", dir.path())
            .output()
            .unwrap();
        accepted(&out, "--older-than", value);
    }
    for value in DURATIONS.iter().chain(&["30", "1:00:00", "1h30m"]) {
        let out = polyprof()
            .arg("batch")
            .arg(&jobs)
            .args(["--slurm", "--dry-run", "--time", value, "--output-dir"])
            .arg(dir.path().join("slurm"))
            .output()
            .unwrap();
        accepted(&out, "batch --time", value);
    }
    let bad = polyprof()
        .args(["run", "--timeout", "soon", "--", "true"])
        .output()
        .unwrap();
    assert_exit(&bad, 2);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`soon` is not a duration"));
}

/// Every line of `text` at most `width` characters; the failure shows the offending lines.
fn fits(what: &str, text: &str, width: usize) {
    let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > width).collect();
    assert!(
        long.is_empty(),
        "{what}: lines over {width}:\n{}",
        long.join("\n")
    );
}

fn piped_at_80(args: &[&str], dir: Option<&Path>) -> String {
    let mut command = polyprof();
    command.args(args).env("COLUMNS", "80");
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let out = command.output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_table_fits_80_columns_when_piped() {
    let dir = tempfile::tempdir().unwrap();
    let csv = fixture("ncu-h200/hang_after_summary_sigterm_log.csv");
    let run = fixture("runs/h200-baseline");
    let regressed = fixture("runs/h200-regressed");
    let jobs = write_jobs(
        dir.path(),
        &[
            sh_job("job-with-a-long-id", "echo oops >&2; exit 3"),
            sh_job("ok", "true"),
        ],
    );
    let root = dir.path().join("batch");
    let cases: Vec<(String, Vec<String>)> = vec![
        ("doctor".into(), vec!["doctor".into()]),
        ("config".into(), vec!["config".into()]),
        (
            "occupancy".into(),
            [
                "occupancy",
                "--cc",
                "9.0",
                "--regs",
                "32",
                "--block",
                "256",
                "--shared",
                "0",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "parse".into(),
            vec!["parse".into(), csv.display().to_string()],
        ),
        (
            "report".into(),
            vec!["report".into(), run.display().to_string()],
        ),
        (
            "diff".into(),
            vec![
                "diff".into(),
                run.display().to_string(),
                regressed.display().to_string(),
            ],
        ),
        (
            "batch".into(),
            vec![
                "batch".into(),
                jobs.display().to_string(),
                "--output-dir".into(),
                root.display().to_string(),
            ],
        ),
        ("run --help".into(), vec!["run".into(), "--help".into()]),
        ("eval --help".into(), vec!["eval".into(), "--help".into()]),
    ];
    for (what, args) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let text = piped_at_80(&args, Some(dir.path()));
        assert!(!text.trim().is_empty(), "{what} printed nothing");
        fits(&what, &text, 80);
    }
    // The job id stays whole in the batch table.
    let report = piped_at_80(&["report", root.to_str().unwrap()], None);
    fits("report of a batch", &report, 80);
    let batch = piped_at_80(
        &[
            "batch",
            jobs.to_str().unwrap(),
            "--output-dir",
            dir.path().join("again").to_str().unwrap(),
        ],
        None,
    );
    assert!(batch.contains("job-with-a-long-id"), "{batch}");
}

#[test]
fn completions_offer_the_values_not_file_names() {
    let out = polyprof().args(["completions", "bash"]).output().unwrap();
    assert_exit(&out, 0);
    let script = String::from_utf8(out.stdout).unwrap();
    let offered = |flag: &str| -> Vec<String> {
        script
            .split(&format!("{flag})"))
            .skip(1)
            .map(|rest| rest.lines().nth(1).unwrap_or("").to_string())
            .collect()
    };
    let has = |flag: &str, value: &str| {
        offered(flag)
            .iter()
            .any(|line| line.contains("compgen -W") && line.contains(value))
    };
    assert!(has("--profiler", "ncu") && has("--profiler", "rocprofv3"));
    assert!(has("--language", "cuda") && has("--language", "triton"));
    assert!(has("--arch", "h100") && has("--arch", "gfx942"));
    assert!(has("--device", "cpu") && has("--device", "H200"));
    for flag in ["--profiler", "--language", "--arch"] {
        assert!(
            offered(flag).iter().all(|l| !l.contains("compgen -f")),
            "{flag} completes file names"
        );
    }
}

#[test]
fn eval_without_a_gpu_names_device_cpu() {
    if Path::new("/dev/nvidia0").exists() || Path::new("/dev/kfd").exists() {
        crate::support::record_skip(
            "adoption_cli::eval_without_a_gpu_names_device_cpu",
            "this host has a GPU",
        );
        return;
    }
    let problem = fixture("eval");
    let out = polyprof()
        .args(["eval", "--reference"])
        .arg(problem.join("reference.py"))
        .arg("--candidate")
        .arg(problem.join("candidate.py"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no CUDA device: use --device cpu"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(2), "{stderr}");
}

/// One JSON document on stdout, whose `errors` hold one error of `kind`.
fn error_document(out: &std::process::Output, kind: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(doc["errors"][0]["kind"], kind, "{doc}");
    assert_eq!(doc["started"], false, "{doc}");
    doc
}

#[test]
fn json_means_json_on_stdout_when_a_run_or_eval_cannot_start() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let first = polyprof()
        .args(["run", "--json", "--output-dir"])
        .arg(&run_dir)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_exit(&first, 0);
    // The run directory cannot be claimed: it holds a run.
    let again = polyprof()
        .args(["run", "--json", "--output-dir"])
        .arg(&run_dir)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_exit(&again, 2);
    let doc = error_document(&again, "io");
    assert!(
        doc["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("already holds a run")
    );
    let unknown = polyprof()
        .args(["run", "--json", "--profiler", "bogus", "--", "true"])
        .output()
        .unwrap();
    error_document(&unknown, "usage");
    // A command that is not found starts nothing, and run.json says so (kind spawn_failed).
    let missing = polyprof()
        .args(["run", "--json", "--output-dir"])
        .arg(dir.path().join("missing"))
        .args(["--", "/nonexistent/command"])
        .output()
        .unwrap();
    let run: serde_json::Value = serde_json::from_slice(&missing.stdout).unwrap();
    assert_eq!(run["outcome"]["kind"], "spawn_failed", "{run}");
    // An eval whose reference is missing.
    let eval = polyprof()
        .args(["eval", "--json", "--device", "cpu"])
        .args(["--reference", "/nonexistent/ref.py"])
        .args(["--candidate", "/nonexistent/cand.py", "--output-dir"])
        .arg(dir.path().join("eval"))
        .output()
        .unwrap();
    let doc = error_document(&eval, "io");
    assert!(
        doc["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/ref.py")
    );
}
