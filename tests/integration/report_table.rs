//! `polyprof report` table output on the real H200 run: outcome header, kernels by GPU time,
//! throughput, roofline; and its error handling.

use crate::support::{fixture, polyprof};

fn stdout_of(args: &[&str]) -> String {
    let output = polyprof().args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn table_lists_kernels_by_gpu_time_with_roofline() {
    let dir = fixture("runs/h200-baseline");
    let text = stdout_of(&["report", dir.to_str().unwrap()]);
    assert!(
        text.contains("exited with code 0 — succeeded; wall 2.50 s"),
        "{text}"
    );
    assert!(text.contains("peaks of H200: 4800 GB/s"), "{text}");
    let order: Vec<usize> = [
        "matmul_naive",
        "matmul_tiled<32>",
        "reduce_sum",
        "vector_add",
    ]
    .iter()
    .map(|name| {
        text.find(&format!("│ {name} "))
            .unwrap_or_else(|| panic!("{name}: {text}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    // vector_add: 189,068,288 B in 58,784 ns = 3216.3 GB/s = 67.0 % of 4.8 TB/s.
    let vector_add = text.lines().find(|l| l.contains("vector_add")).unwrap();
    for cell in ["3216.3", "67.0", "memory", "58.78 us"] {
        assert!(vector_add.contains(cell), "{cell}: {vector_add}");
    }
    // Judged per launch as the JSON does: ncu's SM speed of light says compute, though its
    // FLOPs alone are 7.7 % of peak.
    let naive = text.lines().find(|l| l.contains("matmul_naive")).unwrap();
    assert!(
        naive.contains("5164.2") && naive.contains("compute · SM 62 %"),
        "{naive}"
    );
    assert!(text.contains("GPU time of kernels: 782.2 us"), "{text}");
}

#[test]
fn group_and_sort_flags_change_the_rows() {
    let dir = fixture("runs/h200-baseline");
    let text = stdout_of(&[
        "report",
        dir.to_str().unwrap(),
        "--group-by",
        "call_path",
        "--sort-by",
        "name",
        // Full call paths: a fitted table would shorten them.
        "--wide",
    ]);
    let first = text
        .find("app 1 / ncu.000 / app [1579] / matmul_naive")
        .unwrap();
    let last = text
        .find("app 1 / ncu.000 / app [1579] / vector_add")
        .unwrap();
    assert!(first < last, "{text}");
}

#[test]
fn long_names_are_fitted_to_columns_unless_wide() {
    let dir = fixture("runs/h200-baseline");
    let report = |extra: &[&str]| {
        let output = polyprof()
            .args(["report", dir.to_str().unwrap(), "--group-by", "call_path"])
            .args(extra)
            .env("COLUMNS", "140")
            .output()
            .unwrap();
        assert!(output.status.success());
        String::from_utf8(output.stdout).unwrap()
    };
    let fitted = report(&[]);
    let widest = |text: &str| text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let row = fitted.lines().find(|l| l.contains("matmul_naive")).unwrap();
    assert!(row.contains('…'), "{row}");
    let table_width = fitted
        .lines()
        .filter(|l| l.starts_with('│'))
        .map(|l| l.chars().count())
        .max()
        .unwrap();
    assert!(table_width <= 140, "{table_width}\n{fitted}");
    let wide = report(&["--wide"]);
    assert!(
        wide.contains("app 1 / ncu.000 / app [1579] / matmul_naive"),
        "{wide}"
    );
    assert!(widest(&wide) > table_width);
}

#[test]
fn device_flag_overrides_the_run_device() {
    let dir = fixture("runs/h200-baseline");
    let text = stdout_of(&["report", dir.to_str().unwrap(), "--device", "A100"]);
    assert!(text.contains("peaks of A100: 1555 GB/s"), "{text}");
    // 3216 GB/s is more than an A100 40GB can do: the figure is shown as measured.
    let vector_add = text.lines().find(|l| l.contains("vector_add")).unwrap();
    assert!(vector_add.contains("206.8"), "{vector_add}");
}

#[test]
fn user_device_table_replaces_builtin_peaks() {
    let dir = fixture("runs/h200-baseline");
    let table = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        table.path(),
        "[[device]]\nname = \"H200\"\nmatch = [\"H200\"]\nmemory_bandwidth_gbs = 4000.0\nfp32_tflops = 60.0\nsource = \"measured\"\n",
    )
    .unwrap();
    let text = stdout_of(&[
        "report",
        dir.to_str().unwrap(),
        "--devices",
        table.path().to_str().unwrap(),
    ]);
    assert!(text.contains("peaks of H200: 4000 GB/s"), "{text}");
}

#[test]
fn bad_input_is_exit_2_with_a_clear_message() {
    let missing = polyprof()
        .args(["report", "/nonexistent/run"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("/nonexistent/run"), "{stderr}");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("run.json"),
        b"{\"schema_version\": 1, \"lab",
    )
    .unwrap();
    let truncated = polyprof().arg("report").arg(dir.path()).output().unwrap();
    assert_eq!(truncated.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&truncated.stderr).contains("run.json"));

    let unknown_device = polyprof()
        .arg("report")
        .arg(fixture("runs/h200-baseline"))
        .args(["--device", "GTX 480"])
        .output()
        .unwrap();
    assert_eq!(unknown_device.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown_device.stderr).contains("valid values"));

    let bad_format = polyprof()
        .arg("report")
        .arg(fixture("runs/h200-baseline"))
        .args(["--format", "xml"])
        .output()
        .unwrap();
    assert_eq!(bad_format.status.code(), Some(2));
}

#[test]
fn a_failed_run_without_kernels_still_reports_in_every_format() {
    use polyprof::pipeline::Outcome;
    let dir = tempfile::tempdir().unwrap();
    let mut run = polyprof::results::ProfileRun::new(
        "ncu.000",
        "ncu",
        &["python3".into(), "-m".into(), "pytest".into()],
        dir.path(),
    );
    run.outcome = Some(Outcome::TimedOut { after_s: 600.0 });
    run.fail(
        polyprof::ErrorKind::ProfilerOutput,
        "the run timed out; the CSV was never written",
    );
    run.write(dir.path()).unwrap();
    let text = stdout_of(&["report", dir.path().to_str().unwrap()]);
    assert!(
        text.contains("timed out after 600.0 s; stopped — FAILED"),
        "{text}"
    );
    assert!(text.contains("no kernel records"), "{text}");
    assert!(text.contains("error    the run timed out"), "{text}");
    assert!(text.contains("no device peaks"), "{text}");
    for format in ["json", "csv", "hatchet", "chrome"] {
        let output = polyprof()
            .arg("report")
            .arg(dir.path())
            .args(["--format", format])
            .output()
            .unwrap();
        assert!(output.status.success(), "{format}");
        assert!(!output.stdout.is_empty(), "{format}");
    }
}
