//! The roofline chart as SVG: log-log axes, the bandwidth roof and one compute roof per
//! precision at the clock the run had, one point per kernel name sized by its GPU time and
//! coloured by its verdict. Axes, roofs and labels are drawn by plotters; the points are
//! `<circle>` elements placed through plotters' own coordinate mapping and carrying their
//! figures (`data-name`, `data-ai`, `data-gflops`) and a `<title>`, so a browser shows the
//! full name on hover and a test can read them back from the DOM.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::error::{Error, Result};
use crate::model::record::Precision;
use crate::results::aggregate::KeyAverages;
use crate::results::devices::DevicePeaks;
use crate::results::event::{Event, FrameKind};
use crate::results::roofline::{Bound, RooflinePoint};
use crate::results::units;

/// One kernel name's point.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartPoint {
    /// The full kernel name.
    pub name: String,
    /// The name the table rows go by (the record's `name`, usually without parameters).
    pub short_name: String,
    /// FLOPs per DRAM byte.
    pub intensity: f64,
    pub gflops_per_s: f64,
    pub gpu_time_ns: f64,
    pub launches: u64,
    pub bound: Bound,
    /// The verdict in words (`memory-bound, DRAM, 67 % of peak`).
    pub verdict: String,
}

/// Points of one run (or one side of a diff).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<ChartPoint>,
    /// Kernel names that could not be placed (no FLOPs, no bytes or no GPU time).
    pub unplaced: Vec<String>,
}

/// A compute roof: one precision's peak at the chart's SM clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Roof {
    pub label: String,
    pub gflops_per_s: f64,
}

/// Everything the chart draws.
#[derive(Debug, Clone, PartialEq)]
pub struct RooflineChart {
    pub device: String,
    /// DRAM bandwidth at the chart's DRAM clock, GB/s.
    pub bandwidth_gbs: f64,
    pub roofs: Vec<Roof>,
    pub series: Vec<Series>,
    /// Which clock the roofs are at, in words.
    pub clock_note: String,
}

/// The series of a report's kernels: one point per kernel name, from the same rows (and
/// verdicts) as the table.
/// A report's kernels averaged per name, with the device's peaks for their verdicts, and the
/// label its points go under (the run's, else the profile's name): what the run page and the
/// SVG roofline both chart.
pub fn run_kernels(report: &crate::results::export::Report) -> (KeyAverages, String) {
    let averages = report
        .profile
        .key_averages(Default::default())
        .with_peaks(report.peaks.clone());
    let label = report
        .run
        .as_ref()
        .map(|r| r.label.clone())
        .unwrap_or_else(|| report.profile.name.clone());
    (averages, label)
}

pub fn series(label: &str, averages: &KeyAverages, events: &[Event]) -> Series {
    let mut points = Vec::new();
    let mut unplaced = Vec::new();
    for row in averages.rows.iter().filter(|r| r.kind == FrameKind::Kernel) {
        let name = full_name(events, &row.name);
        let point = &row.roofline;
        match (point.arithmetic_intensity, point.gflops_per_s) {
            (Some(ai), Some(gflops)) if ai > 0.0 && gflops > 0.0 => points.push(ChartPoint {
                name,
                short_name: row.name.clone(),
                intensity: ai,
                gflops_per_s: gflops,
                gpu_time_ns: row.gpu_total_ns.unwrap_or(0.0),
                launches: row.calls,
                bound: point.bound,
                verdict: point.verdict(),
            }),
            _ => unplaced.push(name),
        }
    }
    Series {
        label: label.to_string(),
        points,
        unplaced,
    }
}

/// The full name of the kernel whose events are named `short` (the record's `name`).
pub(crate) fn full_name(events: &[Event], short: &str) -> String {
    events
        .iter()
        .find(|e| e.kind() == FrameKind::Kernel && e.name() == short)
        .and_then(|e| e.attributes.get("kernel"))
        .and_then(|v| v.as_str())
        .unwrap_or(short)
        .to_string()
}

