//! `--format html`: one self-contained page of a run: what ran and how it ended (with its
//! diagnostics), the roofline, the timelines and the sortable kernel table with full names.

use std::fmt::Write as _;
use std::io::Write;

use crate::model::error::{Error, Result};
use crate::results::aggregate::KeyAverages;
use crate::results::event::FrameKind;
use crate::results::export::html_limits;
use crate::results::export::html_page::{legend, number_cell, page, text_cell, timeline};
use crate::results::export::html_timeline::timelines;
use crate::results::export::roofline_chart::{self, ChartSide, escape, render_svg};
use crate::results::export::{Exporter, Format, Report, memory_table, table};
use crate::results::units;

pub struct HtmlExporter;

impl Exporter for HtmlExporter {
    fn format(&self) -> Format {
        Format::Html
    }

    fn export(&self, report: &Report, out: &mut dyn Write) -> Result<()> {
        let html = render(report)?;
        out.write_all(html.as_bytes())
            .map_err(|e| Error::io("write", "the HTML report", e))
    }
}

/// The page of one run.
pub fn render(report: &Report) -> Result<String> {
    let (averages, label) = roofline_chart::run_kernels(report);
    let mut body = String::new();
    let _ = write!(
        body,
        "<h2>Run</h2><pre class=\"header\">{}</pre>",
        escape(&table::header(report))
    );
    for row in &averages.rows {
        if let Some(warning) = row.roofline.above_peak_warning() {
            let _ = write!(
                body,
                "<p class=\"bad\">{}: {}</p>",
                escape(&row.label()),
                escape(&warning)
            );
        }
    }
    let side = ChartSide {
        label: &label,
        events: &report.profile.events,
    };
    body.push_str(&roofline_section(report.peaks.as_ref(), &[side], true)?);
    let (cpu, gpu) = timelines(report);
    if cpu.slice_count() + gpu.slice_count() > 0 {
        body.push_str("<h2>Timeline</h2>");
        body.push_str(&timeline(&gpu));
        body.push_str(&timeline(&cpu));
    }
    body.push_str(&kernel_table(&averages, report));
    if let Some(run) = &report.run {
        let memory = memory_table::render(run);
        if !memory.is_empty() {
            let _ = write!(
                body,
                "<h2>Memory commands</h2><pre>{}</pre>",
                escape(&memory)
            );
        }
    }
    Ok(page(&format!("polyprof report — {label}"), &body))
}

