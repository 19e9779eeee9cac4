//! `--memory-copy-trace`: `<prefix>_memory_copy_trace.csv`, one row per copy. Copies are not
//! kernels: they become memory-command records (kind `memory_copy`), apart from the kernel
//! list, and the run carries their totals per direction.

use serde::{Deserialize, Serialize};

use std::borrow::Cow;

use super::kernel_trace::put;
use super::table::{Table, agent_label, cell_str, cell_u64, line_of};
use super::{NAME, ParsedPart};
use crate::model::error::{Error, Result};
use crate::model::number::Problem;
use crate::model::record::{KernelRecord, MEMORY_BYTES_METRIC, Metric, MetricValue, RecordKind};

/// One memory copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryCopy {
    /// `MEMORY_COPY_HOST_TO_DEVICE`, `MEMORY_COPY_DEVICE_TO_HOST`, …
    pub direction: String,
    pub source_agent: Option<String>,
    pub destination_agent: Option<String>,
    /// Absent in the 2024 layout.
    pub stream: Option<String>,
    pub correlation_id: Option<u64>,
    pub start_ns: u64,
    pub duration_ns: u64,
    /// From the file name (`<pid>_memory_copy_trace.csv`).
    pub process_id: Option<u32>,
    /// `Bytes`, where the release writes it.
    pub bytes: Option<u64>,
}

impl MemoryCopy {
    /// The copy as a memory-command record: one launch, named by its direction, on its device
    /// agent (the destination, or the source of a copy to the host).
    pub fn to_record(&self, launch_id: u64) -> KernelRecord {
        let mut record = KernelRecord {
            profiler: NAME.to_string(),
            kind: RecordKind::MemoryCopy,
            process_id: self.process_id,
            launch_id: self.correlation_id.unwrap_or(launch_id),
            name: self.direction.clone(),
            short_name: self.direction.clone(),
            // The GPU end of the copy: its lane in a trace, its device in a report.
            device: if self.direction.contains("DEVICE_TO_HOST") {
                self.source_agent.clone()
            } else {
                self.destination_agent.clone()
            },
            stream: self.stream.clone(),
            start_ns: Some(self.start_ns as f64),
            duration_ns: Some(self.duration_ns as f64),
            ..Default::default()
        };
        put(
            &mut record,
            MEMORY_BYTES_METRIC,
            self.bytes.map(|b| b as f64),
            "byte",
        );
        if let Some(source) = &self.source_agent {
            record.metrics.insert(
                "Source_Agent_Id".into(),
                Metric {
                    value: MetricValue::Text(source.clone()),
                    unit: Cow::Borrowed(""),
                },
            );
        }
        record
    }
}

const REQUIRED: &[&str] = &["Direction", "Start_Timestamp", "End_Timestamp"];

/// Parse one memory-copy trace (current and 2024 layouts: the latter has no `Stream_Id` and
/// numeric agents).
pub fn parse(name: &str, bytes: &[u8], process_id: Option<u32>) -> Result<ParsedPart> {
    let table = Table::read(name, bytes);
    let missing = table.missing(REQUIRED);
    if !missing.is_empty() && !table.rows.is_empty() {
        return Err(Error::Parse {
            context: format!("rocprofv3 memory-copy trace `{name}`"),
            message: format!(
                "the header lacks {}; is this a `--memory-copy-trace` CSV?",
                missing.join(", ")
            ),
        });
    }
    let one = |n: &str| table.index(&[n]);
    let (direction, start, end) = (
        one("Direction"),
        one("Start_Timestamp"),
        one("End_Timestamp"),
    );
    let (source, destination) = (one("Source_Agent_Id"), one("Destination_Agent_Id"));
    let (stream, correlation) = (one("Stream_Id"), one("Correlation_Id"));
    let size = table.index(&["Bytes", "Size"]);
    let mut part = ParsedPart {
        diagnostics: table.warnings.clone(),
        ..Default::default()
    };
    let mut bad = table.bad_numbers(
        name,
        &[
            "Start_Timestamp",
            "End_Timestamp",
            "Correlation_Id",
            "Bytes",
            "Size",
        ],
    );
    for row in &table.rows {
        let (Some(direction), Some(start_ns), Some(end_ns)) = (
            cell_str(row, direction),
            cell_u64(row, start),
            cell_u64(row, end),
        ) else {
            continue;
        };
        part.copies.push(MemoryCopy {
            direction: direction.to_string(),
            source_agent: cell_str(row, source).map(agent_label),
            destination_agent: cell_str(row, destination).map(agent_label),
            stream: cell_str(row, stream).map(str::to_string),
            correlation_id: cell_u64(row, correlation),
            start_ns,
            duration_ns: end_ns.saturating_sub(start_ns),
            process_id,
            bytes: cell_u64(row, size),
        });
        if end_ns < start_ns {
            bad.note(
                line_of(row),
                "End_Timestamp",
                &format!("{end_ns} (before Start_Timestamp {start_ns})"),
                Problem::Negative,
            );
        }
    }
    part.diagnostics.extend(bad.into_diagnostics());
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_layout() {
        let bytes = include_bytes!("../../../tests/fixtures/rocprofv3/memory_copy_trace.csv");
        let part = parse("memory_copy_trace.csv", bytes, None).unwrap();
        assert!(part.diagnostics.is_empty());
        assert_eq!(part.copies.len(), 4);
        let first = &part.copies[0];
        assert_eq!(first.direction, "MEMORY_COPY_HOST_TO_DEVICE");
        assert_eq!(first.source_agent.as_deref(), Some("Agent 0"));
        assert_eq!(first.destination_agent.as_deref(), Some("Agent 4"));
        assert_eq!(first.stream.as_deref(), Some("0"));
        assert_eq!(first.duration_ns, 1057963336564212 - 1057963336487172);
        assert_eq!(part.copies[3].direction, "MEMORY_COPY_DEVICE_TO_HOST");
        assert_eq!(part.copies[3].correlation_id, Some(24));
    }

    #[test]
    fn layout_of_2024() {
        let bytes = include_bytes!("../../../tests/fixtures/rocprofv3/memory_copy_trace_2024.csv");
        let part = parse("memory_copy_trace_2024.csv", bytes, None).unwrap();
        // No newline after the last row, as in the SDK's file.
        assert_eq!(part.copies.len(), 2);
        let copy = &part.copies[0];
        assert_eq!(copy.destination_agent.as_deref(), Some("Agent 1"));
        assert_eq!(copy.stream, None);
        assert_eq!(copy.duration_ns, 14955950239443 - 14955949675563);
    }
}
