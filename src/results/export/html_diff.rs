//! `polyprof diff A B --format html`: the comparison as one page: the verdict and why, each
//! kernel's change against its noise band, and both rooflines overlaid.

use std::fmt::Write as _;

use crate::model::error::Result;
use crate::results::diff::{
    Change, FEW_LAUNCHES, FEW_LAUNCHES_FLOOR_FACTOR, KernelChange, RunDiff, Side,
};
use crate::results::export::Report;
use crate::results::export::html::roofline_section;
use crate::results::export::html_page::{number_cell, page, text_cell};
use crate::results::export::roofline_chart::{ChartSide, escape};
use crate::results::units;

/// The page of `diff`, with the runs' reports for the rooflines (peaks from A's, else B's).
pub fn render(diff: &RunDiff, a: &Report, b: &Report) -> Result<String> {
    let mut body = String::new();
    let verdict = if diff.regressed() {
        format!(
            "<p class=\"bad verdict\" data-regressed=\"true\">REGRESSED: {} kernel(s) slower \
             beyond the noise band; {} improved</p>",
            diff.regressions, diff.improvements
        )
    } else {
        format!(
            "<p class=\"good verdict\" data-regressed=\"false\">No regression beyond the noise \
             band; {} improved</p>",
            diff.improvements
        )
    };
    body.push_str(&verdict);
    let _ = write!(
        body,
        "<pre class=\"header\">{}</pre><p class=\"note\">A kernel regressed (improved) when its \
         median GPU time grew (shrank) by more than ±{} %, by more than the floor {} ({} for \
         kernels with fewer than {FEW_LAUNCHES} launches a side) and, with repeats on both \
         sides, by more than both sides' interquartile ranges. The noise band below is the \
         largest of these.</p>",
        escape(headline(diff).trim_end()),
        diff.threshold_pct,
        units::time_ns(diff.floor_ns),
        units::time_ns(diff.floor_ns * FEW_LAUNCHES_FLOOR_FACTOR)
    );
    body.push_str(
        "<h2>Kernels</h2><table class=\"sortable diff\"><thead><tr><th data-sort>Kernel</th>\
         <th data-sort>Change</th><th data-sort>n A</th><th data-sort>n B</th>\
         <th data-sort>median A</th><th data-sort>median B</th><th data-sort>Δ median</th>\
         <th data-sort>Δ %</th><th data-sort>noise band</th><th data-sort>Why</th>\
         </tr></thead><tbody>",
    );
    for kernel in &diff.kernels {
        let band = noise_band_ns(kernel, diff);
        let _ = write!(
            body,
            "<tr data-change=\"{change}\"><td class=\"name\">{name}</td>{change_cell}{na}{nb}{ma}{mb}{dns}{dpct}{band}{why}</tr>",
            change = kernel.change.as_str(),
            name = crate::results::escape::html::name(&kernel.name),
            change_cell = format_args!(
                "<td class=\"{}\">{}</td>",
                match kernel.change {
                    Change::Regressed => "bad",
                    Change::Improved => "good",
                    _ => "",
                },
                kernel.change.as_str()
            ),
            na = number_cell(Some(kernel.a.count as f64), &kernel.a.count.to_string()),
            nb = number_cell(Some(kernel.b.count as f64), &kernel.b.count.to_string()),
            ma = time_cell(kernel.a.gpu_time_ns),
            mb = time_cell(kernel.b.gpu_time_ns),
            dns = number_cell(
                kernel.gpu_time_change_ns,
                &kernel
                    .gpu_time_change_ns
                    .map(|v| format!("{}{}", sign(v), units::time_ns(v.abs())))
                    .unwrap_or_else(|| "-".to_string())
            ),
            dpct = number_cell(
                kernel.gpu_time_change_pct,
                &kernel
                    .gpu_time_change_pct
                    .map(|v| format!("{v:+.1} %"))
                    .unwrap_or_else(|| "-".to_string())
            ),
            band = number_cell(
                band,
                &band
                    .map(|v| format!("±{}", units::time_ns(v)))
                    .unwrap_or_else(|| "-".to_string())
            ),
            why = text_cell(&why(kernel, diff)),
        );
    }
    body.push_str("</tbody></table>");
    for (label, list) in [
        ("Only in A", &diff.only_in_a),
        ("Only in B", &diff.only_in_b),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = write!(body, "<h3>{label}</h3><ul>");
        for kernel in list {
            let _ = write!(
                body,
                "<li><code>{}</code>: {} launches, median {}</li>",
                escape(&kernel.name),
                kernel.side.count,
                units::or_dash(kernel.side.gpu_time_ns.map(units::time_ns))
            );
        }
        body.push_str("</ul>");
    }
    let regressed_steps: Vec<&str> = diff
        .steps
        .iter()
        .filter(|s| s.regressed)
        .map(|s| s.name.as_str())
        .collect();
    if !regressed_steps.is_empty() {
        let _ = write!(
            body,
            "<p class=\"bad\">Steps accepted in A and not in B: {}</p>",
            escape(&regressed_steps.join(", "))
        );
    }
    // Both runs in the same charts (their devices merged): A's peaks, else B's.
    let sides = [
        ChartSide {
            label: "A",
            events: &a.profile.events,
        },
        ChartSide {
            label: "B",
            events: &b.profile.events,
        },
    ];
    body.push_str(&roofline_section(
        a.peaks.as_ref().or(b.peaks.as_ref()),
        &sides,
        false,
    )?);
    Ok(page("polyprof diff", &body))
}