/// The chart for `peaks` with the roofs at the median clock the rows' verdicts were scaled to
/// (the published clock when none was measured); `None` without peaks.
pub fn chart(
    peaks: Option<&DevicePeaks>,
    averages: &[&KeyAverages],
    series: Vec<Series>,
) -> Option<RooflineChart> {
    let peaks = peaks?;
    let rows = || {
        averages
            .iter()
            .flat_map(|a| a.rows.iter())
            .filter(|r| r.kind == FrameKind::Kernel)
            .map(|r| &r.roofline)
    };
    let sm_ghz = median(rows().filter_map(|p: &RooflinePoint| p.sm_clock_ghz));
    let dram_ghz = median(rows().filter_map(|p: &RooflinePoint| p.dram_clock_ghz));
    let locked =
        rows().any(|p| p.clock_state == Some(crate::results::roofline::ClockState::LockedBase));
    // The precisions the kernels were judged by, FP32 always (the usual reference roof).
    let mut precisions: Vec<Precision> = vec![Precision::Fp32];
    for point in rows() {
        if let Some(p) = point.precision
            && !precisions.contains(&p)
        {
            precisions.push(p);
        }
    }
    let roofs = precisions
        .into_iter()
        .filter_map(|p| {
            let tflops = peaks.peak_at(p, sm_ghz.map(|g| g * 1e9))?;
            Some(Roof {
                label: format!(
                    "{}{} {:.1} TFLOP/s",
                    if p.is_tensor() { "tensor " } else { "" },
                    p.data_type(),
                    tflops
                ),
                gflops_per_s: tflops * 1e3,
            })
        })
        .collect();
    let bandwidth_gbs = peaks.bandwidth_at(dram_ghz.map(|g| g * 1e9));
    let mut clock_note = match sm_ghz {
        Some(g) => format!("Compute roofs at the SM clock the run had, {g:.2} GHz (median)"),
        None => "Compute roofs at the published peaks (no SM clock measured)".to_string(),
    };
    clock_note.push_str(&match dram_ghz {
        Some(g) => format!("; bandwidth roof at the DRAM clock {g:.2} GHz"),
        None => "; bandwidth roof at the published peak".to_string(),
    });
    if locked {
        clock_note.push_str("; clocks locked at base by the profiler");
    }
    Some(RooflineChart {
        device: peaks.name.clone(),
        bandwidth_gbs,
        roofs,
        series,
        clock_note,
    })
}

fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut values: Vec<f64> = values.filter(|v| v.is_finite() && *v > 0.0).collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// Three significant digits for axis ticks and labels.
fn sig(value: f64) -> String {
    units::significant(value, 3)
}

/// Axis ticks: `0.01`, `1`, `100`, `10k`, `1M`.
fn tick(value: f64) -> String {
    let short = |v: f64| {
        let text = format!("{v:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    match value.abs() {
        v if v >= 1e6 => format!("{}M", short(value / 1e6)),
        v if v >= 1e4 => format!("{}k", short(value / 1e3)),
        v if v >= 1.0 => short(value),
        _ => units::significant(value, 1),
    }
}

/// Verdict colours, shared with the page's legend.
pub fn bound_colour(bound: Bound) -> &'static str {
    match bound {
        Bound::Memory => "#1f77b4",
        Bound::Compute => "#d62728",
        Bound::Latency => "#7f7f7f",
        Bound::Unknown => "#2b2b2b",
    }
}

const WIDTH: u32 = 900;
/// Up to this many points are labelled with their names.
const MAX_LABELLED_POINTS: usize = 12;
const HEIGHT: u32 = 560;

/// The chart as a standalone SVG document.
pub fn render_svg(chart: &RooflineChart) -> Result<String> {
    let (x_range, y_range) = ranges(chart);
    let mut svg = String::new();
    let mut circles = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, chart, x_range, y_range, &mut circles).map_err(|e| {
            Error::invalid("roofline chart", format!("plotters could not draw it: {e}"))
        })?;
        root.present().map_err(|e| {
            Error::invalid(
                "roofline chart",
                format!("plotters could not finish it: {e}"),
            )
        })?;
    }
    let end = svg
        .rfind("</svg>")
        .ok_or_else(|| Error::invalid("roofline chart", "plotters wrote no closing </svg> tag"))?;
    svg.insert_str(end, &circles);
    // An id and a class make the chart findable in a page holding several.
    Ok(svg.replacen("<svg ", "<svg class=\"roofline\" ", 1))
}

type Range = (f64, f64);

