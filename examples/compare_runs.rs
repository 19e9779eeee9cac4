//! Compare two runs from Rust, as `polyprof diff` does, and write the JUnit XML a CI system
//! reads: `cargo run --example compare_runs -- BASELINE_RUN CANDIDATE_RUN [JUNIT.xml]`, e.g.
//! with the bundled captures `tests/fixtures/runs/h200-baseline tests/fixtures/runs/h200-regressed`.
//! Exit 1 when a kernel regressed.

use polyprof::results::ProfileRun;
use polyprof::results::ci_diff;
use polyprof::results::diff::{DiffOptions, diff_runs};
use polyprof::results::export::{CiExporter, junit::JunitExporter};

fn main() -> Result<std::process::ExitCode, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [baseline, candidate, rest @ ..] = args.as_slice() else {
        eprintln!("usage: compare_runs BASELINE_RUN CANDIDATE_RUN [JUNIT.xml]");
        return Ok(std::process::ExitCode::from(2));
    };
    let a = ProfileRun::read(baseline.as_ref())?;
    let b = ProfileRun::read(candidate.as_ref())?;
    let diff = diff_runs(&a, &b, &DiffOptions::default())?;
    print!("{}", diff.render(None));
    if let Some(path) = rest.first() {
        let mut xml = Vec::new();
        JunitExporter.export(&ci_diff::suite(&diff), &mut xml)?;
        std::fs::write(path, xml)?;
    }
    Ok(std::process::ExitCode::from(u8::from(diff.regressed())))
}
