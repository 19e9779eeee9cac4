//! Helpers of the ncu tests: parse a fixture file and look into the result.

use polyprof::model::record::KernelRecord;
use polyprof::profilers::ParsedOutput;
use polyprof::profilers::ncu::{ParseOptions, parse};

use super::fixture;

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
