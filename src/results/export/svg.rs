//! `--format svg`: the roofline chart alone, for documents.

use std::io::Write;

use crate::model::error::{Error, Result};
use crate::results::export::roofline_chart::{chart, render_svg, run_kernels, series};
use crate::results::export::{Exporter, Format, Report};

pub struct SvgExporter;

impl Exporter for SvgExporter {
    fn format(&self) -> Format {
        Format::Svg
    }

    fn export(&self, report: &Report, out: &mut dyn Write) -> Result<()> {
        let (averages, label) = run_kernels(report);
        let points = series(&label, &averages, &report.profile.events);
        let chart = chart(report.peaks.as_ref(), &[&averages], vec![points]).ok_or_else(|| {
            Error::invalid(
                "roofline",
                "no device peaks for this run's device; pass --device NAME (e.g. --device H200) \
                 or --devices FILE",
            )
        })?;
        let svg = render_svg(&chart)?;
        out.write_all(svg.as_bytes())
            .map_err(|e| Error::io("write", "the roofline SVG", e))
    }
}
