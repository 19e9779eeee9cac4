//! Reports and exports: one [`Exporter`] per format, all reading the same [`Report`].

pub mod chrome;
pub mod csv;
pub mod hatchet;
pub mod html;
pub mod html_batch;
pub mod html_diff;
pub mod html_drilldown;
pub mod html_limits;
pub mod html_page;
pub mod html_timeline;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod memory_table;
pub mod proton;
pub mod roofline_chart;
pub mod stable_tree;
pub mod svg;
pub mod table;

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::error::{Error, Result};
use crate::model::record::KernelRecord;
use crate::model::run::ProfileRun;
use crate::results::aggregate::{GroupBy, SortBy, from_str_via_value_enum};
use crate::results::devices::DevicePeaks;
use crate::results::event::{Event, Frame, FrameKind};
use crate::results::profile::{Profile, is_process_step, memory_events};

/// Output formats of `polyprof report`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Terminal table (comfy-table): run outcome, then kernels with GFLOP/s, GB/s, % of peak.
    #[default]
    Table,
    /// The normalized records with roofline figures (schema in docs/reports.md).
    Json,
    /// The normalized records, one row per record, fixed columns (docs/reports.md).
    Csv,
    /// Hatchet literal JSON (`hatchet.GraphFrame.from_literal`).
    Hatchet,
    /// Proton's tree JSON with its device table (`proton-viewer -m time/ns,util FILE`).
    Proton,
    /// Chrome trace / Perfetto JSON.
    Chrome,
    /// One self-contained HTML page: roofline, timelines, sortable kernel table.
    Html,
    /// The roofline chart alone, as SVG.
    Svg,
}

from_str_via_value_enum!(Format, "report format");

impl Format {
    /// The usual file extension.
    pub fn extension(&self) -> &'static str {
        match self {
            Format::Table => "txt",
            Format::Json | Format::Hatchet | Format::Proton => "json",
            Format::Csv => "csv",
            Format::Chrome => "trace.json",
            Format::Html => "html",
            Format::Svg => "svg",
        }
    }
}

/// What every exporter reads: a run (when the events come from one), its events, the device
/// peaks, and the table's grouping and order.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub run: Option<ProfileRun>,
    pub profile: Profile,
    pub peaks: Option<DevicePeaks>,
    pub group_by: GroupBy,
    pub sort_by: SortBy,
    /// The run's memory commands as events (Chrome trace lanes); empty for a session's profile.
    pub memory_events: Vec<Event>,
}

impl Report {
    /// A report of a profiler run.
    pub fn from_run(run: ProfileRun, peaks: Option<DevicePeaks>) -> Self {
        Report {
            profile: Profile::from_run(&run),
            memory_events: memory_events(&run),
            run: Some(run),
            peaks,
            group_by: GroupBy::default(),
            sort_by: SortBy::default(),
        }
    }

    /// A report of a session's profile.
    pub fn from_profile(profile: Profile, peaks: Option<DevicePeaks>) -> Self {
        Report {
            run: None,
            memory_events: Vec::new(),
            profile,
            peaks,
            group_by: GroupBy::default(),
            sort_by: SortBy::default(),
        }
    }

    /// The normalized kernel records: the run's, or the session's kernel events as records.
    pub fn records(&self) -> Vec<KernelRecord> {
        if let Some(run) = &self.run {
            // Records whose path the pipeline did not stamp get the one the report uses.
            let mut records = run.kernels.clone();
            for (record, event) in records.iter_mut().zip(&self.profile.events) {
                if record.call_path.is_empty() {
                    record.call_path = event.call_path.iter().map(|f| f.name.clone()).collect();
                }
            }
            return records;
        }
        self.profile
            .events
            .iter()
            .filter(|e| e.kind() == FrameKind::Kernel)
            .map(|event| self.event_record(event))
            .collect()
    }

    /// A scope's roofline point, as the table judges a scope: its rates over the GPU time inside
    /// it, else over its own CPU time with no GPU peak to compare against. CSV and JSON use it.
    pub fn scope_point(
        &self,
        record: &KernelRecord,
        event: &Event,
    ) -> crate::results::roofline::RooflinePoint {
        use crate::results::roofline::evaluate;
        match (event.gpu_time_ns, event.cpu_time_ns) {
            (None, Some(cpu)) => evaluate(None, &record.flops, record.dram_bytes, Some(cpu)),
            (gpu, _) => evaluate(self.peaks.as_ref(), &record.flops, record.dram_bytes, gpu),
        }
    }

    /// A user scope or function range of the report's events (not the process steps of the
    /// run, which say where wall time went rather than what the workload did) as a record:
    /// name, calls, FLOPs, bytes and call path, for the one-row-per-record formats.
    pub fn scope_records(&self) -> Vec<(KernelRecord, &Event)> {
        self.profile
            .events
            .iter()
            .filter(|e| matches!(e.kind(), FrameKind::Scope | FrameKind::Function))
            .filter(|e| !is_process_step(e))
            .map(|event| (self.event_record(event), event))
            .collect()
    }

