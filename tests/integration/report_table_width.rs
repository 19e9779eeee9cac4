//! Table reports fit the terminal: at `COLUMNS` 80, 100 and 160 every line of the report (table,
//! header and footer prose) is at most that wide, on real H200 runs with PyTorch kernel names
//! and with every numeric column; `--wide` keeps every column and full names.

use std::path::Path;

use crate::support::ncu::parsed_run_dir;
use crate::support::{assert_exit, fixture, polyprof};

fn report(run_dir: &Path, columns: usize, extra: &[&str]) -> String {
    let out = polyprof()
        .arg("report")
        .arg(run_dir)
        .args(extra)
        .env("COLUMNS", columns.to_string())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    String::from_utf8(out.stdout).unwrap()
}

fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn reports_fit_80_100_and_160_columns() {
    let dir = tempfile::tempdir().unwrap();
    let runs = [
        // PyTorch's long templated names (RNG fills, reductions) and cuBLAS.
        parsed_run_dir(dir.path(), "names", "ncu-h200-names/kname-unfiltered.csv"),
        parsed_run_dir(dir.path(), "mix", "ncu-h200-pipes/values_mix.csv"),
        // Every numeric column: CPU and GPU times, bytes, rates, both shares of peak.
        fixture("runs/h200-baseline"),
    ];
    for run_dir in &runs {
        for columns in [80, 100, 160] {
            for group_by in ["name", "call_path"] {
                let text = report(run_dir, columns, &["--group-by", group_by]);
                assert!(
                    widest(&text) <= columns,
                    "{} at {columns} by {group_by}: {} wide\n{text}",
                    run_dir.display(),
                    widest(&text)
                );
                assert!(text.contains("Bound"), "{text}");
            }
        }
    }
}

#[test]
fn narrow_tables_leave_out_derivable_columns_and_say_so_and_wide_keeps_them() {
    let run_dir = fixture("runs/h200-baseline");
    let narrow = report(&run_dir, 80, &[]);
    // Means (total / calls), DRAM bytes (GB/s × time) and the rates (the header's peaks ×
    // shares) go; the two shares share a column.
    let header = narrow.lines().find(|l| l.starts_with("│ Name")).unwrap();
    for gone in ["GPU mean", "DRAM bytes", "GFLOP/s"] {
        assert!(!header.contains(gone), "{gone}\n{narrow}");
    }
    assert!(narrow.contains("% peak BW/FLOP"), "{narrow}");
    assert!(narrow.contains("67.0 / 0.4"), "{narrow}");
    assert!(
        narrow.contains("left out to fit 80 columns: CPU mean, GPU mean"),
        "{narrow}"
    );
    let wide = report(&run_dir, 80, &["--wide"]);
    for kept in [
        "GPU mean",
        "DRAM bytes",
        "GFLOP/s",
        "GB/s",
        "% peak BW ",
        "% peak FLOP",
    ] {
        assert!(wide.contains(kept), "{kept}\n{wide}");
    }
    assert!(widest(&wide) > 80);
}

#[test]
fn diff_tables_fit_too() {
    let (a, b) = (
        fixture("runs/h200-baseline"),
        fixture("runs/h200-regressed"),
    );
    for columns in [80, 100, 160] {
        let out = polyprof()
            .arg("diff")
            .args([&a, &b])
            .env("COLUMNS", columns.to_string())
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("matmul_naive"), "{text}");
        assert!(
            widest(&text) <= columns,
            "{columns}: {} wide\n{text}",
            widest(&text)
        );
    }
}
