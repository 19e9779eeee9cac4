//! Input that is no saved profiler output, through the real binary for every vendor: FIFOs and
//! devices are refused at once (they hung every parser), an endless newline-free input ends in
//! a clear error under a memory limit (it aborted the ncu parser), numbers that cannot be are
//! diagnostics naming file, row and column (they passed, or vanished silently), and foreign
//! input exits 2 whichever the profiler.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::{assert_exit, fixture, polyprof};

const VENDORS: [&str; 5] = ["ncu", "rocprofv3", "unitrace", "vtune", "metal"];

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn fifos_and_devices_are_refused_by_every_parser_and_by_report() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.csv");
    mkfifo(&fifo);
    for vendor in VENDORS {
        for input in [fifo.as_path(), Path::new("/dev/zero")] {
            // Nobody ever writes the FIFO: a parser that opens it waits forever.
            let out = polyprof()
                .args(["parse", "--profiler", vendor])
                .arg(input)
                .timeout(Duration::from_secs(60))
                .output()
                .unwrap();
            assert_exit(&out, 2);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let what = if input == fifo {
                "FIFO"
            } else {
                "character device"
            };
            assert!(
                stderr.contains(what) && stderr.contains("not a regular file"),
                "{vendor} {}: {stderr}",
                input.display()
            );
        }
    }
    let out = polyprof()
        .arg("report")
        .arg(&fifo)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("FIFO"));
}

#[test]
fn an_endless_line_is_an_error_not_an_allocation_abort() {
    // 3 GiB of zero bytes, no newline, as a sparse regular file (no disk used), parsed with 1 GiB
    // of address space: the streaming parsers must give up at their line bound.
    let dir = tempfile::tempdir().unwrap();
    let zeros = dir.path().join("zeros.csv");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    for vendor in ["ncu", "vtune"] {
        for json in [false, true] {
            let out = std::process::Command::new("prlimit")
                .arg(format!("--as={}", 1u64 << 30))
                .arg(env!("CARGO_BIN_EXE_polyprof"))
                .args(["parse", "--profiler", vendor])
                .args(json.then_some("--json"))
                .arg(&zeros)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{vendor} json={json}: {stderr}");
            assert!(
                stderr.contains("without a newline") && !stderr.contains("memory allocation"),
                "{vendor}: {stderr}"
            );
        }
    }
}

/// `text` with the cell of `column` in CSV line `line` (0-based, of the whole file) set to
/// `value`; the line is rewritten with every field quoted.
fn with_cell(
    text: &str,
    header_line: usize,
    line: usize,
    column: &str,
    value: &str,
    tab: bool,
) -> String {
    let delimiter = if tab { b'\t' } else { b',' };
    let fields = |line: &str| crate::support::csv_cells(line, delimiter);
    let lines: Vec<&str> = text.lines().collect();
    let index = fields(lines[header_line])
        .iter()
        .position(|c| c == column)
        .unwrap_or_else(|| panic!("no column {column}"));
    let mut row = fields(lines[line]);
    row[index] = value.to_string();
    let mut writer = csv::WriterBuilder::new()
        .delimiter(delimiter)
        .quote_style(if tab {
            csv::QuoteStyle::Necessary
        } else {
            csv::QuoteStyle::Always
        })
        .from_writer(Vec::new());
    writer.write_record(&row).unwrap();
    let rewritten = String::from_utf8(writer.into_inner().unwrap()).unwrap();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    out[line] = rewritten.trim_end().to_string();
    out.join("\n") + "\n"
}

const ABSURD: [&str; 6] = ["-5", "1e308", "inf", "NaN", "abc", "0x10"];