/// Axis ranges covering every point and the ridge points of every roof, in whole decades.
fn ranges(chart: &RooflineChart) -> (Range, Range) {
    let mut xs: Vec<f64> = Vec::new();
    let mut ys: Vec<f64> = Vec::new();
    for point in chart.series.iter().flat_map(|s| &s.points) {
        xs.push(point.intensity);
        ys.push(point.gflops_per_s);
    }
    for roof in &chart.roofs {
        xs.push(roof.gflops_per_s / chart.bandwidth_gbs);
        ys.push(roof.gflops_per_s);
    }
    let decade = |values: &[f64], default: Range| {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() || !hi.is_finite() {
            return default;
        }
        (
            10f64.powf(lo.log10().floor() - 1.0),
            10f64.powf(hi.log10().ceil() + 0.3),
        )
    };
    (decade(&xs, (0.01, 1000.0)), decade(&ys, (1.0, 1e6)))
}

type DrawResult = std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &RooflineChart,
    x_range: Range,
    y_range: Range,
    circles: &mut String,
) -> DrawResult {
    root.fill(&WHITE)?;
    let mut plot = ChartBuilder::on(root)
        .caption(format!("Roofline — {}", chart.device), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(
            (x_range.0..x_range.1).log_scale(),
            (y_range.0..y_range.1).log_scale(),
        )?;
    plot.configure_mesh()
        .x_desc("arithmetic intensity (FLOP / DRAM byte)")
        .y_desc("GFLOP/s")
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()?;
    let samples = |top: f64| -> Vec<(f64, f64)> {
        let (lo, hi) = (x_range.0.log10(), x_range.1.log10());
        (0..=200)
            .map(|i| 10f64.powf(lo + (hi - lo) * i as f64 / 200.0))
            .map(|x| (x, (chart.bandwidth_gbs * x).min(top)))
            .collect()
    };
    let roof_style = ShapeStyle::from(&RGBColor(60, 60, 60)).stroke_width(2);
    for (index, roof) in chart.roofs.iter().enumerate() {
        let style = if index == 0 {
            roof_style
        } else {
            ShapeStyle::from(&RGBColor(150, 150, 150)).stroke_width(1)
        };
        plot.draw_series(LineSeries::new(samples(roof.gflops_per_s), style))?;
        let ridge = roof.gflops_per_s / chart.bandwidth_gbs;
        let (x, y) = plot.backend_coord(&(ridge, roof.gflops_per_s));
        root.draw(&Text::new(
            roof.label.clone(),
            (x + 6, y - 14),
            ("sans-serif", 12).into_font(),
        ))?;
    }
    let low = plot.backend_coord(&(x_range.0 * 3.0, chart.bandwidth_gbs * x_range.0 * 3.0));
    root.draw(&Text::new(
        format!("DRAM {} GB/s", sig(chart.bandwidth_gbs)),
        (low.0 + 4, low.1 - 16),
        ("sans-serif", 12).into_font(),
    ))?;
    let total: f64 = chart
        .series
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.gpu_time_ns)
        .sum();
    // The roofs' figures for readers of the DOM (their lines are plotters' polylines).
    circles.push_str(&format!(
        "<g class=\"roofs\" data-bandwidth-gbs=\"{}\">",
        chart.bandwidth_gbs
    ));
    for roof in &chart.roofs {
        circles.push_str(&format!(
            "<g class=\"roof\" data-label=\"{}\" data-gflops=\"{}\"></g>",
            escape(&roof.label),
            roof.gflops_per_s
        ));
    }
    circles.push_str("</g><g class=\"points\">");
    for (series_index, series) in chart.series.iter().enumerate() {
        for point in &series.points {
            let (cx, cy) = plot.backend_coord(&(point.intensity, point.gflops_per_s));
            let radius = radius(point.gpu_time_ns, total);
            // The second series of a diff is drawn hollow.
            let fill = match series_index {
                0 => format!(
                    "fill=\"{}\" fill-opacity=\"0.6\"",
                    bound_colour(point.bound)
                ),
                _ => "fill=\"none\" stroke-width=\"2.5\"".to_string(),
            };
            circles.push_str(&format!(
                "<circle class=\"point\" cx=\"{cx}\" cy=\"{cy}\" r=\"{radius:.1}\" {fill} \
                 stroke=\"{colour}\" data-series=\"{series}\" data-name=\"{name}\" data-short=\"{short}\" \
                 data-ai=\"{ai}\" data-gflops=\"{gflops}\" data-gpu-ns=\"{time}\" \
                 data-bound=\"{bound}\"><title>{title}</title></circle>",
                colour = bound_colour(point.bound),
                series = escape(&series.label),
                name = escape(&point.name),
                short = escape(&point.short_name),
                ai = point.intensity,
                gflops = point.gflops_per_s,
                time = point.gpu_time_ns,
                bound = point.bound,
                title = escape(&format!(
                    "{} ({})\n{} launches, GPU time {}\n{} FLOP/byte, {} GFLOP/s\n{}",
                    point.name,
                    series.label,
                    point.launches,
                    units::time_ns(point.gpu_time_ns),
                    sig(point.intensity),
                    sig(point.gflops_per_s),
                    point.verdict
                )),
            ));
        }
    }
    circles.push_str("</g>");
    // A few points get their (short) names beside them; many would only overlap.
    let placed: usize = chart.series.iter().map(|s| s.points.len()).sum();
    if placed <= MAX_LABELLED_POINTS && chart.series.len() == 1 {
        circles.push_str("<g class=\"labels\" font-family=\"sans-serif\" font-size=\"12\">");
        for point in &chart.series[0].points {
            let (cx, cy) = plot.backend_coord(&(point.intensity, point.gflops_per_s));
            let name: String = point.short_name.chars().take(40).collect();
            // Near the right edge the label goes to the left of its point.
            let gap = radius(point.gpu_time_ns, total).ceil() as i32 + 4;
            let (x, anchor) = match cx > (WIDTH as i32) * 2 / 3 {
                true => (cx - gap, "end"),
                false => (cx + gap, "start"),
            };
            circles.push_str(&format!(
                "<text x=\"{x}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>",
                cy + 4,
                escape(&name)
            ));
        }
        circles.push_str("</g>");
    }
    Ok(())
}

