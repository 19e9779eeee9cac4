//! [`RunDiff`] as CI test cases: one per kernel (name and launch configuration) matched in
//! both runs, failed when it regressed; kernels in one run only are skipped cases; without
//! kernels, one case per process step, failed when it stopped being accepted.

use crate::results::ci::{CaseResult, CiCase, CiSuite};
use crate::results::diff::{
    Change, FEW_LAUNCHES, FEW_LAUNCHES_FLOOR_FACTOR, KernelChange, RunDiff, Unmatched,
};
use crate::results::units;

const CLASSNAME: &str = "polyprof.diff";

fn time(value: Option<f64>) -> String {
    units::or_dash(value.map(units::time_ns))
}

fn signed_pct(value: Option<f64>) -> String {
    units::or_dash(value.map(|v| format!("{v:+.1} %")))
}

/// `k<<<(64,1,1),(256,1,1)>>>`: a kernel's name with its launch configuration, which tells
/// apart two launches of one kernel that the diff compares separately.
fn case_name(short: &str, name: &str, grid: Option<[u64; 3]>, block: Option<[u64; 3]>) -> String {
    let base = if short.is_empty() { name } else { short };
    match (grid, block) {
        (Some(g), Some(b)) => format!(
            "{base}<<<({},{},{}),({},{},{})>>>",
            g[0], g[1], g[2], b[0], b[1], b[2]
        ),
        _ => base.to_string(),
    }
}

fn kernel_case(diff: &RunDiff, kernel: &KernelChange) -> CiCase {
    let moved = format!(
        "median {} → {} ({}; launches: {} in A, {} in B)",
        time(kernel.a.gpu_time_ns),
        time(kernel.b.gpu_time_ns),
        signed_pct(kernel.gpu_time_change_pct),
        kernel.a.count,
        kernel.b.count
    );
    // The floor the diff applied: doubled for a kernel with few launches on a side.
    let floor_ns = if kernel.a.count < FEW_LAUNCHES || kernel.b.count < FEW_LAUNCHES {
        diff.floor_ns * FEW_LAUNCHES_FLOOR_FACTOR
    } else {
        diff.floor_ns
    };
    let result = match kernel.change {
        Change::Regressed => CaseResult::failed(
            format!(
                "regressed: {moved}; beyond the {} % threshold, the {} floor{}",
                diff.threshold_pct,
                units::time_ns(floor_ns),
                if kernel.significant == Some(true) {
                    " and both runs' launch spread (IQR)"
                } else {
                    ""
                }
            ),
            kernel.name.clone(),
        ),
        Change::NoTime => CaseResult::skipped("no GPU time on one side; nothing to compare"),
        Change::Improved | Change::Unchanged | Change::Noise => CaseResult::Passed,
    };
    CiCase {
        name: case_name(&kernel.short_name, &kernel.name, kernel.grid, kernel.block),
        classname: CLASSNAME.to_string(),
        time_s: None,
        result,
        cells: vec![
            time(kernel.a.gpu_time_ns),
            time(kernel.b.gpu_time_ns),
            signed_pct(kernel.gpu_time_change_pct),
            kernel.change.as_str().to_string(),
        ],
    }
}

fn unmatched_case(kernel: &Unmatched, side: &str) -> CiCase {
    let median = time(kernel.side.gpu_time_ns);
    let (a, b) = if side == "A" {
        (median, "-".to_string())
    } else {
        ("-".to_string(), median)
    };
    CiCase {
        name: case_name(&kernel.short_name, &kernel.name, kernel.grid, kernel.block),
        classname: CLASSNAME.to_string(),
        time_s: None,
        result: CaseResult::skipped(format!(
            "only in {side} ({} launches); nothing to compare it with",
            kernel.side.count
        )),
        cells: vec![a, b, "-".to_string(), format!("only in {side}")],
    }
}

