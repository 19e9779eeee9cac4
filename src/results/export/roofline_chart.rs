//! The roofline charts as SVG, one per device and precision: log-log axes, the bandwidth roof
//! and that precision's compute roof at the clock its kernels had, one point per kernel name
//! placed by its FLOPs of that precision (a kernel that counted FLOPs in several precisions is
//! in each of their charts), sized by its GPU time and coloured by its verdict. Axes, roofs and
//! labels are drawn by plotters; the points are `<circle>` elements placed through plotters' own
//! coordinate mapping and carrying their figures (`data-name`, `data-ai`, `data-gflops`) and a
//! `<title>`, so a browser shows the full name on hover and a test can read them back from the
//! DOM.
//!
//! Where the capture has the bytes of the cache levels (ncu's hierarchical roofline metrics,
//! `results::levels`), the chart is hierarchical as ncu's own: an L2 and an L1 roof beside the
//! DRAM roof, each at the bandwidth the capture gives for it, and each kernel's point once per
//! level at the same height (its FLOP/s) and at that level's FLOP per byte, so a point's height
//! under a roof is its share of that roof.

use std::collections::BTreeSet;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::error::{Error, Result};
use crate::model::record::{FlopCounts, Precision};
use crate::results::aggregate::{GroupBy, KeyAverages, key_averages};
use crate::results::devices::DevicePeaks;
use crate::results::event::{Event, FrameKind};
use crate::results::levels::Level;
use crate::results::roofline::{Bound, ClockState};
use crate::results::units;

/// One kernel name's point in one precision's chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartPoint {
    /// The full kernel name.
    pub name: String,
    /// The name the table rows go by (the record's `name`, usually without parameters).
    pub short_name: String,
    /// FLOPs of the chart's precision per DRAM byte.
    pub intensity: f64,
    /// FLOPs of the chart's precision per ns.
    pub gflops_per_s: f64,
    /// The chart's precision's part of the kernel's FLOPs (0..=1).
    pub share: f64,
    pub gpu_time_ns: f64,
    pub launches: u64,
    pub bound: Bound,
    /// The verdict in words (`memory-bound, DRAM, 67 % of peak`).
    pub verdict: String,
    /// The bound with the figure that decided it (`memory · DRAM 67 %`).
    pub bound_label: String,
    /// Whether the verdict was decided in this chart's precision (or by a memory figure, which
    /// every chart of the kernel shows alike); elsewhere the point is drawn faint and its
    /// position says nothing about the bound.
    pub decided_here: bool,
    /// The same kernel at the cache levels the capture has bytes of (L2, L1), at the same
    /// height: FLOPs of the chart's precision per byte of that level.
    pub levels: Vec<LevelPoint>,
}

/// A kernel's point at one cache level of a hierarchical roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelPoint {
    pub level: Level,
    /// FLOPs of the chart's precision per byte of this level.
    pub intensity: f64,
    pub bytes: f64,
    /// The level's traffic over its roof, % (`None`: the capture has no roof for it).
    pub pct: Option<f64>,
}

/// A cache level's roof of a hierarchical roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheRoof {
    pub level: Level,
    pub bandwidth_gbs: f64,
    /// Where the figure comes from, in words.
    pub source: String,
}

/// Points of one run (or one side of a diff).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<ChartPoint>,
    /// Kernel names with FLOPs of this precision that could not be placed (no DRAM bytes or no
    /// GPU time).
    pub unplaced: Vec<String>,
}

/// A compute roof: one precision's peak at the chart's SM clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Roof {
    pub label: String,
    pub gflops_per_s: f64,
}

/// Everything one chart draws.
#[derive(Debug, Clone, PartialEq)]
pub struct RooflineChart {
    /// The device's name in the peaks table, with the run's device id when the run used several
    /// (`H200 · GPU 1`).
    pub device: String,
    /// The run's device id (`0`), when its kernels say.
    pub device_id: Option<String>,
    pub precision: Precision,
    /// DRAM bandwidth at the chart's DRAM clock, GB/s.
    pub bandwidth_gbs: f64,
    /// `None`: the device table has no peak for this precision.
    pub roof: Option<Roof>,
    /// The L2 and L1 roofs, where the kernels' capture has them (hierarchical roofline).
    pub cache_roofs: Vec<CacheRoof>,
    pub series: Vec<Series>,
    /// Which clock the roofs are at, in words.
    pub clock_note: String,
}

/// The charts of a run or a diff, and the kernels that none of them places.
#[derive(Debug, Clone, PartialEq)]
pub struct Charts {
    pub charts: Vec<RooflineChart>,
    /// Per side: kernel names without any FLOPs counted.
    pub without_flops: Vec<(String, Vec<String>)>,
}

/// A precision as charts and roofs name it: `fp32`, `tensor bf16`.
pub fn precision_label(precision: Precision) -> String {
    match precision.is_tensor() {
        true => format!("tensor {}", precision.data_type()),
        false => precision.data_type().to_string(),
    }
}

/// The same as an identifier (`tensor_bf16`), as `--format json` names precisions.
pub fn precision_id(precision: Precision) -> String {
    serde_json::to_value(precision)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| precision_label(precision).replace(' ', "_"))
}

fn count(flops: &FlopCounts, precision: Precision) -> Option<f64> {
    flops
        .by_precision()
        .into_iter()
        .find(|(p, _)| *p == precision)
        .and_then(|(_, c)| c)
        .filter(|c| *c > 0.0)
}

