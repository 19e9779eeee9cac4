//! The terminal report: what ran and how it ended, then the key-averages table with the
//! roofline.

use std::io::Write;

use crate::model::error::{Error, Result};
use crate::model::outcome::Outcome;
use crate::model::run::ProfileRun;
use crate::results::aggregate::KeyAverages;
use crate::results::export::{Exporter, Format, Report};
use crate::results::fit;
use crate::results::units;

/// `profiler.configuration` of a run document written by `polyprof parse -o`.
pub const PARSED_CONFIGURATION: &str = "parsed from saved output";

pub struct TableExporter;

impl Exporter for TableExporter {
    fn format(&self) -> Format {
        Format::Table
    }

    fn export(&self, report: &Report, out: &mut dyn Write) -> Result<()> {
        let text = render(report);
        out.write_all(text.as_bytes())
            .map_err(|e| Error::io("write", "table report", e))
    }
}

/// How a run ended, in words.
pub fn describe_outcome(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Exited { code } => format!("exited with code {code}"),
        Outcome::Signalled { signal } => format!("killed by signal {signal}"),
        Outcome::SupervisorKilled { signal } => {
            format!("its supervising process was killed by signal {signal}")
        }
        Outcome::TimedOut { after_s } => format!("timed out after {after_s:.1} s; stopped"),
        Outcome::Inactive { after_s } => format!("no output for {after_s:.1} s; stopped"),
        Outcome::HungAfterMarker { passed, .. } => format!(
            "end marker seen ({}), then hung; stopped",
            if *passed { "passed" } else { "failed" }
        ),
        Outcome::Cancelled => "cancelled".to_string(),
        Outcome::SpawnFailed { error, .. } => format!("could not start: {error}"),
    }
}

/// Wall time of the attempt that produced the run's outcome.
fn wall_s(run: &ProfileRun) -> Option<f64> {
    let outcome = run.outcome.as_ref()?;
    run.steps
        .iter()
        .rev()
        .flat_map(|s| s.attempts.iter().rev())
        .find(|a| &a.outcome == outcome)
        .map(|a| a.timings.end_s)
}

pub(crate) fn header(report: &Report) -> String {
    let mut lines = Vec::new();
    match &report.run {
        Some(run) => {
            let version = run
                .profiler
                .version
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default();
            lines.push(format!(
                "run      {} ({}{version})",
                run.label, run.profiler.name
            ));
            lines.push(format!("target   {}", {
                let target = crate::model::arg::lossy(&run.target);
                shlex::try_join(target.iter().map(String::as_str))
                    .unwrap_or_else(|_| target.join(" "))
            }));
            let outcome = match &run.outcome {
                Some(outcome) => {
                    let verdict = if run.succeeded() {
                        "succeeded"
                    } else {
                        "FAILED"
                    };
                    let wall = wall_s(run)
                        .map(|s| format!("; wall {s:.2} s"))
                        .unwrap_or_default();
                    format!("{} — {verdict}{wall}", describe_outcome(outcome))
                }
                // `polyprof parse -o`: a document of saved output, not a failed run.
                None if run.profiler.configuration.as_deref() == Some(PARSED_CONFIGURATION) => {
                    let verdict = if run.errors.is_empty() {
                        "parsed"
                    } else {
                        "parsed with errors"
                    };
                    format!("no process run (records parsed from saved output) — {verdict}")
                }
                None => "nothing was started — FAILED".to_string(),
            };
            lines.push(format!("outcome  {outcome}"));
        }
        None => lines.push(format!(
            "profile  {} ({})",
            report.profile.name,
            report.profile.profiler.as_deref().unwrap_or("session")
        )),
    }
    let device = report.device_name().unwrap_or("unknown");
    let peaks = match &report.peaks {
        Some(p) => {
            let fp32 = p
                .fp32_tflops
                .map(|t| format!(", FP32 {t} TFLOP/s"))
                .unwrap_or_default();
            format!("peaks of {}: {} GB/s{fp32}", p.name, p.memory_bandwidth_gbs)
        }
        None => "no device peaks (pass --device NAME for the roofline)".to_string(),
    };
    lines.push(format!("device   {device}; {peaks}"));
    if let Some(run) = &report.run {
        let launches: u64 = run.kernels.iter().map(|k| k.calls).sum();
        let gpu: f64 = run.kernels.iter().filter_map(|k| k.duration_ns).sum();
        lines.push(format!(
            "kernels  {} records, {launches} launches, GPU time {}",
            run.kernels.len(),
            units::time_ns(gpu)
        ));
        for diagnostic in &run.diagnostics {
            let hint = diagnostic
                .hint
                .as_deref()
                .map(|h| format!(" — {h}"))
                .unwrap_or_default();
            lines.push(format!(
                "{:<8} {}: {}{hint}",
                format!("{:?}", diagnostic.severity).to_lowercase(),
                diagnostic.kind,
                diagnostic.message
            ));
        }
        for warning in &run.warnings {
            lines.push(format!("warning  {warning}"));
        }
        for error in &run.errors {
            lines.push(format!("error    {error}"));
        }
    }
    lines.join("\n")
}