fn headline(diff: &RunDiff) -> String {
    // The terminal table's first lines: A, B, GPU and wall time.
    diff.render(None)
        .lines()
        .take(2)
        .collect::<Vec<_>>()
        .join("\n")
}

fn sign(value: f64) -> &'static str {
    if value < 0.0 { "−" } else { "+" }
}

fn time_cell(value: Option<f64>) -> String {
    number_cell(value, &units::or_dash(value.map(units::time_ns)))
}

/// The floor that applies to `kernel` (doubled with few launches on a side).
fn floor_ns(kernel: &KernelChange, diff: &RunDiff) -> f64 {
    if kernel.a.count < FEW_LAUNCHES || kernel.b.count < FEW_LAUNCHES {
        diff.floor_ns * FEW_LAUNCHES_FLOOR_FACTOR
    } else {
        diff.floor_ns
    }
}

fn spread(side: &Side) -> Option<f64> {
    (side.count > 1).then_some(side.iqr_ns).flatten()
}

/// How far the median may move before it counts: the largest of the threshold (of A's
/// median), the floor and, with repeats on both sides, both interquartile ranges.
fn noise_band_ns(kernel: &KernelChange, diff: &RunDiff) -> Option<f64> {
    let median = kernel.a.gpu_time_ns?;
    let mut band = (median * diff.threshold_pct / 100.0).max(floor_ns(kernel, diff));
    if kernel.a.count > 1 && kernel.b.count > 1 {
        for iqr in [spread(&kernel.a), spread(&kernel.b)].into_iter().flatten() {
            band = band.max(iqr);
        }
    }
    Some(band)
}

/// The verdict's reason, by the rules of `results::diff`.
fn why(kernel: &KernelChange, diff: &RunDiff) -> String {
    let pct = kernel.gpu_time_change_pct.unwrap_or(0.0);
    let gap = kernel.gpu_time_change_ns.unwrap_or(0.0).abs();
    let floor = floor_ns(kernel, diff);
    match kernel.change {
        Change::NoTime => "one side has no GPU time".to_string(),
        Change::Unchanged => format!("{pct:+.1} % is within ±{} %", diff.threshold_pct),
        Change::Noise if gap < floor => format!(
            "{pct:+.1} % is beyond ±{} % but {} is under the floor {}",
            diff.threshold_pct,
            units::time_ns(gap),
            units::time_ns(floor)
        ),
        Change::Noise => format!(
            "{pct:+.1} % is beyond ±{} % but {} is inside the launches' spread (IQR A {}, B {})",
            diff.threshold_pct,
            units::time_ns(gap),
            units::or_dash(kernel.a.iqr_ns.map(units::time_ns)),
            units::or_dash(kernel.b.iqr_ns.map(units::time_ns))
        ),
        Change::Regressed | Change::Improved => {
            let mut text = format!(
                "{pct:+.1} % is beyond ±{} % and {} above the floor {}",
                diff.threshold_pct,
                units::time_ns(gap),
                units::time_ns(floor)
            );
            if kernel.significant == Some(true) {
                text.push_str(", outside both sides' interquartile ranges");
            } else {
                text.push_str(" (a side has a single launch: no spread to compare)");
            }
            text
        }
    }
}
