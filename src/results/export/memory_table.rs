//! The table report's "memory commands" section: copies, fills and barriers the profiler
//! reported, one row per kind and name, apart from the kernel table (they are never counted as
//! kernels), with their share of the device time.

use std::collections::BTreeMap;

use comfy_table::{CellAlignment, Table, presets};

use crate::model::record::{KernelRecord, MEMORY_BYTES_METRIC, RecordKind};
use crate::model::run::ProfileRun;
use crate::results::units;

/// One row: every command of one kind and name.
#[derive(Default)]
struct Row {
    calls: u64,
    time_ns: Option<f64>,
    bytes: Option<f64>,
}

fn add(sum: &mut Option<f64>, value: Option<f64>) {
    if let Some(value) = value {
        *sum = Some(sum.unwrap_or(0.0) + value);
    }
}

fn label(kind: RecordKind) -> &'static str {
    match kind {
        RecordKind::Kernel => "kernel",
        RecordKind::MemoryCopy => "copy",
        RecordKind::MemoryFill => "fill",
        RecordKind::Barrier => "barrier",
    }
}

/// The section as text (empty when the run has no memory commands): a summary line with the
/// share of device time (kernels and memory commands together), then the table, largest time
/// first.
pub fn render(run: &ProfileRun) -> String {
    let commands = &run.memory_commands;
    if commands.is_empty() {
        return String::new();
    }
    let mut rows: BTreeMap<(RecordKind, &str), Row> = BTreeMap::new();
    for command in commands {
        let row = rows
            .entry((command.kind, display_name(command)))
            .or_default();
        row.calls += command.calls;
        add(&mut row.time_ns, command.duration_ns);
        add(&mut row.bytes, command.metric(MEMORY_BYTES_METRIC));
    }
    let memory_ns: f64 = commands.iter().filter_map(|c| c.duration_ns).sum();
    let kernel_ns: f64 = run.kernels.iter().filter_map(|k| k.duration_ns).sum();
    let launches: u64 = commands.iter().map(|c| c.calls).sum();
    let device_ns = memory_ns + kernel_ns;
    let share = if device_ns > 0.0 {
        format!(
            " ({} % of device time with the kernels)",
            units::pct(100.0 * memory_ns / device_ns)
        )
    } else {
        String::new()
    };
    let mut text = format!(
        "\nmemory commands  {} records, {launches} commands, GPU time {}{share}\n",
        commands.len(),
        units::time_ns(memory_ns)
    );
    let mut ordered: Vec<_> = rows.into_iter().collect();
    ordered.sort_by(|a, b| {
        b.1.time_ns
            .unwrap_or(0.0)
            .total_cmp(&a.1.time_ns.unwrap_or(0.0))
    });
    let mut table = Table::new();
    table.load_style(presets::UTF8_BORDERS_ONLY);
    table.set_header(["Kind", "Name", "Calls", "GPU total", "Bytes", "GB/s"]);
    for ((kind, name), row) in ordered {
        let gbps = match (row.bytes, row.time_ns) {
            (Some(bytes), Some(ns)) if ns > 0.0 => Some(units::rate(bytes / ns)),
            _ => None,
        };
        table.add_row([
            label(kind).to_string(),
            name.to_string(),
            row.calls.to_string(),
            units::or_dash(row.time_ns.map(units::time_ns)),
            units::or_dash(row.bytes.map(units::bytes)),
            units::or_dash(gbps),
        ]);
    }
    for index in 2..6 {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    text.push_str(&table.to_string());
    text.push('\n');
    text
}

fn display_name(command: &KernelRecord) -> &str {
    if command.short_name.is_empty() {
        &command.name
    } else {
        &command.short_name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(kind: RecordKind, name: &str, ns: f64, bytes: Option<f64>) -> KernelRecord {
        let mut record = KernelRecord {
            kind,
            name: name.into(),
            short_name: name.into(),
            duration_ns: Some(ns),
            ..Default::default()
        };
        if let Some(bytes) = bytes {
            record.metrics.insert(
                MEMORY_BYTES_METRIC.into(),
                crate::model::record::Metric {
                    value: crate::model::record::MetricValue::Number(bytes),
                    unit: "byte".into(),
                },
            );
        }
        record
    }

    #[test]
    fn rows_by_kind_and_name_with_their_share_of_device_time() {
        let mut run = ProfileRun::new("unitrace.000", "unitrace", &[], std::path::Path::new("."));
        assert_eq!(render(&run), "");
        run.kernels.push(KernelRecord {
            duration_ns: Some(1000.0),
            ..Default::default()
        });
        run.memory_commands = vec![
            command(RecordKind::MemoryCopy, "copy(M2D)", 500.0, Some(1000.0)),
            command(RecordKind::MemoryCopy, "copy(M2D)", 500.0, Some(1000.0)),
            command(RecordKind::Barrier, "barrier", 1500.0, None),
        ];
        let text = render(&run);
        assert!(
            text.contains("3 records, 3 commands, GPU time 2.500 us (71.4 % of device time"),
            "{text}"
        );
        let copy = text.lines().find(|l| l.contains("copy(M2D)")).unwrap();
        assert!(copy.contains("2.000 kB") && copy.contains("2.00"), "{copy}");
        let barrier = text.find("barrier").unwrap();
        assert!(
            barrier < text.find("copy(M2D)").unwrap(),
            "largest time first: {text}"
        );
    }
}
