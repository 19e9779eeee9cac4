//! CSV report: one row per normalized record, then one per user scope (a session's scopes, or
//! those a workload recorded during the run), the fixed columns of [`COLUMNS`] (documented in
//! docs/reports.md); the record's normalized numbers come through `model::fields`. Missing
//! values are empty cells; numbers are in base units (ns, bytes, FLOPs). Memory commands follow
//! the kernels, told apart by the `kind` column.

use std::io::Write;

use crate::model::error::{Error, Result};
use crate::model::fields::normalized_field;
use crate::results::export::{Exporter, Format, Report};
use crate::results::roofline::evaluate_run_record;

/// The header, in order. Never reordered; new columns are appended.
pub const COLUMNS: &[&str] = &[
    "run",
    "profiler",
    "device",
    "process_id",
    "process_name",
    "launch_id",
    "kernel",
    "short_name",
    "stream",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "calls",
    "start_ns",
    "duration_ns",
    "dram_bytes_read",
    "dram_bytes_write",
    "dram_bytes",
    "flops_fp16",
    "flops_fp32",
    "flops_fp64",
    "flops_total",
    "gflops_per_s",
    "dram_gb_per_s",
    "arithmetic_intensity",
    "pct_peak_bandwidth",
    "pct_peak_compute",
    "bound",
    "achieved_occupancy_pct",
    "theoretical_occupancy_pct",
    "sm_throughput_pct",
    "memory_throughput_pct",
    "registers_per_thread",
    "shared_mem_per_block",
    "call_path",
    "flops_tensor_fp16",
    "flops_tensor_bf16",
    "flops_tensor_tf32",
    "flops_tensor_fp8",
    "ops_tensor_int8",
    "flops_tensor_fp64",
    "flops_fp16_hfma2_mma",
    "limiter",
    "precision",
    "sm_clock_ghz",
    "dram_clock_ghz",
    "clock_state",
    "verdict_inputs",
    "kind",
    "cpu_time_ns",
    "above_peak",
    "ranges",
    "process_ranges",
    "thread_id",
    "decided_by",
];

/// Joins a record's ranges in one cell, outermost first (range names hold `/`, so not ` / `).
pub const RANGE_SEPARATOR: &str = " > ";

pub struct CsvExporter;

fn opt<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

fn dims(value: Option<[u64; 3]>) -> [String; 3] {
    match value {
        Some([x, y, z]) => [x.to_string(), y.to_string(), z.to_string()],
        None => Default::default(),
    }
}

/// The snake_case name serde gives a unit enum variant (`tensor_pipe`), as in the JSON report.
fn serde_label<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        _ => String::new(),
    }
}

impl Exporter for CsvExporter {
    fn format(&self) -> Format {
        Format::Csv
    }

