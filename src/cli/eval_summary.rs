//! A verdict for people: the outcome first, then correctness, timing, the witness, every
//! finding and every check that could not run. Shared by `polyprof audit` and `polyprof eval`.

use std::fmt::Write;

use polyprof::eval::verdict::{EvalVerdict, Finding, Status};

/// The verdict as a few lines of text (each ending in a newline). A candidate's exception
/// message and the names in it show their control characters, never send them.
pub fn render(verdict: &EvalVerdict) -> String {
    polyprof::results::escape::terminal::text(&render_unescaped(verdict)).into_owned()
}

fn render_unescaped(verdict: &EvalVerdict) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", headline(verdict));
    if let Some(failure) = &verdict.failure {
        let log = failure
            .log
            .as_deref()
            .map(|l| format!(" (see {l})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  failure      {} during {}: {}{log}",
            snake(&failure.kind),
            snake(&failure.stage),
            failure.message
        );
    }
    let c = &verdict.correctness;
    let diffs = match (c.max_abs_diff, c.max_rel_diff) {
        (Some(abs), Some(rel)) => format!("max abs diff {abs:.2e}, max rel diff {rel:.2e}; "),
        (Some(abs), None) => format!("max abs diff {abs:.2e}; "),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "  correctness  {}/{} outputs match ({diffs}atol {}, rtol {})",
        c.passed, c.compared, c.atol, c.rtol
    );
    if let (Some(sets), Some(compared)) = (verdict.timed_input_sets, verdict.timed_outputs_compared)
    {
        let _ = writeln!(
            out,
            "  fresh inputs {sets} distinct input set(s) over the timed calls, {compared} timed output(s) compared (drawn after each block)"
        );
    }
    if let Some(t) = &verdict.timing {
        let _ = writeln!(
            out,
            "  timing       score {:.4} ms (candidate median of {}), reference {:.4} ms; {}",
            t.score_ms, t.candidate.samples, t.reference.median_ms, t.method
        );
        let s = &t.speedup;
        let _ = writeln!(
            out,
            "  speedup      {:.2}× ({:.0} % CI {:.2}–{:.2}×, {})",
            s.value,
            s.confidence * 100.0,
            s.ci_low,
            s.ci_high,
            s.method
        );
        if t.unscored_samples > 0 {
            let _ = writeln!(
                out,
                "  unscored     {} sample(s): {}",
                t.unscored_samples,
                t.unscored_reasons.join("; ")
            );
        }
    }
    if let Some(w) = &verdict.witness {
        let ratio = w
            .reported_over_witnessed
            .map(|r| format!("score/witness {r:.2}; "))
            .unwrap_or_default();
        let own = if w.candidate_kernels_launched.is_empty() {
            String::new()
        } else {
            format!(" ({})", w.candidate_kernels_launched.join(", "))
        };
        let _ = writeln!(
            out,
            "  witness      {}: {} call(s), median {:.4} ms; {ratio}own kernels {:.0} % of call time{own}; {} launch(es) outside calls",
            w.profiler,
            w.per_call_ms.len(),
            w.median_ms,
            w.coverage * 100.0,
            w.launches_outside_calls
        );
    }
    if let Some(t) = &verdict.timeline {
        let blocks: Vec<String> = t
            .blocks
            .iter()
            .map(|b| match b.reported_median_ms {
                Some(r) => format!("{:.4} ms (timer {r:.4})", b.median_ms),
                None => format!("{:.4} ms", b.median_ms),
            })
            .collect();
        let _ = writeln!(
            out,
            "  timeline     {} call(s) on the GPU; timed blocks' median call {}; {} activit(ies) outside calls ({:.4} ms){}",
            t.calls,
            if blocks.is_empty() {
                "none".to_string()
            } else {
                blocks.join(", ")
            },
            t.outside,
            t.outside_ms,
            if t.dropped > 0 {
                format!("; {} record(s) lost", t.dropped)
            } else {
                String::new()
            }
        );
    }
    if let Some(c) = &verdict.calibration {
        let path = c
            .path
            .as_deref()
            .map(|p| format!(", {p}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  calibration  {}, {}, created {}{path}",
            c.device_name,
            c.tool,
            utc(c.created_unix_s)
        );
    }
    for finding in &verdict.findings {
        let _ = writeln!(out, "  finding      {}", finding_line(finding));
    }
    for check in verdict.checks.iter().filter(|c| !c.ran) {
        let _ = writeln!(
            out,
            "  not checked  {}: {}",
            check.check,
            check.why_not.as_deref().unwrap_or("no reason recorded")
        );
    }
    for check in verdict.checks.iter().filter(|c| c.ran) {
        for part in &check.not_judged {
            let _ = writeln!(out, "  in part      {}: not judged: {part}", check.check);
        }
    }
    out
}

fn headline(verdict: &EvalVerdict) -> String {
    let confinement = verdict
        .checks
        .iter()
        .find(|c| c.check == polyprof::eval::rules::sandbox::CHECK && !c.ran)
        .map(|_| " (candidate NOT CONFINED)")
        .unwrap_or_default();
    format!("{}{confinement}", status_line(verdict))
}

fn status_line(verdict: &EvalVerdict) -> String {
    let findings = verdict.findings.len();
    match (verdict.status, verdict.passed) {
        (Status::Correct, true) => "PASSED: correct, no finding".to_string(),
        (Status::Correct, false) if !verdict.missing_checks.is_empty() => format!(
            "NOT PASSED: correct, {findings} finding(s), but {} check(s) it calls for did not run: {}",
            verdict.missing_checks.len(),
            verdict.missing_checks.join("; ")
        ),
        (Status::Correct, false) => format!("NOT PASSED: correct, but {findings} finding(s)"),
        (Status::Incorrect, _) => format!(
            "NOT PASSED: incorrect ({} of {} compared outputs differ), {findings} finding(s)",
            verdict.correctness.compared - verdict.correctness.passed,
            verdict.correctness.compared
        ),
        (Status::Failed, _) => format!("NOT PASSED: the eval failed, {findings} finding(s)"),
    }
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM UTC` (Howard Hinnant's days-to-civil).
fn utc(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let minutes = (unix_s % 86_400) / 60;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        minutes / 60,
        minutes % 60
    )
}

/// `value` with four significant digits (whole numbers as they are).
fn figure(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        return format!("{value:.0}");
    }
    let magnitude = value.abs().log10().floor();
    let decimals = if magnitude.is_finite() {
        (3.0 - magnitude).clamp(0.0, 12.0) as usize
    } else {
        0
    };
    format!("{value:.decimals$}")
}

/// An enum as its JSON spelling (`timed_output_incorrect`).
fn snake<T: serde::Serialize + std::fmt::Debug>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{value:?}"))
}

fn finding_line(finding: &Finding) -> String {
    let kind = snake(&finding.kind);
    let figures = match (finding.measured, finding.limit) {
        (Some(measured), Some(limit)) => {
            let unit = finding.unit.as_deref().unwrap_or("");
            format!(
                " [measured {} {unit}, limit {} {unit}]",
                figure(measured),
                figure(limit)
            )
        }
        _ => String::new(),
    };
    format!("{kind}: {}{figures}", finding.message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyprof::eval::verdict::{CheckRun, Correctness, FindingKind, VERDICT_VERSION};

    fn verdict() -> EvalVerdict {
        EvalVerdict {
            schema_version: VERDICT_VERSION,
            passed: false,
            status: Status::Correct,
            correctness: Correctness {
                compared: 4,
                passed: 4,
                max_abs_diff: Some(1e-4),
                max_rel_diff: None,
                atol: 0.01,
                rtol: 0.01,
            },
            timing: None,
            witness: None,
            timeline: None,
            checks: vec![CheckRun {
                check: "witness_time".into(),
                ran: false,
                why_not: Some("no witness on cpu".into()),
                not_judged: Vec::new(),
            }],
            missing_checks: Vec::new(),
            timed_input_sets: None,
            timed_outputs_compared: None,
            findings: vec![Finding {
                kind: FindingKind::SuspiciousSpeedup,
                check: "suspicious_speedup".into(),
                message: "speedup 40× is above 10×".into(),
                measured: Some(40.0),
                limit: Some(10.0),
                unit: Some("x".into()),
                evidence: serde_json::Value::Null,
            }],
            failure: None,
            calibration: None,
        }
    }

    #[test]
    fn the_summary_leads_with_the_outcome_and_lists_findings_and_skipped_checks() {
        let text = render(&verdict());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "NOT PASSED: correct, but 1 finding(s)");
        assert_eq!(
            lines[1],
            "  correctness  4/4 outputs match (max abs diff 1.00e-4; atol 0.01, rtol 0.01)"
        );
        assert_eq!(
            lines[2],
            "  finding      suspicious_speedup: speedup 40× is above 10× [measured 40 x, limit 10 x]"
        );
        assert_eq!(lines[3], "  not checked  witness_time: no witness on cpu");
    }

    #[test]
    fn the_calibration_and_unjudged_parts_get_a_line_each() {
        let mut v = verdict();
        v.calibration = Some(polyprof::eval::verdict::CalibrationCitation {
            device_name: "NVIDIA H200".into(),
            tool: "ncu 2025.3.1.0".into(),
            driver: None,
            created_unix_s: 1_796_000_000,
            path: Some("calibration/h200.json".into()),
        });
        v.checks.push(CheckRun {
            check: "work_floor".into(),
            ran: true,
            why_not: None,
            not_judged: vec!["writes: the outputs fit in the L2".into()],
        });
        let text = render(&v);
        assert!(
            text.contains(
                "\n  calibration  NVIDIA H200, ncu 2025.3.1.0, created 2026-11-30 00:53 UTC, \
                 calibration/h200.json\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "\n  in part      work_floor: not judged: writes: the outputs fit in the L2\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn epoch_seconds_read_as_utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_796_000_000), "2026-11-30 00:53 UTC");
    }

    #[test]
    fn figures_keep_four_significant_digits() {
        assert_eq!(figure(39.81220657276995), "39.81");
        assert_eq!(figure(0.0654364705966858), "0.06544");
        assert_eq!(figure(201326592.0), "201326592");
        assert_eq!(figure(0.5), "0.5000");
    }

    #[test]
    fn a_passing_verdict_says_so() {
        let mut v = verdict();
        v.passed = true;
        v.findings.clear();
        assert!(render(&v).starts_with("PASSED: correct, no finding\n"));
    }
}
