//! `--format svg`: the roofline charts alone, for documents: one chart per device and precision
//! the kernels counted FLOPs in, as for the HTML page; several are stacked in one SVG document,
//! one panel under the other (a run of FP32 kernels only is one chart).

use std::io::Write;

use crate::model::error::{Error, Result};
use crate::results::export::roofline_chart::{ChartSide, charts, render_svg_stack, run_label};
use crate::results::export::{Exporter, Format, Report};

pub struct SvgExporter;

impl Exporter for SvgExporter {
    fn format(&self) -> Format {
        Format::Svg
    }

    fn export(&self, report: &Report, out: &mut dyn Write) -> Result<()> {
        let label = run_label(report);
        let side = ChartSide {
            label: &label,
            events: &report.profile.events,
        };
        let charts = charts(report.peaks.as_ref(), &[side], true).ok_or_else(|| {
            Error::invalid(
                "roofline",
                "no device peaks for this run's device; pass --device NAME (e.g. --device H200) \
                 or --devices FILE",
            )
        })?;
        let svg = render_svg_stack(&charts.charts)?;
        out.write_all(svg.as_bytes())
            .map_err(|e| Error::io("write", "the roofline SVG", e))
    }
}