/// A point's radius: its area grows with its share of the chart's GPU time.
fn radius(gpu_time_ns: f64, total_ns: f64) -> f64 {
    let share = if total_ns > 0.0 {
        gpu_time_ns / total_ns
    } else {
        0.0
    };
    4.0 + 14.0 * share.sqrt()
}

/// Text for HTML and SVG content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::run::ProfileRun;
    use crate::results::devices::DeviceTable;
    use crate::results::export::Report;

    fn baseline() -> (Report, KeyAverages) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/runs/h200-baseline"
        );
        let run = ProfileRun::read(std::path::Path::new(path)).unwrap();
        let peaks = DeviceTable::builtin().unwrap().lookup("H200").cloned();
        let report = Report::from_run(run, peaks.clone());
        let averages = report
            .profile
            .key_averages(Default::default())
            .with_peaks(peaks);
        (report, averages)
    }

    #[test]
    fn the_h200_capture_places_its_four_kernels_under_its_roofs() {
        let (report, averages) = baseline();
        let series = series("ncu.000", &averages, &report.profile.events);
        let mut names: Vec<&str> = series
            .points
            .iter()
            .map(|p| p.short_name.as_str())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "matmul_naive",
                "matmul_tiled<32>",
                "reduce_sum",
                "vector_add"
            ]
        );
        // The hover and the DOM carry the full signature.
        assert!(
            series
                .points
                .iter()
                .any(|p| p.name
                    == "void matmul_tiled<32>(const float *, const float *, float *, int)")
        );
        let chart = chart(report.peaks.as_ref(), &[&averages], vec![series]).unwrap();
        assert!(
            chart.roofs[0].label.starts_with("fp32"),
            "{:?}",
            chart.roofs
        );
        for point in &chart.series[0].points {
            let roof = (chart.bandwidth_gbs * point.intensity).min(chart.roofs[0].gflops_per_s);
            assert!(point.gflops_per_s <= roof, "{point:?} above {roof}");
        }
        let svg = render_svg(&chart).unwrap();
        assert_eq!(svg.matches("<circle class=\"point\"").count(), 4);
        assert!(svg.contains("data-short=\"matmul_tiled&lt;32&gt;\""));
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(0.01), "0.01");
        assert_eq!(tick(1.0), "1");
        assert_eq!(tick(1000.0), "1000");
        assert_eq!(tick(100000.0), "100k");
        assert_eq!(tick(2e6), "2M");
    }

    #[test]
    fn escape_covers_markup() {
        assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
    }
}