/// A report's kernels averaged per name, with the device's peaks for their verdicts, and the
/// label its points go under (the run's, else the profile's name): what the run page's table
/// shows.
pub fn run_kernels(report: &crate::results::export::Report) -> (KeyAverages, String) {
    let averages = report
        .profile
        .key_averages(Default::default())
        .with_peaks(report.peaks.clone());
    (averages, run_label(report))
}

/// The label a run's points go under.
pub fn run_label(report: &crate::results::export::Report) -> String {
    report
        .run
        .as_ref()
        .map(|r| r.label.clone())
        .unwrap_or_else(|| report.profile.name.clone())
}

/// One side of the charts: its label and its events (kernels are taken from them).
pub struct ChartSide<'a> {
    pub label: &'a str,
    pub events: &'a [Event],
}

/// The kernel rows of one side on one device.
struct Group {
    side: usize,
    device: Option<String>,
    averages: KeyAverages,
    events: Vec<Event>,
}

/// One chart per device and precision present in `sides` (the devices of the kernels' records
/// when `split_devices`, else all in one), each with the roofs of `peaks` at the clock its
/// kernels had; `None` without peaks. With no FLOPs counted at all there is one FP32 chart per
/// device, without points.
pub fn charts(
    peaks: Option<&DevicePeaks>,
    sides: &[ChartSide<'_>],
    split_devices: bool,
) -> Option<Charts> {
    let peaks = peaks?;
    let mut groups: Vec<Group> = Vec::new();
    let mut without_flops = Vec::new();
    for (index, side) in sides.iter().enumerate() {
        let kernels: Vec<&Event> = side
            .events
            .iter()
            .filter(|e| e.kind() == FrameKind::Kernel)
            .collect();
        let devices: BTreeSet<Option<String>> = match split_devices {
            true => kernels.iter().map(|e| e.device.clone()).collect(),
            false => BTreeSet::from([None]),
        };
        let mut unplaced = Vec::new();
        for device in devices {
            let events: Vec<Event> = kernels
                .iter()
                .filter(|e| !split_devices || e.device == device)
                .map(|e| (*e).clone())
                .collect();
            let averages = key_averages(&events, GroupBy::Name).with_peaks(Some(peaks.clone()));
            let full_names = FullNames::of(&events);
            for row in &averages.rows {
                let counted = row
                    .flops
                    .by_precision()
                    .iter()
                    .any(|(p, _)| count(&row.flops, *p).is_some());
                if !counted {
                    unplaced.push(full_names.get(&row.name));
                }
            }
            groups.push(Group {
                side: index,
                device,
                averages,
                events,
            });
        }
        unplaced.sort();
        unplaced.dedup();
        if !unplaced.is_empty() {
            without_flops.push((side.label.to_string(), unplaced));
        }
    }
    let devices: BTreeSet<Option<String>> = groups.iter().map(|g| g.device.clone()).collect();
    let several = devices.len() > 1;
    let mut charts = Vec::new();
    for device in devices {
        let on_device: Vec<&Group> = groups.iter().filter(|g| g.device == device).collect();
        let mut precisions: Vec<Precision> = FlopCounts::default()
            .by_precision()
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| {
                on_device
                    .iter()
                    .flat_map(|g| &g.averages.rows)
                    .any(|row| count(&row.flops, *p).is_some())
            })
            .collect();
        if precisions.is_empty() {
            precisions.push(Precision::Fp32);
        }
        for precision in precisions {
            charts.push(chart(peaks, sides, &on_device, &device, several, precision));
        }
    }
    Some(Charts {
        charts,
        without_flops,
    })
}