/// The rooflines of `sides` (a run, or both sides of a diff): one chart per device (when
/// `split_devices`) and precision, with the legend and notes.
pub(crate) fn roofline_section(
    peaks: Option<&crate::results::devices::DevicePeaks>,
    sides: &[ChartSide<'_>],
    split_devices: bool,
) -> Result<String> {
    let mut html = String::from("<h2>Roofline</h2>");
    let Some(charts) = roofline_chart::charts(peaks, sides, split_devices) else {
        html.push_str(
            "<p class=\"note\">No device peaks for this run's device: pass --device NAME \
             (e.g. --device H200) or --devices FILE to draw the roofline.</p>",
        );
        return Ok(html);
    };
    let _ = write!(
        html,
        "<p class=\"note\">{count} chart{s}, one per device and precision the kernels counted \
         FLOPs in, each with that precision's compute roof; a kernel is placed in each chart by \
         its FLOPs of that precision. One point per kernel name (its launches added up), its \
         area proportional to its GPU time, its colour the kernel's verdict; hover a point for \
         its full name and figures.</p>",
        count = charts.charts.len(),
        s = if charts.charts.len() == 1 { "" } else { "s" },
    );
    html.push_str(&legend());
    if sides.len() > 1 {
        html.push_str("<p class=\"note\">Filled: the first run (A); hollow: the second (B).</p>");
    }
    html.push_str("<div class=\"rooflines\">");
    for chart in &charts.charts {
        let _ = write!(
            html,
            "<figure class=\"roofline-chart\" data-device=\"{device}\" data-precision=\"{id}\">\
             <figcaption><b>{device} — {label}</b>. {note}.</figcaption>",
            device = escape(&chart.device),
            id = roofline_chart::precision_id(chart.precision),
            label = escape(&roofline_chart::precision_label(chart.precision)),
            note = escape(&chart.clock_note),
        );
        let (shown, hidden) = html_limits::largest_points(chart);
        html.push_str(&render_svg(&shown)?);
        if hidden > 0 {
            let _ = write!(
                html,
                "<p class=\"note\">The {} kernels with the most GPU time are drawn; {hidden} \
                 more are in --format json and svg.</p>",
                html_limits::MAX_POINTS
            );
        }
        for series in &chart.series {
            if !series.unplaced.is_empty() {
                let _ = write!(
                    html,
                    "<p class=\"note\">Not placed ({}; no DRAM bytes or GPU time): {}</p>",
                    escape(&series.label),
                    escape(&html_limits::listed(&series.unplaced))
                );
            }
        }
        html.push_str("</figure>");
    }
    html.push_str("</div>");
    for (label, names) in &charts.without_flops {
        let _ = write!(
            html,
            "<p class=\"note\">Not placed ({}; no FLOPs counted): {}</p>",
            escape(label),
            escape(&html_limits::listed(names))
        );
    }
    Ok(html)
}

fn kernel_table(averages: &KeyAverages, report: &Report) -> String {
    let rows: Vec<_> = averages
        .sorted(report.sort_by)
        .into_iter()
        .filter(|r| r.kind == FrameKind::Kernel)
        .collect();
    if rows.is_empty() {
        return "<h2>Kernels</h2><p>no kernel records</p>".to_string();
    }
    let mut html = String::from(
        "<h2>Kernels</h2><p class=\"note\">Click a column to sort. One row per kernel name; \
         throughput over GPU time; the verdict is the launches' (docs/verdicts.md).</p>\
         <table class=\"sortable kernels\"><thead><tr>\
         <th data-sort>Name</th><th data-sort>Calls</th><th data-sort>GPU total</th>\
         <th data-sort>GPU mean</th><th data-sort>GFLOP/s</th><th data-sort>GB/s</th>\
         <th data-sort>FLOP/byte</th><th data-sort>% peak BW</th><th data-sort>% peak FLOP</th>\
         <th data-sort>Verdict</th></tr></thead><tbody>",
    );
    let opt = |value: Option<f64>, show: fn(f64) -> String| {
        number_cell(value, &value.map(show).unwrap_or_else(|| "-".to_string()))
    };
    let full_names = roofline_chart::FullNames::of(&report.profile.events);
    let more = rows.len().saturating_sub(html_limits::MAX_TABLE_ROWS);
    for row in rows.into_iter().take(html_limits::MAX_TABLE_ROWS) {
        let point = &row.roofline;
        let name = full_names.get(&row.name);
        let mut verdict = point.verdict();
        if row.verdicts.len() > 1 {
            let shares: Vec<String> = row
                .verdicts
                .iter()
                .map(|v| format!("{} × {}", v.launches, v.label))
                .collect();
            verdict.push_str(&format!(" (launches: {})", shares.join(", ")));
        }
        let _ = write!(
            html,
            "<tr><td class=\"name\">{}</td>{}{}{}{}{}{}{}{}{}</tr>",
            escape(&name),
            number_cell(Some(row.calls as f64), &row.calls.to_string()),
            opt(row.gpu_total_ns, units::time_ns),
            opt(row.gpu_mean_ns, units::time_ns),
            opt(point.gflops_per_s, |v| units::significant(v, 4)),
            opt(point.gb_per_s, |v| units::significant(v, 4)),
            opt(point.arithmetic_intensity, |v| units::significant(v, 3)),
            opt(point.pct_peak_bandwidth, units::pct),
            opt(point.pct_peak_compute, units::pct),
            text_cell(&verdict),
        );
    }
    html.push_str("</tbody></table>");
    if more > 0 {
        let _ = write!(
            html,
            "<p class=\"note\">The first {} kernels by this order; {more} more are in --format \
             json and csv.</p>",
            html_limits::MAX_TABLE_ROWS
        );
    }
    html
}