/// The diff as one suite; `a` and `b` name the runs as the user gave them.
pub fn suite(diff: &RunDiff) -> CiSuite {
    let mut suite = CiSuite::new(
        "polyprof diff",
        &["median A", "median B", "change", "verdict"],
    );
    suite.summary = vec![
        format!("A = {}, B = {}", diff.a, diff.b),
        format!(
            "total GPU time {} → {} ({}); {} regressed, {} improved (threshold {} %, floor {})",
            units::time_ns(diff.gpu_time_a_ns),
            units::time_ns(diff.gpu_time_b_ns),
            signed_pct(diff.gpu_time_change_pct),
            diff.regressions,
            diff.improvements,
            diff.threshold_pct,
            units::time_ns(diff.floor_ns)
        ),
    ];
    suite
        .cases
        .extend(diff.kernels.iter().map(|k| kernel_case(diff, k)));
    suite
        .cases
        .extend(diff.only_in_a.iter().map(|k| unmatched_case(k, "A")));
    suite
        .cases
        .extend(diff.only_in_b.iter().map(|k| unmatched_case(k, "B")));
    // Steps gate always (a program or profiler that now fails); as cases they show when the
    // runs had no kernels to compare, or when one regressed.
    let no_kernels = suite.cases.is_empty();
    for step in diff.steps.iter().filter(|s| no_kernels || s.regressed) {
        let state = |v: Option<bool>| match v {
            Some(true) => "accepted",
            Some(false) => "not accepted",
            None => "absent",
        };
        let moved = format!("{} → {}", state(step.a_accepted), state(step.b_accepted));
        suite.cases.push(CiCase {
            name: format!("step {}", step.name),
            classname: CLASSNAME.to_string(),
            time_s: None,
            result: if step.regressed {
                CaseResult::failed(
                    format!("the step was accepted in A and is not in B ({moved})"),
                    String::new(),
                )
            } else {
                CaseResult::Passed
            },
            cells: vec![
                state(step.a_accepted).to_string(),
                state(step.b_accepted).to_string(),
                "-".to_string(),
                if step.regressed {
                    "regressed"
                } else {
                    "unchanged"
                }
                .to_string(),
            ],
        });
    }
    suite
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::KernelRecord;
    use crate::model::run::ProfileRun;
    use crate::results::diff::{DiffOptions, diff_runs};

    fn run(kernels: &[(&str, f64)]) -> ProfileRun {
        let mut run = ProfileRun::new("r", "ncu", &[], std::path::Path::new("x"));
        for (i, (name, time)) in kernels.iter().enumerate() {
            for repeat in 0..3 {
                run.kernels.push(KernelRecord {
                    name: name.to_string(),
                    short_name: name.to_string(),
                    launch_id: (i * 3 + repeat) as u64,
                    duration_ns: Some(*time),
                    grid: Some([64, 1, 1]),
                    block: Some([256, 1, 1]),
                    calls: 1,
                    ..Default::default()
                });
            }
        }
        run
    }

    #[test]
    fn one_case_per_kernel_and_the_regression_fails_with_its_figures() {
        let a = run(&[("k", 10_000.0), ("m", 50_000.0), ("gone", 3_000.0)]);
        let b = run(&[("k", 20_000.0), ("m", 50_100.0), ("new", 4_000.0)]);
        let diff = diff_runs(&a, &b, &DiffOptions::default()).unwrap();
        let suite = suite(&diff);
        let names: Vec<&str> = suite.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "k<<<(64,1,1),(256,1,1)>>>",
                "m<<<(64,1,1),(256,1,1)>>>",
                "gone<<<(64,1,1),(256,1,1)>>>",
                "new<<<(64,1,1),(256,1,1)>>>"
            ]
        );
        let results: Vec<&str> = suite.cases.iter().map(|c| c.result.name()).collect();
        assert_eq!(results, ["failed", "passed", "skipped", "skipped"]);
        let message = suite.cases[0].result.message();
        assert!(
            message.contains("10.00 us → 20.00 us (+100.0 %") && message.contains("5 % threshold"),
            "{message}"
        );
        assert_eq!(
            suite.cases[0].cells,
            ["10.00 us", "20.00 us", "+100.0 %", "regressed"]
        );
        assert!(suite.failed());
        assert!(
            suite.summary[1].contains("1 regressed"),
            "{:?}",
            suite.summary
        );
    }
}