fn chart(
    peaks: &DevicePeaks,
    sides: &[ChartSide<'_>],
    groups: &[&Group],
    device: &Option<String>,
    several_devices: bool,
    precision: Precision,
) -> RooflineChart {
    let rows = || {
        groups
            .iter()
            .flat_map(|g| &g.averages.rows)
            .filter(move |row| count(&row.flops, precision).is_some())
    };
    let sm_ghz = median(rows().filter_map(|r| r.roofline.sm_clock_ghz));
    let dram_ghz = median(rows().filter_map(|r| r.roofline.dram_clock_ghz));
    let locked = rows().any(|r| r.roofline.clock_state == Some(ClockState::LockedBase));
    let label = precision_label(precision);
    let unit = if precision == Precision::TensorInt8 {
        "TOP/s"
    } else {
        "TFLOP/s"
    };
    let roof = peaks
        .peak_at(precision, sm_ghz.map(|g| g * 1e9))
        .map(|tflops| Roof {
            label: format!("{label} {tflops:.1} {unit}"),
            gflops_per_s: tflops * 1e3,
        });
    let bandwidth_gbs = peaks.bandwidth_at(dram_ghz.map(|g| g * 1e9));
    let mut clock_note = match (&roof, sm_ghz) {
        (None, _) => format!("No {label} peak for the {} in the device table", peaks.name),
        (Some(_), Some(g)) => format!(
            "Compute roof at the SM clock the run had, {g:.2} GHz (median of these kernels)"
        ),
        (Some(_), None) => "Compute roof at the published peak (no SM clock measured)".to_string(),
    };
    clock_note.push_str(&match dram_ghz {
        Some(g) => format!("; bandwidth roof at the DRAM clock {g:.2} GHz"),
        None => "; bandwidth roof at the published peak".to_string(),
    });
    if locked {
        clock_note.push_str("; clocks locked at base by the profiler");
    }
    let cache_roofs = cache_roofs(rows());
    for level in [Level::L2, Level::L1] {
        let has_bytes = rows().any(|r| cache_traffic(r, level).is_some());
        match cache_roofs.iter().find(|r| r.level == level) {
            Some(roof) => clock_note.push_str(&format!(
                "; {} roof {} GB/s: {}",
                level.label(),
                sig(roof.bandwidth_gbs),
                roof.source
            )),
            None if has_bytes => clock_note.push_str(&format!(
                "; {0} bytes without an {0} roof: neither the capture nor the device table \
                 gives its peak",
                level.label()
            )),
            None => {}
        }
    }
    let mut series: Vec<Series> = sides
        .iter()
        .map(|side| Series {
            label: side.label.to_string(),
            points: Vec::new(),
            unplaced: Vec::new(),
        })
        .collect();
    for group in groups {
        let series = &mut series[group.side];
        let full_names = FullNames::of(&group.events);
        for row in group
            .averages
            .rows
            .iter()
            .filter(|r| r.kind == FrameKind::Kernel)
        {
            let Some(flops) = count(&row.flops, precision) else {
                continue;
            };
            let name = full_names.get(&row.name);
            let bytes = row.bytes.filter(|b| *b > 0.0);
            let time = row.gpu_total_ns.filter(|t| *t > 0.0);
            let (Some(bytes), Some(time)) = (bytes, time) else {
                series.unplaced.push(name);
                continue;
            };
            let total = row.flops.total().unwrap_or(0.0) + row.flops.tensor_int8.unwrap_or(0.0);
            let levels = [Level::L2, Level::L1]
                .into_iter()
                .filter_map(|level| {
                    let traffic = cache_traffic(row, level)?;
                    Some(LevelPoint {
                        level,
                        intensity: flops / traffic.bytes,
                        bytes: traffic.bytes,
                        pct: traffic
                            .peak_gbs
                            .map(|peak| 100.0 * traffic.bytes / time / peak),
                    })
                })
                .collect();
            series.points.push(ChartPoint {
                name,
                short_name: row.name.clone(),
                intensity: flops / bytes,
                gflops_per_s: flops / time,
                share: if total > 0.0 { flops / total } else { 1.0 },
                gpu_time_ns: time,
                launches: row.calls,
                bound: row.roofline.bound,
                verdict: row.roofline.verdict(),
                bound_label: row.roofline.bound_label(),
                decided_here: match row.roofline.bound {
                    Bound::Compute => row.roofline.precision.is_none_or(|p| p == precision),
                    _ => true,
                },
                levels,
            });
        }
    }
    let device_name = match (several_devices, device) {
        (true, Some(id)) => format!("{} · GPU {id}", peaks.name),
        _ => peaks.name.clone(),
    };
    RooflineChart {
        device: device_name,
        device_id: device.clone(),
        precision,
        bandwidth_gbs,
        roof,
        cache_roofs,
        series,
        clock_note,
    }
}

/// A row's bytes (and roof) at a cache level, when its launches carry them.
fn cache_traffic(
    row: &crate::results::aggregate::KeyAverage,
    level: Level,
) -> Option<crate::results::roofline::CacheTraffic> {
    let inputs = row.launch_inputs()?;
    match level {
        Level::L2 => inputs.l2,
        Level::L1 => inputs.l1,
        Level::Dram => None,
    }
    .filter(|t| t.bytes > 0.0)
}

/// The L2 and L1 roofs of a chart: the device table has no cache bandwidths, so each is ncu's
/// own hierarchical roofline peak in the capture (bytes per cycle × the unit's clock), the
/// median over the chart's kernels (the clock moves a little from launch to launch).
fn cache_roofs<'a>(
    rows: impl Iterator<Item = &'a crate::results::aggregate::KeyAverage> + Clone,
) -> Vec<CacheRoof> {
    [Level::L2, Level::L1]
        .into_iter()
        .filter_map(|level| {
            let peak = median(
                rows.clone()
                    .filter_map(|r| cache_traffic(r, level)?.peak_gbs),
            )?;
            let metric = crate::results::levels::peak_metrics(level)?;
            Some(CacheRoof {
                level,
                bandwidth_gbs: peak,
                source: format!(
                    "ncu's hierarchical roofline peak in the capture ({metric}), median over \
                     these kernels; the device table has no {} bandwidth",
                    level.label()
                ),
            })
        })
        .collect()
}

/// Each kernel's full name (its record's `kernel` attribute) by the short name its events
/// carry, built once: a lookup per row stays linear in distinct names (a scan per row was
/// quadratic: 100k names took minutes).
pub(crate) struct FullNames(std::collections::HashMap<String, String>);

impl FullNames {
    pub(crate) fn of(events: &[Event]) -> Self {
        let mut names = std::collections::HashMap::new();
        for event in events.iter().filter(|e| e.kind() == FrameKind::Kernel) {
            // The first event of a name decides, as the scan it replaces did.
            if names.contains_key(event.name()) {
                continue;
            }
            let full = event
                .attributes
                .get("kernel")
                .and_then(|v| v.as_str())
                .unwrap_or(event.name());
            names.insert(event.name().to_string(), full.to_string());
        }
        FullNames(names)
    }