    fn export(&self, report: &Report, out: &mut dyn Write) -> Result<()> {
        let csv_error = |e: csv::Error| Error::invalid("CSV report", e.to_string());
        let mut writer = csv::Writer::from_writer(out);
        writer.write_record(COLUMNS).map_err(csv_error)?;
        let label = report
            .run
            .as_ref()
            .map(|r| r.label.clone())
            .unwrap_or_else(|| report.profile.name.clone());
        let run_device = report.device_name().map(str::to_string);
        // Kernels, then memory commands, then scopes (`kind` tells them apart).
        let records = report.records().into_iter().chain(report.memory_records());
        let kernels = records.map(|record| {
            let point = evaluate_run_record(report.peaks.as_ref(), report.run.as_ref(), &record);
            let kind = record.kind.as_str().to_string();
            (record, point, kind, None)
        });
        let scopes = report.scope_records().into_iter().map(|(record, event)| {
            let point = report.scope_point(&record, event);
            (
                record,
                point,
                event.kind().as_str().to_string(),
                event.cpu_time_ns,
            )
        });
        for (record, point, kind, cpu_time_ns) in kernels.chain(scopes) {
            let [grid_x, grid_y, grid_z] = dims(record.grid);
            let [block_x, block_y, block_z] = dims(record.block);
            let cell = |column: &str| -> String {
                // The record's normalized numbers come from the one table of them.
                if let Some(field) = normalized_field(column) {
                    return opt((field.get)(&record));
                }
                match column {
                    "run" => label.clone(),
                    "profiler" => record.profiler.clone(),
                    "device" => run_device
                        .clone()
                        .or(record.device.clone())
                        .unwrap_or_default(),
                    "process_id" => opt(record.process_id),
                    "process_name" => record.process_name.clone().unwrap_or_default(),
                    "launch_id" => record.launch_id.to_string(),
                    "kernel" => record.name.clone(),
                    "short_name" => record.short_name.clone(),
                    "stream" => record.stream.clone().unwrap_or_default(),
                    "grid_x" => grid_x.clone(),
                    "grid_y" => grid_y.clone(),
                    "grid_z" => grid_z.clone(),
                    "block_x" => block_x.clone(),
                    "block_y" => block_y.clone(),
                    "block_z" => block_z.clone(),
                    "calls" => record.calls.to_string(),
                    "flops_fp16" => opt(record.flops.fp16),
                    "flops_fp32" => opt(record.flops.fp32),
                    "flops_fp64" => opt(record.flops.fp64),
                    "flops_total" => opt(record.total_flops()),
                    "gflops_per_s" => opt(point.gflops_per_s),
                    "dram_gb_per_s" => opt(point.gb_per_s),
                    "arithmetic_intensity" => opt(point.arithmetic_intensity),
                    "pct_peak_bandwidth" => opt(point.pct_peak_bandwidth),
                    "pct_peak_compute" => opt(point.pct_peak_compute),
                    "bound" => point.bound.to_string(),
                    "call_path" => record.call_path.join(" / "),
                    "flops_tensor_fp16" => opt(record.flops.tensor_fp16),
                    "flops_tensor_bf16" => opt(record.flops.tensor_bf16),
                    "flops_tensor_tf32" => opt(record.flops.tensor_tf32),
                    "flops_tensor_fp8" => opt(record.flops.tensor_fp8),
                    "ops_tensor_int8" => opt(record.flops.tensor_int8),
                    "flops_tensor_fp64" => opt(record.flops.tensor_fp64),
                    "flops_fp16_hfma2_mma" => opt(record.flops.fp16_hfma2_mma),
                    "limiter" => serde_label(&point.limiter),
                    "precision" => point.precision.map(|p| serde_label(&p)).unwrap_or_default(),
                    "sm_clock_ghz" => opt(point.sm_clock_ghz),
                    "dram_clock_ghz" => opt(point.dram_clock_ghz),
                    "clock_state" => point
                        .clock_state
                        .map(|c| serde_label(&c))
                        .unwrap_or_default(),
                    "verdict_inputs" => point.inputs.names().join(" "),
                    "kind" => kind.clone(),
                    "cpu_time_ns" => opt(cpu_time_ns),
                    "above_peak" => point
                        .above_peak
                        .map(|a| serde_label(&a))
                        .unwrap_or_default(),
                    "ranges" => record.ranges.join(RANGE_SEPARATOR),
                    "process_ranges" => record.process_ranges.join(RANGE_SEPARATOR),
                    "thread_id" => opt(record.thread_id),
                    "decided_by" => point.decided_by.text(),
                    // Every column is named above or in the table (a test checks).
                    _ => String::new(),
                }
            };
            let row: Vec<String> = COLUMNS.iter().map(|column| cell(column)).collect();
            debug_assert_eq!(row.len(), COLUMNS.len());
            writer.write_record(&row).map_err(csv_error)?;
        }
        writer
            .flush()
            .map_err(|e| Error::io("write", "CSV report", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fields::NORMALIZED_FIELDS;

    #[test]
    fn every_normalized_field_is_a_column() {
        for field in NORMALIZED_FIELDS {
            assert!(COLUMNS.contains(&field.name), "{}", field.name);
        }
    }
}