/// Parse `file` as `vendor` to JSON: exit 1 (an error diagnostic), a `bad_number` diagnostic
/// that names the file, `row`, `column` and holds `text`, and no kernel with an absurd duration.
fn assert_refused(vendor: &str, file: &Path, row: &str, column: &str, text: &str) {
    let out = polyprof()
        .args(["parse", "--json", "--profiler", vendor])
        .arg(file)
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let bad: Vec<&str> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "bad_number")
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert!(
        bad.iter().any(|m| m.contains(&name)
            && m.contains(row)
            && m.contains(&format!("column `{column}`"))
            && m.contains(text)),
        "{vendor} {text}: {bad:?}"
    );
    for kernel in doc["kernels"].as_array().unwrap() {
        if let Some(ns) = kernel.get("duration_ns").and_then(Value::as_f64) {
            assert!((0.0..=1e18).contains(&ns), "{vendor} {text}: {kernel}");
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn absurd_numbers_are_diagnostics_naming_file_row_and_column_for_every_vendor() {
    let dir = tempfile::tempdir().unwrap();
    let ncu = std::fs::read_to_string(fixture("ncu-h200/raw_page.stdout")).unwrap();
    let amd = std::fs::read_to_string(fixture("rocprofv3/kernel_trace.csv")).unwrap();
    let intel = std::fs::read_to_string(fixture("unitrace/dpc_gemm_device_timing.txt")).unwrap();
    let vtune = std::fs::read_to_string(fixture("vtune/synthetic_gpu_hotspots.tsv")).unwrap();
    for value in ABSURD {
        let quoted = format!("`{value}`");
        // ncu: the first launch's duration (line 7 of the file: header, units row, launch 0).
        let file = write(
            dir.path(),
            "raw.csv",
            &with_cell(&ncu, 4, 6, "gpu__time_duration.sum", value, false),
        );
        assert_refused(
            "ncu",
            &file,
            "launch 0 of process 1346",
            "gpu__time_duration.sum",
            &quoted,
        );
        // rocprofv3: the end of the first dispatch (line 2).
        let file = write(
            dir.path(),
            "1_kernel_trace.csv",
            &with_cell(&amd, 0, 1, "End_Timestamp", value, false),
        );
        assert_refused("rocprofv3", &file, "row 2", "End_Timestamp", &quoted);
        // unitrace: the GEMM's total time in the device summary (line 10).
        let file = write(dir.path(), "trace.1", &intel.replacen("89769760", value, 1));
        assert_refused("unitrace", &file, "line 10", "Time (ns)", &quoted);
        // VTune: the first task's total time (line 4: two warnings, the header, the row).
        let file = write(
            dir.path(),
            "hotspots.tsv",
            &with_cell(&vtune, 2, 3, "Computing Task:Total Time", value, true),
        );
        assert_refused(
            "vtune",
            &file,
            "row 4",
            "Computing Task:Total Time",
            &quoted,
        );
    }
}

#[test]
fn absurd_durations_in_a_chrome_timeline_are_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let chrome = std::fs::read_to_string(fixture("unitrace/synthetic_python.4242.json")).unwrap();
    for value in ["-5", "1e308"] {
        let file = write(
            dir.path(),
            "python.4242.json",
            &chrome.replacen("\"dur\": 850.240", &format!("\"dur\": {value}"), 1),
        );
        let out = polyprof()
            .args(["parse", "--json", "--profiler", "unitrace"])
            .arg(&file)
            .output()
            .unwrap();
        assert_exit(&out, 1);
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let text = doc["diagnostics"].to_string();
        assert!(
            text.contains("`python.4242.json` event at byte") && text.contains("column `dur`"),
            "{text}"
        );
        let copy = &doc["memory_commands"][0];
        assert_eq!(copy["kind"], "memory_copy");
        assert!(copy.get("duration_ns").is_none(), "{copy}");
    }
}

#[test]
fn an_end_before_the_start_is_a_diagnostic_not_a_silent_gap() {
    let dir = tempfile::tempdir().unwrap();
    let amd = std::fs::read_to_string(fixture("rocprofv3/kernel_trace.csv")).unwrap();
    let file = write(
        dir.path(),
        "1_kernel_trace.csv",
        &with_cell(&amd, 0, 1, "End_Timestamp", "1", false),
    );
    assert_refused(
        "rocprofv3",
        &file,
        "row 2",
        "End_Timestamp",
        "1 (before Start_Timestamp",
    );
}

#[test]
fn input_of_another_profiler_exits_2_for_every_vendor() {
    // Each vendor's parser gets a file that is none of its own: an ncu page for the others, a
    // rocprofv3 trace for ncu.
    let foreign = |vendor: &str| {
        if vendor == "ncu" {
            fixture("rocprofv3/kernel_trace.csv")
        } else {
            fixture("ncu-h200/raw_page.stdout")
        }
    };
    let dir = tempfile::tempdir().unwrap();
    for vendor in VENDORS {
        let out = polyprof()
            .args(["parse", "--json", "--profiler", vendor])
            .arg(foreign(vendor))
            .output()
            .unwrap();
        assert_exit(&out, 2);
        // The same status with a run document asked for (written when anything was parsed).
        let document = dir.path().join(format!("{vendor}.json"));
        let out = polyprof()
            .args(["parse", "--profiler", vendor])
            .arg(foreign(vendor))
            .arg("-o")
            .arg(&document)
            .output()
            .unwrap();
        assert_exit(&out, 2);
    }
}

#[test]
fn rocprofv3_files_are_read_whatever_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("dispatches.csv");
    std::fs::copy(fixture("rocprofv3/kernel_trace.csv"), &trace).unwrap();
    let copies = dir.path().join("copies.csv");
    std::fs::copy(fixture("rocprofv3/memory_copy_trace.csv"), &copies).unwrap();
    let out = polyprof()
        .args(["parse", "--json", "--profiler", "rocprofv3"])
        .args([&trace, &copies])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kernels"].as_array().unwrap().len(), 9);
    assert_eq!(doc["memory_commands"].as_array().unwrap().len(), 4);
}