    /// The full name of the kernel whose events are named `short`, else `short`.
    pub(crate) fn get(&self, short: &str) -> String {
        self.0
            .get(short)
            .map_or_else(|| short.to_string(), String::clone)
    }
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
/// The most moves of a diff's chart that get their kernel's name.
const MAX_LABELLED_MOVES: usize = 24;
const HEIGHT: u32 = 560;
/// Text size of roof, axis and point labels in the chart's 900-pixel coordinates: the page shows
/// one chart a row, so at an 800-pixel window (about 750 pixels of chart) it is 15 px high.
const LABEL_PX: u32 = 18;

/// One chart as a standalone SVG document.
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
    // A class and the chart's device and precision make it findable in a page holding several.
    let attributes = format!(
        "<svg class=\"roofline\" data-device=\"{}\" data-precision=\"{}\" ",
        escape(&chart.device),
        precision_id(chart.precision)
    );
    Ok(svg.replacen("<svg ", &attributes, 1))
}

/// Several charts as one SVG document, one panel under the other (`--format svg` of a run with
/// several devices or precisions); one chart alone is [`render_svg`]'s document.
pub fn render_svg_stack(charts: &[RooflineChart]) -> Result<String> {
    if let [chart] = charts {
        return render_svg(chart);
    }
    let height = HEIGHT as usize * charts.len();
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"rooflines\" width=\"{WIDTH}\" \
         height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\">\n"
    );
    for (index, chart) in charts.iter().enumerate() {
        let panel = render_svg(chart)?;
        // A nested <svg> is a viewport of its own at (x, y): each panel keeps its coordinates.
        let y = HEIGHT as usize * index;
        svg.push_str(&panel.replacen("<svg ", &format!("<svg x=\"0\" y=\"{y}\" "), 1));
        svg.push('\n');
    }
    svg.push_str("</svg>\n");
    Ok(svg)
}

type Range = (f64, f64);

