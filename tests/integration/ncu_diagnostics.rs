//! ncu's errors and warnings, classified, from the real fixture files.

use crate::support::ncu::*;
use polyprof::profilers::Severity;
use polyprof::profilers::ncu::diagnostics::application_exit_code;
use polyprof::profilers::ncu::parse::flag_empty;

#[test]
fn no_kernels_profiled_is_a_warning_the_caller_sees() {
    let parsed = parse_fixture("ncu-h200/no_kernels.stdout");
    assert!(parsed.kernels.is_empty());
    let d = &parsed.diagnostics[0];
    assert_eq!(
        (d.kind.as_str(), d.severity),
        ("no_kernels_profiled", Severity::Warning)
    );
    assert!(
        d.hint
            .as_deref()
            .unwrap()
            .contains("--target-processes all")
    );
    // The program's own line is in the fixture too, and its source prints exactly that.
    let source = String::from_utf8(read("ncu-h200/nokernel.cu")).unwrap();
    assert!(source.contains("no kernels here"));
}

#[test]
fn missing_binary() {
    let parsed = parse_fixture("ncu-h200/missing_binary.stdout");
    assert_eq!(kinds(&parsed), ["missing_binary"]);
    assert_eq!(parsed.diagnostics[0].severity, Severity::Error);
    assert!(parsed.diagnostics[0].message.contains("./does_not_exist"));
}

#[test]
fn application_error_code() {
    let parsed = parse_fixture("ncu-h200/app_exit_3.stdout");
    assert_eq!(kinds(&parsed), ["application_error"]);
    assert_eq!(
        application_exit_code(&parsed.diagnostics[0].message),
        Some(3)
    );
}

#[test]
fn bad_section_two_lines_one_error() {
    let parsed = parse_fixture("ncu-cc120/error_bad_section.csv");
    assert_eq!(kinds(&parsed), ["bad_section"]);
    let d = &parsed.diagnostics[0];
    assert!(
        d.message
            .contains("'--section .*SpeedOfLight.*' did not match any section")
    );
    assert!(d.message.contains("Use --list-sections"));
    assert!(d.hint.as_deref().unwrap().contains("regex:"));
}

#[test]
fn texts_without_a_fixture_are_classified() {
    // Exact texts from public reports (profiler-tools.md §1.7); no H200 run produced them.
    let cases = [
        (
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0. For instructions on enabling permissions and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM",
            "counter_permission",
        ),
        (
            "==ERROR== Failed to initialize the profiler: LibraryNotLoaded. Check that a compatible driver library is loaded.",
            "profiler_library_not_loaded",
        ),
        (
            "==ERROR== Profiling failed because a driver resource was unavailable. Ensure that no other tool (like DCGM) is concurrently collecting profiling data.",
            "driver_resource_busy",
        ),
        ("==ERROR== Failed to find metric foo__bar", "unknown_metric"),
        (
            "==ERROR== Cannot lock GPU clock frequencies on MIG! Use --clock-control none",
            "clock_control_failed",
        ),
        (
            "==WARNING== Unable to access the following 6 metrics: ctc__rx_bytes_data_user.sum",
            "metrics_unavailable",
        ),
        ("==ERROR== Something nobody has seen", "ncu_error"),
    ];
    for (line, kind) in cases {
        let parsed = polyprof::profilers::ncu::parse(line.as_bytes(), &Default::default());
        assert_eq!(kinds(&parsed), [kind], "{line}");
        assert!(parsed.diagnostics[0].severity >= Severity::Warning);
    }
    let perm = polyprof::profilers::ncu::parse(cases[0].0.as_bytes(), &Default::default());
    let hint = perm.diagnostics[0].hint.clone().unwrap();
    assert!(
        hint.contains("NVreg_RestrictProfilingToAdminUsers=0")
            && hint.contains("--cap-add SYS_ADMIN")
    );
}

#[test]
fn empty_or_foreign_output_is_flagged() {
    let mut parsed = polyprof::profilers::ncu::parse(b"hello\nworld\n", &Default::default());
    flag_empty(&mut parsed, 0);
    assert_eq!(kinds(&parsed), ["no_data"]);
}
