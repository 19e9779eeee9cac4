//! `--format html`: one self-contained page of a run: what ran and how it ended (with its
//! diagnostics), the roofline, the timelines and the sortable kernel table with full names.

use std::fmt::Write as _;
use std::io::Write;

use crate::model::error::{Error, Result};
use crate::results::aggregate::{KeyAverage, KeyAverages};
use crate::results::event::FrameKind;
use crate::results::export::html_limits;
use crate::results::export::html_page::{legend, number_cell, page, timeline};
use crate::results::export::html_timeline::timelines;
use crate::results::export::roofline_chart::{self, ChartSide, escape, render_svg};
use crate::results::export::{Exporter, Format, Report, html_drilldown, memory_table, table};
use crate::results::roofline::rule_text;
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
    let averages = averages.with_rules(report.run.as_ref());
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
    if charts.charts.iter().any(roofline_chart::is_hierarchical) {
        html.push_str(&hierarchical_legend());
    }
    if sides.len() > 1 {
        html.push_str("<p class=\"note\">Filled: the first run (A); hollow: the second (B).</p>");
    }
    html.push_str("<div class=\"rooflines\">");
    for chart in &charts.charts {
        let placed: usize = chart.series.iter().map(|s| s.points.len()).sum();
        if placed == 0 {
            // No empty chart: say why this precision has no point.
            let unplaced: Vec<String> = chart
                .series
                .iter()
                .flat_map(|s| s.unplaced.iter().cloned())
                .collect();
            let why = match unplaced.is_empty() {
                true => "no kernel counted FLOPs of this precision".to_string(),
                false => format!(
                    "its kernels have no DRAM bytes or GPU time to place them by: {}",
                    unplaced.join(", ")
                ),
            };
            let _ = write!(
                html,
                "<figure class=\"roofline-chart empty\" data-device=\"{device}\" \
                 data-precision=\"{id}\"><figcaption><b>{device} — {label}</b>: no point, \
                 because {why}. The verdicts in the table come from the profiler's speed of \
                 light and pipe loads instead.</figcaption></figure>",
                device = escape(&chart.device),
                id = roofline_chart::precision_id(chart.precision),
                label = escape(&roofline_chart::precision_label(chart.precision)),
                why = escape(&why),
            );
            continue;
        }
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

/// What the cache levels' roofs and markers mean (ncu's hierarchical roofline).
fn hierarchical_legend() -> String {
    use crate::results::levels::Level;
    format!(
        "<p class=\"note levels\">Hierarchical roofline, as ncu draws it: each kernel \
         once per memory level at the same height (its FLOP/s), at its FLOPs per byte of that \
         level: ● DRAM, <span style=\"color:{l2}\">■ L2</span>, \
         <span style=\"color:{l1}\">◆ L1</span>, joined by a thin line; each level's roof in \
         its colour. A marker's height under its level's roof is that level's share of its \
         peak. The L2 and L1 roofs are the capture's own (ncu's peak per cycle at the unit's \
         clock); the DRAM roof is the device table's.</p>",
        l2 = roofline_chart::level_css_colour(Level::L2),
        l1 = roofline_chart::level_css_colour(Level::L1),
    )
}

fn kernel_table(averages: &KeyAverages, report: &Report) -> String {
    let sorted = averages.sorted(report.sort_by);
    let rows: Vec<_> = sorted
        .iter()
        .copied()
        .filter(|r| r.kind == FrameKind::Kernel)
        .collect();
    let scopes: Vec<_> = sorted
        .iter()
        .copied()
        .filter(|r| matches!(r.kind, FrameKind::Scope | FrameKind::Function))
        .filter(|r| r.bytes.is_some() || r.flops.total().is_some())
        .collect();
    let mut html = String::new();
    if rows.is_empty() {
        html.push_str("<h2>Kernels</h2><p>no kernel records</p>");
    } else {
        html.push_str(
            "<h2>Kernels</h2><p class=\"note\">Click a column to sort, a row (or its roofline \
             point) to open the kernel. One row per kernel name; throughput over GPU time; the \
             bound with the figure that decided it, and the profiler's rule results under the \
             name.</p>",
        );
        let _ = write!(html, "<p class=\"note rule\">{}.</p>", escape(&rule_text()));
        html.push_str(&rows_table(&rows, report, true));
        html.push_str(&html_drilldown::panels(
            report,
            &html_limits::detailed(&rows, |row| row.gpu_total_ns.unwrap_or(0.0)),
        ));
    }
    if !scopes.is_empty() {
        html.push_str(
            "<h2>Scopes</h2><p class=\"note\">The workload's own scopes with their FLOPs and \
             bytes (as the table, CSV and JSON `scopes` show them); rates over the GPU time \
             inside them, else over their CPU time, with no GPU peak to compare against.</p>",
        );
        html.push_str(&rows_table(&scopes, report, false));
    }
    html
}

fn rows_table(rows: &[&KeyAverage], report: &Report, kernels: bool) -> String {
    // Below 900 px the columns that follow from others (GPU mean, GFLOP/s, GB/s) are hidden,
    // as the terminal table drops them first; a table still too wide scrolls on its own.
    let mut html = String::from(
        "<p class=\"note narrow\">GPU mean, GFLOP/s and GB/s are hidden at this window width \
         (they follow from the other columns); a wider window or --format json has them.</p>\
         <div class=\"scroll\"><table class=\"sortable kernels\"><thead><tr>\
         <th data-sort>Name</th><th data-sort>Calls</th><th data-sort>GPU total</th>\
         <th data-sort>GPU mean</th><th data-sort>GFLOP/s</th><th data-sort>GB/s</th>\
         <th data-sort>FLOP/byte</th><th data-sort>% peak BW</th><th data-sort>% peak FLOP</th>\
         <th data-sort>Bound</th></tr></thead><tbody>",
    );
    let opt = |value: Option<f64>, show: fn(f64) -> String| {
        number_cell(value, &value.map(show).unwrap_or_else(|| "-".to_string()))
    };
    let full_names = roofline_chart::FullNames::of(&report.profile.events);
    let more = rows.len().saturating_sub(html_limits::MAX_TABLE_ROWS);
    for row in rows.iter().take(html_limits::MAX_TABLE_ROWS) {
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
        let rule = row
            .rule_line
            .as_ref()
            .map(|line| format!("<div class=\"rule-line\">{}</div>", escape(line)))
            .unwrap_or_default();
        let (gpu_total, gpu_mean) = match kernels {
            true => (row.gpu_total_ns, row.gpu_mean_ns),
            false => (
                row.gpu_total_ns.or(row.cpu_total_ns),
                row.gpu_mean_ns.or(row.cpu_mean_ns),
            ),
        };
        let _ = write!(
            html,
            "<tr data-short=\"{short}\"><td class=\"name\">{name}{rule}</td>{}{}{}{}{}{}{}{}\
             <td class=\"bound\" data-bound=\"{bound}\" title=\"{verdict}\">{label}</td></tr>",
            number_cell(Some(row.calls as f64), &row.calls.to_string()),
            opt(gpu_total, units::time_ns),
            opt(gpu_mean, units::time_ns),
            opt(point.gflops_per_s, |v| units::significant(v, 4)),
            opt(point.gb_per_s, |v| units::significant(v, 4)),
            opt(point.arithmetic_intensity, |v| units::significant(v, 3)),
            opt(point.pct_peak_bandwidth, units::pct),
            opt(point.pct_peak_compute, units::pct),
            short = escape(&row.name),
            name = breakable(&name),
            bound = point.bound,
            verdict = escape(&verdict),
            label = escape(&row.bound_cell_text()),
        );
    }
    html.push_str("</tbody></table></div>");
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

/// A kernel name escaped, with break opportunities after `::`, `,`, `<` and `(` so that a long
/// C++ name wraps between its parts rather than inside a word, and each part kept on one line
/// otherwise (`escape::html::name`: `)(` of `operator ()()` split there).
pub(crate) fn breakable(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 16);
    let mut part = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        part.push(c);
        let after = match c {
            ',' | '<' | '(' => true,
            ':' => chars.peek() != Some(&':'),
            _ => false,
        };
        if after {
            out.push_str(&crate::results::escape::html::name(&part));
            out.push_str("<wbr>");
            part.clear();
        }
    }
    out.push_str(&crate::results::escape::html::name(&part));
    out
}