/// Axis ranges covering every point and the ridge point of the roof, in whole decades.
fn ranges(chart: &RooflineChart) -> (Range, Range) {
    let mut xs: Vec<f64> = Vec::new();
    let mut ys: Vec<f64> = Vec::new();
    for point in chart.series.iter().flat_map(|s| &s.points) {
        xs.push(point.intensity);
        xs.extend(point.levels.iter().map(|l| l.intensity));
        ys.push(point.gflops_per_s);
    }
    if let Some(roof) = &chart.roof {
        xs.push(roof.gflops_per_s / chart.bandwidth_gbs);
        xs.extend(
            chart
                .cache_roofs
                .iter()
                .map(|c| roof.gflops_per_s / c.bandwidth_gbs),
        );
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
        .caption(
            format!(
                "Roofline — {} — {}",
                chart.device,
                precision_label(chart.precision)
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d(
            (x_range.0..x_range.1).log_scale(),
            (y_range.0..y_range.1).log_scale(),
        )?;
    let label = precision_label(chart.precision);
    // A hierarchical chart's x axis is per byte of each level, as its markers say.
    let hierarchical = is_hierarchical(chart);
    let (work, per_work) = match chart.precision {
        Precision::TensorInt8 => ("int8 OP".to_string(), "int8 GOP/s".to_string()),
        _ => (format!("{label} FLOP"), format!("{label} GFLOP/s")),
    };
    let (per_byte, per_second) = match hierarchical {
        true => (
            format!("{work} / byte of each level (● DRAM, ■ L2, ◆ L1)"),
            per_work,
        ),
        false => (format!("{work} / DRAM byte"), per_work),
    };
    plot.configure_mesh()
        .x_desc(per_byte)
        .y_desc(per_second)
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .light_line_style(RGBColor(240, 240, 240))
        .label_style(("sans-serif", LABEL_PX))
        .axis_desc_style(("sans-serif", LABEL_PX))
        .draw()?;
    let top = chart.roof.as_ref().map_or(y_range.1, |r| r.gflops_per_s);
    let samples = |bandwidth: f64| -> Vec<(f64, f64)> {
        let (lo, hi) = (x_range.0.log10(), x_range.1.log10());
        (0..=200)
            .map(|i| 10f64.powf(lo + (hi - lo) * i as f64 / 200.0))
            .map(|x| (x, (bandwidth * x).min(top)))
            .collect()
    };
    // Without a compute peak only the bandwidth roofs are drawn, up to the top of the chart.
    // The bandwidth roofs, DRAM first: (label, colour, GB/s).
    let mut bandwidth_roofs = vec![(
        format!("DRAM {} GB/s", sig(chart.bandwidth_gbs)),
        DRAM_COLOUR,
        chart.bandwidth_gbs,
    )];
    for cache in &chart.cache_roofs {
        bandwidth_roofs.push((
            format!("{} {} GB/s", cache.level.label(), sig(cache.bandwidth_gbs)),
            level_colour(cache.level),
            cache.bandwidth_gbs,
        ));
    }
    // DRAM last: the flat compute roof the three share is drawn in its colour.
    for (_, colour, bandwidth) in bandwidth_roofs.iter().rev() {
        plot.draw_series(LineSeries::new(
            samples(*bandwidth),
            ShapeStyle::from(colour).stroke_width(2),
        ))?;
    }
    if let Some(roof) = &chart.roof {
        let ridge = roof.gflops_per_s / chart.bandwidth_gbs;
        let (x, y) = plot.backend_coord(&(ridge, roof.gflops_per_s));
        root.draw(&Text::new(
            roof.label.clone(),
            (x + 6, y - 22),
            ("sans-serif", LABEL_PX).into_font(),
        ))?;
    }
    // Each bandwidth roof is named near its low end, in its colour; labels that would overlap
    // are pushed apart (the roofs run parallel, a factor of a few apart).
    let mut labels: Vec<(String, RGBColor, (i32, i32))> = bandwidth_roofs
        .iter()
        .map(|(text, colour, bandwidth)| {
            // Where the roof is below the top of the chart, a third of the way in.
            let x = (x_range.0 * 3.0).min(y_range.1 / 2.0 / bandwidth);
            let (px, py) = plot.backend_coord(&(x, bandwidth * x));
            (text.clone(), *colour, (px + 4, py - 24))
        })
        .collect();
    labels.sort_by_key(|(_, _, (_, y))| std::cmp::Reverse(*y));
    let gap = LABEL_PX as i32 + 4;
    for index in 1..labels.len() {
        let below = labels[index - 1].2.1;
        if labels[index].2.1 > below - gap {
            labels[index].2.1 = below - gap;
        }
    }
    for (text, colour, at) in &labels {
        root.draw(&Text::new(
            text.clone(),
            *at,
            ("sans-serif", LABEL_PX).into_font().color(colour),
        ))?;
    }
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
    if let Some(roof) = &chart.roof {
        circles.push_str(&format!(
            "<g class=\"roof\" data-label=\"{}\" data-gflops=\"{}\"></g>",
            escape(&roof.label),
            roof.gflops_per_s
        ));
    }
    for cache in &chart.cache_roofs {
        circles.push_str(&format!(
            "<g class=\"cache-roof\" data-level=\"{}\" data-gbs=\"{}\" data-source=\"{}\"></g>",
            cache.level.id(),
            cache.bandwidth_gbs,
            escape(&cache.source)
        ));
    }
    circles.push_str("</g>");
    // The cache levels' points under the DRAM points: a thin line joins a kernel's points,
    // which share its height.
    circles.push_str("<g class=\"level-points\">");
    for (series_index, series) in chart.series.iter().enumerate() {
        for point in series.points.iter().filter(|p| !p.levels.is_empty()) {
            let at = |x: f64, y: f64| plot.backend_coord(&(x, y));
            level_markers(&at, chart, series_index, &series.label, point, circles);
        }
    }
    circles.push_str("</g><g class=\"points\">");
    for (series_index, series) in chart.series.iter().enumerate() {
        for point in &series.points {
            let (cx, cy) = plot.backend_coord(&(point.intensity, point.gflops_per_s));
            let radius = radius(point.gpu_time_ns, total);
            // The second series of a diff is drawn hollow.
            let fill = match (series_index, point.decided_here) {
                (0, true) => format!(
                    "fill=\"{}\" fill-opacity=\"0.6\"",
                    bound_colour(point.bound)
                ),
                (0, false) => format!(
                    "fill=\"{}\" fill-opacity=\"0.12\" stroke-dasharray=\"3 2\"",
                    bound_colour(point.bound)
                ),
                _ => "fill=\"none\" stroke-width=\"2.5\"".to_string(),
            };
            circles.push_str(&format!(
                "<circle class=\"point\" cx=\"{cx}\" cy=\"{cy}\" r=\"{radius:.1}\" {fill} \
                 stroke=\"{colour}\" data-series=\"{series}\" data-name=\"{name}\" data-short=\"{short}\" \
                 data-ai=\"{ai}\" data-gflops=\"{gflops}\" data-gpu-ns=\"{time}\" \
                 data-bound=\"{bound}\" data-decided-by=\"{decided}\" data-decided-here=\"{here}\" \
                 data-precision=\"{precision}\" data-share=\"{share}\">\
                 <title>{title}</title></circle>",
                colour = bound_colour(point.bound),
                series = escape(&series.label),
                name = escape(&point.name),
                short = escape(&point.short_name),
                ai = point.intensity,
                gflops = point.gflops_per_s,
                time = point.gpu_time_ns,
                bound = point.bound,
                decided = escape(&point.bound_label),
                here = point.decided_here,
                precision = precision_id(chart.precision),
                share = point.share,
                title = escape(&format!(
                    "{} ({})\n{} launches, GPU time {}\n{precision}: {} FLOP/byte, {} GFLOP/s \
                     ({} % of its FLOPs)\n{}\n{}",
                    point.name,
                    series.label,
                    point.launches,
                    units::time_ns(point.gpu_time_ns),
                    sig(point.intensity),
                    sig(point.gflops_per_s),
                    units::pct(point.share * 100.0),
                    point.bound_label,
                    point.verdict,
                    precision = precision_label(chart.precision),
                )),
            ));
        }
    }
    circles.push_str("</g>");
    // A diff: each kernel in both runs gets an arrow from A's point to B's, named at B's end.
    if let [a, b] = chart.series.as_slice() {
        circles.push_str("<g class=\"moves\">");
        // Labels as (x, y, anchor, text), placed once all are known so none overlaps another.
        let mut labels: Vec<(f64, Label)> = Vec::new();
        // A's points by name, looked up once per B point (a search per point was quadratic).
        let in_a: std::collections::HashMap<&str, &ChartPoint> = a
            .points
            .iter()
            .map(|p| (p.short_name.as_str(), p))
            .collect();
        for to in &b.points {
            let Some(from) = in_a.get(to.short_name.as_str()) else {
                continue;
            };
            let (x1, y1) = plot.backend_coord(&(from.intensity, from.gflops_per_s));
            let (x2, y2) = plot.backend_coord(&(to.intensity, to.gflops_per_s));
            let moved = (x2 - x1).abs() + (y2 - y1).abs() >= 2;
            if moved {
                // The head is drawn as its own triangle (no `url(#marker)`: every chart of a page
                // would share one id, and the page references nothing).
                circles.push_str(&format!(
                    "<line class=\"moved\" data-short=\"{}\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" \
                     y2=\"{y2}\" stroke=\"#444\" stroke-width=\"1.5\"/>{}",
                    escape(&to.short_name),
                    arrow_head((x1, y1), (x2, y2))
                ));
            }
            let name: String = to.short_name.chars().take(40).collect();
            // Near the right edge the label goes to the left of its point.
            let (x, anchor) = match x2 > (WIDTH as i32) * 2 / 3 {
                true => (x2 - 12, "end"),
                false => (x2 + 8, "start"),
            };
            let text = format!("{name}{}", if moved { "" } else { " (unmoved)" });
            labels.push((to.gpu_time_ns, (x, y2 - 8, anchor, text)));
        }
        // Names for the moves with the most GPU time only: hundreds would overlap into a
        // block, and separating them costs time that grows faster than their number.
        labels.sort_by(|x, y| y.0.total_cmp(&x.0));
        labels.truncate(MAX_LABELLED_MOVES);
        let labels = labels.into_iter().map(|(_, label)| label).collect();
        for (x, y, anchor, text) in separated(labels) {
            circles.push_str(&format!(
                "<text class=\"moved-label\" x=\"{x}\" y=\"{y}\" text-anchor=\"{anchor}\" \
                 font-family=\"sans-serif\" font-size=\"{LABEL_PX}\">{}</text>",
                escape(&text),
            ));
        }
        circles.push_str("</g>");
    }
    // A few points get their (short) names beside them; many would only overlap.
    let placed: usize = chart.series.iter().map(|s| s.points.len()).sum();
    if placed <= MAX_LABELLED_POINTS && chart.series.len() == 1 {
        circles.push_str(&format!(
            "<g class=\"labels\" font-family=\"sans-serif\" font-size=\"{LABEL_PX}\">"
        ));
        for point in &chart.series[0].points {
            let (cx, cy) = plot.backend_coord(&(point.intensity, point.gflops_per_s));
            let name: String = point.short_name.chars().take(40).collect();
            // Near the right edge the label goes to the left of its point.
            let gap = radius(point.gpu_time_ns, total).ceil() as i32 + 4;
            // A kernel's cache-level markers share its row, left of its point as a rule: its
            // name goes right of the point where it fits, else left of its leftmost marker.
            let leftmost = point
                .levels
                .iter()
                .map(|l| plot.backend_coord(&(l.intensity, point.gflops_per_s)).0 - 12)
                .fold(cx - gap, i32::min);
            let wide = (name.chars().count() as f64 * f64::from(LABEL_PX) * 0.6) as i32;
            let fits_right = cx + gap + wide <= WIDTH as i32 - 8;
            let (x, anchor) = match (point.levels.is_empty(), fits_right) {
                (false, true) => (cx + gap, "start"),
                (false, false) => (leftmost, "end"),
                (true, _) if cx > (WIDTH as i32) * 2 / 3 => (cx - gap, "end"),
                (true, _) => (cx + gap, "start"),
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

/// A label's x, y, text anchor and text.
type Label = (i32, i32, &'static str, String);

/// Text labels moved down, top to bottom, until none overlaps one placed before it: two kernels
/// with the same FLOP/byte and close speeds (the H200 capture's two matmuls) had their names
/// written over each other. Widths are estimated (0.6 em a character).
fn separated(mut labels: Vec<Label>) -> Vec<Label> {
    labels.sort_by_key(|l| l.1);
    let line = LABEL_PX as i32 + 2;
    let span = |(x, _, anchor, text): &Label| {
        let width = (text.chars().count() as f64 * f64::from(LABEL_PX) * 0.6) as i32;
        match *anchor {
            "end" => (x - width, *x),
            _ => (*x, x + width),
        }
    };
    let mut placed: Vec<Label> = Vec::with_capacity(labels.len());
    for mut label in labels {
        let (left, right) = span(&label);
        while placed.iter().any(|p| {
            let (l, r) = span(p);
            l < right && left < r && (p.1 - label.1).abs() < line
        }) {
            label.1 += line;
        }
        placed.push(label);
    }
    placed
}

/// The DRAM roof's colour (the verdict colours are the points').
const DRAM_COLOUR: RGBColor = RGBColor(60, 60, 60);

/// A cache level's roof and marker outline.
fn level_colour(level: Level) -> RGBColor {
    match level {
        Level::Dram => DRAM_COLOUR,
        Level::L2 => RGBColor(44, 160, 44),
        Level::L1 => RGBColor(148, 103, 189),
    }
}

/// The same as CSS.
pub fn level_css_colour(level: Level) -> String {
    let RGBColor(r, g, b) = level_colour(level);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Whether a chart draws cache levels (roofs or points).
pub fn is_hierarchical(chart: &RooflineChart) -> bool {
    !chart.cache_roofs.is_empty()
        || chart
            .series
            .iter()
            .flat_map(|s| &s.points)
            .any(|p| !p.levels.is_empty())
}

/// A kernel's L2 (square) and L1 (diamond) markers at its height, joined to its DRAM point,
/// each carrying its figures for the hover and the DOM.
fn level_markers(
    at: &dyn Fn(f64, f64) -> (i32, i32),
    chart: &RooflineChart,
    series_index: usize,
    series_label: &str,
    point: &ChartPoint,
    out: &mut String,
) {
    let (dram_x, cy) = at(point.intensity, point.gflops_per_s);
    let xs: Vec<i32> = point
        .levels
        .iter()
        .map(|l| at(l.intensity, point.gflops_per_s).0)
        .collect();
    let (lo, hi) = xs
        .iter()
        .fold((dram_x, dram_x), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    out.push_str(&format!(
        "<line class=\"level-link\" data-short=\"{}\" x1=\"{lo}\" y1=\"{cy}\" x2=\"{hi}\" \
         y2=\"{cy}\" stroke=\"#999\" stroke-width=\"1\"/>",
        escape(&point.short_name)
    ));
    let fill = match series_index {
        0 => format!(
            "fill=\"{}\" fill-opacity=\"0.6\"",
            bound_colour(point.bound)
        ),
        _ => "fill=\"none\"".to_string(),
    };
    for (level, x) in point.levels.iter().zip(xs) {
        let colour = level_css_colour(level.level);
        let shape = match level.level {
            Level::L2 => format!(
                "<rect class=\"level-point\" x=\"{}\" y=\"{}\" width=\"12\" height=\"12\"",
                x - 6,
                cy - 6
            ),
            _ => format!(
                "<polygon class=\"level-point\" points=\"{x},{} {},{cy} {x},{} {},{cy}\"",
                cy - 8,
                x + 8,
                cy + 8,
                x - 8
            ),
        };
        let share = level.pct.map_or("no roof in the capture".to_string(), |p| {
            format!("{} % of the {} roof", units::pct(p), level.level.label())
        });
        out.push_str(&format!(
            "{shape} {fill} stroke=\"{colour}\" stroke-width=\"2\" data-series=\"{series}\" \
             data-short=\"{short}\" data-level=\"{id}\" data-ai=\"{ai}\" data-gflops=\"{gflops}\" \
             data-bytes=\"{bytes}\" data-pct=\"{pct}\" data-bound=\"{bound}\" \
             data-precision=\"{precision}\"><title>{title}</title>{end}",
            series = escape(series_label),
            short = escape(&point.short_name),
            id = level.level.id(),
            ai = level.intensity,
            gflops = point.gflops_per_s,
            bytes = level.bytes,
            pct = level.pct.map_or(String::new(), |p| p.to_string()),
            bound = point.bound,
            precision = precision_id(chart.precision),
            title = escape(&format!(
                "{} ({series_label})\n{}: {} FLOP/byte, {} GFLOP/s, {share}\n{}",
                point.name,
                level.level.label(),
                sig(level.intensity),
                sig(point.gflops_per_s),
                point.bound_label
            )),
            end = match level.level {
                Level::L2 => "</rect>",
                _ => "</polygon>",
            },
        ));
    }
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

/// Text for HTML and SVG content and attribute values: the one HTML rule, re-exported for
/// the pages that import it from here.
pub use crate::results::escape::html::text as escape;

/// A filled triangle pointing at `tip` along the line from `from`: 8 px long, 8 px wide.
fn arrow_head(from: (i32, i32), tip: (i32, i32)) -> String {
    let (dx, dy) = (f64::from(tip.0 - from.0), f64::from(tip.1 - from.1));
    let length = dx.hypot(dy).max(1.0);
    let (ux, uy) = (dx / length, dy / length);
    let (bx, by) = (f64::from(tip.0) - 8.0 * ux, f64::from(tip.1) - 8.0 * uy);
    format!(
        "<polygon class=\"moved-head\" points=\"{},{} {:.1},{:.1} {:.1},{:.1}\" fill=\"#444\"/>",
        tip.0,
        tip.1,
        bx - 4.0 * uy,
        by + 4.0 * ux,
        bx + 4.0 * uy,
        by - 4.0 * ux
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::run::ProfileRun;
    use crate::results::devices::DeviceTable;
    use crate::results::export::Report;

    fn report(path: &str) -> Report {
        let run = ProfileRun::read(std::path::Path::new(path)).unwrap();
        let peaks = DeviceTable::builtin().unwrap().lookup("H200").cloned();
        Report::from_run(run, peaks)
    }

    fn run_charts(report: &Report) -> Charts {
        let side = ChartSide {
            label: "ncu.000",
            events: &report.profile.events,
        };
        charts(report.peaks.as_ref(), &[side], true).unwrap()
    }

    #[test]
    fn the_h200_capture_places_its_four_kernels_under_the_fp32_roof() {
        let report = report(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/runs/h200-baseline"
        ));
        let charts = run_charts(&report);
        // FP32 only: one chart, on the run's one device.
        assert_eq!(charts.charts.len(), 1);
        let chart = &charts.charts[0];
        assert_eq!(
            (chart.precision, chart.device.as_str()),
            (Precision::Fp32, "H200")
        );
        let series = &chart.series[0];
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
        let roof = chart.roof.as_ref().unwrap();
        assert!(roof.label.starts_with("fp32"), "{roof:?}");
        for point in &series.points {
            let ceiling = (chart.bandwidth_gbs * point.intensity).min(roof.gflops_per_s);
            assert!(point.gflops_per_s <= ceiling, "{point:?} above {ceiling}");
        }
        let svg = render_svg(chart).unwrap();
        assert_eq!(svg.matches("<circle class=\"point\"").count(), 4);
        assert!(svg.contains("data-short=\"matmul_tiled&lt;32&gt;\""));
        assert!(svg.contains("data-precision=\"fp32\""));
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    /// The H200 capture with cache-level bytes and roofs added. NOT a measurement: no capture
    /// in the repository has ncu's hierarchical roofline metrics (`--set full` or `roofline`);
    /// the figures are made up, of the size an H200 could give.
    pub(crate) fn with_cache_levels(run: &mut ProfileRun) {
        use crate::model::record::{Metric, MetricValue};
        // (name prefix, L2→L1 bytes, L1 writeback cycles of 128 bytes)
        let levels = [
            ("vector_add", 1.9e8, 1.5e6),
            ("matmul_naive", 1.07e9, 6.7e7),
            ("void matmul_tiled", 1.34e8, 2.1e6),
            ("reduce_sum", 6.9e7, 5.4e5),
        ];
        for record in &mut run.kernels {
            let Some((_, l2, l1)) = levels.iter().find(|(n, _, _)| record.name.starts_with(n))
            else {
                continue;
            };
            for (name, value) in [
                ("l1tex__m_xbar2l1tex_read_bytes.sum", *l2),
                ("l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained", 5120.0),
                ("lts__cycles_elapsed.avg.per_second", 1.755e9),
                ("l1tex__lsu_writeback_active_mem_lg.sum", *l1),
                (
                    "l1tex__lsu_writeback_active_mem_lg.sum.peak_sustained",
                    132.0,
                ),
                ("l1tex__cycles_elapsed.avg.per_second", 1.755e9),
            ] {
                record.metrics.insert(
                    name.into(),
                    Metric {
                        value: MetricValue::Number(value),
                        unit: "".into(),
                    },
                );
            }
        }
    }

    #[test]
    fn cache_levels_get_their_roofs_and_each_kernel_a_point_per_level_at_its_share() {
        let mut run = ProfileRun::read(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/runs/h200-baseline"
        )))
        .unwrap();
        with_cache_levels(&mut run);
        let peaks = DeviceTable::builtin().unwrap().lookup("H200").cloned();
        let report = Report::from_run(run, peaks);
        let chart = run_charts(&report).charts.remove(0);
        // Both roofs from the capture: 5120 B/cycle × 1.755 GHz, 132 × 128 B/cycle × 1.755 GHz.
        let roofs: Vec<(Level, f64)> = chart
            .cache_roofs
            .iter()
            .map(|r| (r.level, r.bandwidth_gbs))
            .collect();
        assert_eq!(roofs.len(), 2, "{roofs:?}");
        assert!((roofs[0].1 - 8985.6).abs() < 0.01, "{roofs:?}");
        assert!((roofs[1].1 - 29652.48).abs() < 0.01, "{roofs:?}");
        assert!(
            chart
                .clock_note
                .contains("L2 roof 8986 GB/s: ncu's hierarchical"),
            "{}",
            chart.clock_note
        );
        for point in &chart.series[0].points {
            assert_eq!(point.levels.len(), 2, "{}", point.name);
            for level in &point.levels {
                let roof = chart
                    .cache_roofs
                    .iter()
                    .find(|r| r.level == level.level)
                    .unwrap();
                // The height under the level's roof is the level's share of it.
                let under = 100.0 * point.gflops_per_s / (roof.bandwidth_gbs * level.intensity);
                assert!((under - level.pct.unwrap()).abs() < 1e-9, "{point:?}");
            }
        }
        // matmul_naive: its L1 traffic (70 % of the L1 roof) decides, and its L1 marker sits
        // at 70 % of that roof.
        let naive = chart.series[0]
            .points
            .iter()
            .find(|p| p.short_name == "matmul_naive")
            .unwrap();
        let l1 = naive.levels.iter().find(|l| l.level == Level::L1).unwrap();
        assert_eq!(naive.bound, Bound::Memory, "{}", naive.bound_label);
        assert_eq!(
            naive.bound_label,
            format!("memory · L1 {:.0} %", l1.pct.unwrap())
        );
        let svg = render_svg(&chart).unwrap();
        assert_eq!(svg.matches("<rect class=\"level-point\"").count(), 4);
        assert_eq!(svg.matches("<polygon class=\"level-point\"").count(), 4);
        assert_eq!(svg.matches("<g class=\"cache-roof\"").count(), 2);
        assert!(svg.contains("\nL2 8986 GB/s\n"), "no L2 roof label");
        assert!(svg.contains("\nL1 29652 GB/s\n"), "no L1 roof label");
        assert!(svg.contains("FLOP / byte of each level"));
    }

    #[test]
    fn precisions_are_named_as_the_json_flop_counts_name_them() {
        let flops = FlopCounts {
            tensor_fp8: Some(1.0),
            fp16: Some(2.0),
            ..Default::default()
        };
        let keys = serde_json::to_value(flops).unwrap();
        for precision in [Precision::TensorFp8, Precision::Fp16] {
            assert!(keys.get(precision_id(precision)).is_some(), "{precision:?}");
        }
        assert_eq!(precision_label(Precision::TensorBf16), "tensor bf16");
        assert_eq!(precision_label(Precision::Fp64), "fp64");
    }

    #[test]
    fn several_charts_stack_as_nested_panels_and_one_stays_alone() {
        let report = report(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/runs/h200-baseline"
        ));
        let chart = run_charts(&report).charts.remove(0);
        let alone = render_svg_stack(std::slice::from_ref(&chart)).unwrap();
        assert!(
            alone.starts_with("<svg class=\"roofline\""),
            "{}",
            &alone[..60]
        );
        let fp64 = RooflineChart {
            precision: Precision::Fp64,
            ..chart.clone()
        };
        let stack = render_svg_stack(&[chart, fp64]).unwrap();
        assert!(stack.starts_with("<svg xmlns="));
        assert!(stack.contains("height=\"1120\""));
        assert!(stack.contains("<svg x=\"0\" y=\"560\" class=\"roofline\""));
        assert_eq!(stack.matches("data-precision=\"fp64\"").count(), 1 + 4);
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