/// The whole table report as text.
pub fn render(report: &Report) -> String {
    render_fitted(report, None)
}

/// Where a header line's value starts (`run      `): wrapped lines continue there.
const LABEL_WIDTH: usize = 9;

/// [`render`] at most `width` characters wide (`None`: every column, full names): the table
/// leaves out derivable columns, wraps its last and shortens names; prose lines wrap. Names,
/// labels and paths from the run show their control characters, never send them.
pub fn render_fitted(report: &Report, width: Option<usize>) -> String {
    crate::results::escape::terminal::text(&render_unescaped(report, width)).into_owned()
}

fn render_unescaped(report: &Report, width: Option<usize>) -> String {
    let averages = report
        .profile
        .key_averages(report.group_by)
        .with_peaks(report.peaks.clone())
        .with_rules(report.run.as_ref());
    let mut text = fit::wrap_prose(&header(report), width, LABEL_WIDTH);
    text.push('\n');
    for warning in above_peak_warnings(&averages) {
        text.push_str(&fit::wrap_prose(&warning, width, LABEL_WIDTH));
        text.push('\n');
    }
    text.push('\n');
    let memory = report
        .run
        .as_ref()
        .map(super::memory_table::render)
        .unwrap_or_default();
    if averages.rows.is_empty() {
        text.push_str("no kernel records\n");
        text.push_str(&memory);
        return text;
    }
    let fitted = averages.table_fitted(report.sort_by, width);
    text.push_str(&fitted.table);
    text.push('\n');
    let mut footer = format!(
        "GPU time of kernels: {}",
        units::time_ns(averages.kernel_gpu_total_ns())
    );
    if report.peaks.is_some() {
        footer.push_str(&format!(
            "; {}; judged per launch as in --format json",
            crate::results::roofline::rule_text()
        ));
    }
    if averages.has_mixed_verdicts() {
        footer.push_str(
            "; `; N of M`: the row's launches disagree, the row shows the verdict of most of its GPU time",
        );
    }
    if !fitted.empty.is_empty() {
        footer.push_str(&format!("; no data for {}", fitted.empty.join(", ")));
    }
    if !fitted.left_out.is_empty() {
        footer.push_str(&format!(
            "; left out to fit {} columns: {} (--wide shows them)",
            width.unwrap_or_default(),
            fitted.left_out.join(", ")
        ));
    }
    text.push_str(&fit::wrap_prose(&footer, width, 0));
    text.push('\n');
    text.push_str(&memory);
    text
}

/// One warning per row with a share above 100 % of its clock-scaled peak.
fn above_peak_warnings(averages: &KeyAverages) -> Vec<String> {
    averages
        .rows
        .iter()
        .filter_map(|row| {
            let warning = row.roofline.above_peak_warning()?;
            Some(format!("warning  above_peak: {}: {warning}", row.label()))
        })
        .collect()
}
