//! `--memory-copy-trace`: `<prefix>_memory_copy_trace.csv`, one row per copy. Copies are not
//! kernels, so they stay out of the kernel list; the run carries their totals per direction.

use serde::{Deserialize, Serialize};

use super::ParsedPart;
use super::table::{Table, agent_label, cell_str, cell_u64};
use crate::model::error::{Error, Result};

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
}

const REQUIRED: &[&str] = &["Direction", "Start_Timestamp", "End_Timestamp"];

/// Parse one memory-copy trace (current and 2024 layouts: the latter has no `Stream_Id` and
/// numeric agents).
pub fn parse(name: &str, bytes: &[u8]) -> Result<ParsedPart> {
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
    let mut part = ParsedPart {
        diagnostics: table.warnings.clone(),
        ..Default::default()
    };
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
        });
    }
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_layout() {
        let bytes = include_bytes!("../../../tests/fixtures/rocprofv3/memory_copy_trace.csv");
        let part = parse("memory_copy_trace.csv", bytes).unwrap();
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
        let part = parse("memory_copy_trace_2024.csv", bytes).unwrap();
        // No newline after the last row, as in the SDK's file.
        assert_eq!(part.copies.len(), 2);
        let copy = &part.copies[0];
        assert_eq!(copy.destination_agent.as_deref(), Some("Agent 1"));
        assert_eq!(copy.stream, None);
        assert_eq!(copy.duration_ns, 14955950239443 - 14955949675563);
    }
}
