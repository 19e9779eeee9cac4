//! Helpers of the ncu tests: parse a fixture file and look into the result.

use polyprof::model::record::KernelRecord;
use polyprof::profilers::ParsedOutput;
use polyprof::profilers::ncu::{ParseOptions, parse};

use super::fixture;

/// The argv of every step of the plan `ncu` builds for `./app` with `options` (output in `/o`),
/// the profile step first.
pub fn plan_argvs(options: polyprof::profilers::ncu::NcuOptions) -> Vec<Vec<String>> {
    let settings = polyprof::profilers::ProfilerSettings {
        ncu: options,
        ..Default::default()
    };
    let profiler =
        polyprof::profilers::create("ncu", std::path::Path::new("/o"), &settings).unwrap();
    let plan = profiler
        .wrap(&polyprof::model::arg::args(["./app"]))
        .unwrap();
    plan.steps
        .iter()
        .map(|step| polyprof::model::arg::lossy(&step.command.argv))
        .collect()
}

pub fn read(path: &str) -> Vec<u8> {
    std::fs::read(fixture(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn parse_fixture(path: &str) -> ParsedOutput {
    parse(&read(path), &ParseOptions::default())
}

pub fn parse_requested(path: &str, requested: &[&str]) -> ParsedOutput {
    let options = ParseOptions {
        requested: requested.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    parse(&read(path), &options)
}

pub fn kernel<'a>(parsed: &'a ParsedOutput, short_name: &str) -> &'a KernelRecord {
    parsed
        .kernels
        .iter()
        .find(|k| k.short_name == short_name)
        .unwrap_or_else(|| panic!("no kernel {short_name}"))
}

pub fn kinds(parsed: &ParsedOutput) -> Vec<&str> {
    parsed.diagnostics.iter().map(|d| d.kind.as_str()).collect()
}

pub fn close(actual: Option<f64>, expected: f64) -> bool {
    actual.is_some_and(|a| (a - expected).abs() <= 1e-6 * expected.abs().max(1.0))
}

/// `polyprof parse --profiler ncu --run-dir DIR/NAME` of the fixture `capture`: the run directory
/// `report` and `diff` read.
pub fn parsed_run_dir(dir: &std::path::Path, name: &str, capture: &str) -> std::path::PathBuf {
    let run_dir = dir.join(name);
    let out = super::polyprof()
        .args(["parse", "--profiler", "ncu", "--run-dir"])
        .arg(&run_dir)
        .arg(fixture(capture))
        .output()
        .unwrap();
    super::assert_exit(&out, 0);
    run_dir
}
