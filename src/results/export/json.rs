//! JSON report: the normalized records, each with its roofline figures, plus a run summary and
//! the peaks used. Schema in docs/reports.md (`polyprof.report`, version [`REPORT_SCHEMA_VERSION`]).

use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::model::error::Result;
use crate::model::outcome::Outcome;
use crate::model::record::KernelRecord;
use crate::results::devices::DevicePeaks;
use crate::results::export::{Exporter, Format, Report, write_json};
use crate::results::roofline::{RooflinePoint, evaluate_run_record};

/// Bumped when a field of the report changes meaning or is removed.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// What ran and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub label: String,
    pub profiler: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profiler_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    pub target: Vec<crate::model::arg::Arg>,
    pub started_unix_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    pub succeeded: bool,
    pub warnings: Vec<String>,
    pub errors: Vec<String>,
}

/// A record with its derived figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportRecord {
    #[serde(flatten)]
    pub record: KernelRecord,
    pub roofline: RooflinePoint,
}

/// A scope with its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeRecord {
    /// `scope` or `function`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_time_ns: Option<f64>,
    #[serde(flatten)]
    pub record: KernelRecord,
    pub roofline: RooflinePoint,
}

/// The JSON report document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonReport {
    /// Always `polyprof.report`.
    pub kind: String,
    pub schema_version: u32,
    pub run: Option<RunSummary>,
    pub peaks: Option<DevicePeaks>,
    pub kernels: Vec<ReportRecord>,
    /// User scopes and function ranges (a session's, or those a workload recorded during the
    /// run: the CPU work of a `none` run), as the CSV's `scope`/`function` rows and the table's
    /// rows: each with its `kind`, CPU time and roofline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<ScopeRecord>,
    /// Memory copies, fills and barriers (each with its `kind`), apart from the kernels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_commands: Vec<KernelRecord>,
}

impl JsonReport {
    pub fn new(report: &Report) -> Self {
        let run = report.run.as_ref().map(|run| RunSummary {
            label: run.label.clone(),
            profiler: run.profiler.name.clone(),
            profiler_version: run.profiler.version.clone(),
            device: run.device.as_ref().map(|d| d.name.clone()),
            target: run.target.clone(),
            started_unix_s: run.started_unix_s,
            outcome: run.outcome.clone(),
            succeeded: run.succeeded(),
            warnings: run.warnings.clone(),
            // The messages: the report's schema (v1) keeps strings; kinds are in run.json.
            errors: run.errors.iter().map(ToString::to_string).collect(),
        });
        let kernels = report
            .records()
            .into_iter()
            .map(|record| ReportRecord {
                roofline: evaluate_run_record(report.peaks.as_ref(), report.run.as_ref(), &record),
                record,
            })
            .collect();
        JsonReport {
            kind: "polyprof.report".to_string(),
            schema_version: REPORT_SCHEMA_VERSION,
            run,
            peaks: report.peaks.clone(),
            kernels,
            scopes: report
                .scope_records()
                .into_iter()
                .map(|(record, event)| ScopeRecord {
                    kind: event.kind().as_str().to_string(),
                    cpu_time_ns: event.cpu_time_ns,
                    roofline: report.scope_point(&record, event),
                    record,
                })
                .collect(),
            memory_commands: report.memory_records(),
        }
    }
}

pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn format(&self) -> Format {
        Format::Json
    }

    fn export(&self, report: &Report, out: &mut dyn Write) -> Result<()> {
        write_json(&JsonReport::new(report), out, "JSON report", true)
    }
}