    fn event_record(&self, event: &Event) -> KernelRecord {
        KernelRecord {
            profiler: self
                .profile
                .profiler
                .clone()
                .unwrap_or_else(|| "session".to_string()),
            process_id: event.process_id,
            process_name: event.process_name.clone(),
            launch_id: event.launch_id.unwrap_or(event.id),
            name: event
                .attributes
                .get("kernel")
                .and_then(|v| v.as_str())
                .unwrap_or(event.name())
                .to_string(),
            short_name: event.name().to_string(),
            device: event.device.clone(),
            stream: event.stream.clone(),
            start_ns: event.gpu_start_ns,
            duration_ns: event.gpu_time_ns,
            calls: event.calls,
            dram_bytes: event.bytes,
            flops: event.flops,
            call_path: event.call_path.iter().map(|f| f.name.clone()).collect(),
            ..Default::default()
        }
    }

    /// Add a session's scopes (a [`Profile`] a workload recorded with the call-path API) under
    /// the run's pass: `job / pass / scope …`, ids after the run's events.
    pub fn add_scopes(&mut self, scopes: Profile) {
        let prefix: Vec<Frame> = self
            .profile
            .events
            .iter()
            .find(|e| e.call_path.iter().any(|f| f.kind == FrameKind::Pass))
            .and_then(|e| {
                let pass = e.call_path.iter().position(|f| f.kind == FrameKind::Pass)?;
                Some(e.call_path[..=pass].to_vec())
            })
            .unwrap_or_default();
        let first_id = self
            .profile
            .events
            .iter()
            .map(|e| e.id + 1)
            .max()
            .unwrap_or(0);
        for mut event in scopes.events {
            event.id += first_id;
            event.parent = event.parent.map(|p| p + first_id);
            let mut path = prefix.clone();
            path.append(&mut event.call_path);
            event.call_path = path;
            self.profile.events.push(event);
        }
    }

    /// The run's memory commands (copies, fills, barriers), each with the call path its
    /// event has; empty for a session's profile.
    pub fn memory_records(&self) -> Vec<KernelRecord> {
        let Some(run) = &self.run else {
            return Vec::new();
        };
        let mut records = run.memory_commands.clone();
        for (record, event) in records.iter_mut().zip(&self.memory_events) {
            if record.call_path.is_empty() {
                record.call_path = event.call_path.iter().map(|f| f.name.clone()).collect();
            }
        }
        records
    }

    /// The device name the report is about.
    pub fn device_name(&self) -> Option<&str> {
        self.run
            .as_ref()
            .and_then(|r| r.device.as_ref().map(|d| d.name.as_str()))
            .or(self.profile.device.as_deref())
    }
}

/// One output format.
pub trait Exporter {
    fn format(&self) -> Format;
    /// Write `report` to `out`.
    fn export(&self, report: &Report, out: &mut dyn Write) -> Result<()>;
}

/// One output format of a CI result (`diff`, `batch`, `eval`): JUnit XML, a Markdown summary.
pub trait CiExporter {
    /// Write `suite` to `out`.
    fn export(&self, suite: &crate::results::ci::CiSuite, out: &mut dyn Write) -> Result<()>;
}

/// The exporter of `format`.
pub fn exporter(format: Format) -> Box<dyn Exporter> {
    match format {
        Format::Table => Box::new(table::TableExporter),
        Format::Json => Box::new(json::JsonExporter),
        Format::Csv => Box::new(csv::CsvExporter),
        Format::Hatchet => Box::new(hatchet::HatchetExporter),
        Format::Proton => Box::new(proton::ProtonExporter),
        Format::Chrome => Box::new(chrome::ChromeExporter),
        Format::Html => Box::new(html::HtmlExporter),
        Format::Svg => Box::new(svg::SvgExporter),
    }
}

/// Render `report` as `format` into memory.
pub fn render(report: &Report, format: Format) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    exporter(format).export(report, &mut out)?;
    Ok(out)
}

/// Write `report` as `format` to `path` (a temporary file renamed into place, so a failed export
/// never leaves half a file).
pub fn write_file(report: &Report, format: Format, path: &Path) -> Result<()> {
    let bytes = render(report, format)?;
    crate::model::atomic_file::write_atomic(path, &bytes)
        .map_err(|e| Error::io("write report", path, e))
}

/// JSON to `out`, pretty or compact.
pub(crate) fn write_json<T: Serialize>(
    value: &T,
    out: &mut dyn Write,
    what: &str,
    pretty: bool,
) -> Result<()> {
    let result = if pretty {
        serde_json::to_writer_pretty(&mut *out, value)
    } else {
        serde_json::to_writer(&mut *out, value)
    };
    result.map_err(|source| Error::Json {
        context: what.to_string(),
        source,
    })?;
    out.write_all(b"\n")
        .map_err(|e| Error::io("write", what.to_string(), e))
}
