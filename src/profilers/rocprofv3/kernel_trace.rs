//! `--kernel-trace`: `<prefix>_kernel_trace.csv`, one row per dispatch, mapped to the shared
//! [`KernelRecord`] with ncu's meanings: grid in work-groups (blocks), the work-item grid kept
//! beside it, VGPRs as registers per thread, LDS as shared memory, the HIP stream as stream.
//!
//! Two header layouts are known, told apart by name: the current one (`Stream_Id`,
//! `LDS_Block_Size`, `Scratch_Size`, `VGPR_Count`, …, `Agent_Id` = `"Agent 4"`) and the 2024 one
//! (`Private_Segment_Size`, `Group_Segment_Size`, numeric `Agent_Id`, no register counts).

use std::borrow::Cow;

use super::table::{Table, agent_label, cell_f64, cell_str, cell_u64, line_of};
use super::{NAME, ParsedPart};
use crate::model::error::{Error, Result};
use crate::model::number::Problem;
use crate::model::record::{KernelRecord, Metric, MetricValue, short_kernel_name};

/// Columns without which a row is no kernel dispatch.
const REQUIRED: &[&str] = &[
    "Kernel_Name",
    "Dispatch_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// Numeric columns whose cells must be numbers a record may hold.
const NUMERIC: &[&str] = &[
    "Dispatch_Id",
    "Start_Timestamp",
    "End_Timestamp",
    "LDS_Block_Size",
    "Group_Segment_Size",
    "Scratch_Size",
    "Private_Segment_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Workgroup_Size_X",
    "Workgroup_Size_Y",
    "Workgroup_Size_Z",
    "Grid_Size_X",
    "Grid_Size_Y",
    "Grid_Size_Z",
];

/// Column indices, found once per file.
pub(crate) struct Columns {
    kind: Option<usize>,
    agent: Option<usize>,
    queue: Option<usize>,
    stream: Option<usize>,
    dispatch: Option<usize>,
    name: Option<usize>,
    start: Option<usize>,
    end: Option<usize>,
    lds: Option<usize>,
    scratch: Option<usize>,
    vgpr: Option<usize>,
    accum_vgpr: Option<usize>,
    sgpr: Option<usize>,
    workgroup: [Option<usize>; 3],
    grid: [Option<usize>; 3],
    /// Passed through as metrics under their own names.
    ids: Vec<(&'static str, Option<usize>)>,
}

impl Columns {
    fn find(table: &Table) -> Columns {
        let one = |name: &str| table.index(&[name]);
        Columns {
            kind: one("Kind"),
            agent: one("Agent_Id"),
            queue: one("Queue_Id"),
            stream: one("Stream_Id"),
            dispatch: one("Dispatch_Id"),
            name: one("Kernel_Name"),
            start: one("Start_Timestamp"),
            end: one("End_Timestamp"),
            lds: table.index(&["LDS_Block_Size", "Group_Segment_Size"]),
            scratch: table.index(&["Scratch_Size", "Private_Segment_Size"]),
            vgpr: one("VGPR_Count"),
            accum_vgpr: one("Accum_VGPR_Count"),
            sgpr: one("SGPR_Count"),
            workgroup: ["Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z"].map(one),
            grid: ["Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"].map(one),
            ids: [
                "Kernel_Id",
                "Correlation_Id",
                "Thread_Id",
                "Queue_Id",
                "Stream_Id",
            ]
            .map(|n| (n, one(n)))
            .to_vec(),
        }
    }
}

/// Parse one kernel trace. `process_id` comes from the file name (`<pid>_kernel_trace.csv`).
pub fn parse(name: &str, bytes: &[u8], process_id: Option<u32>) -> Result<ParsedPart> {
    let table = Table::read(name, bytes);
    let missing = table.missing(REQUIRED);
    if !missing.is_empty() && !table.rows.is_empty() {
        return Err(Error::Parse {
            context: format!("rocprofv3 kernel trace `{name}`"),
            message: format!(
                "the header lacks {}; is this a `--kernel-trace` CSV?",
                missing.join(", ")
            ),
        });
    }
    let columns = Columns::find(&table);
    let mut part = ParsedPart {
        diagnostics: table.warnings.clone(),
        ..Default::default()
    };
    let mut bad = table.bad_numbers(name, NUMERIC);
    for row in &table.rows {
        if cell_str(row, columns.kind).is_some_and(|k| k != "KERNEL_DISPATCH") {
            continue;
        }
        if let Some(record) = record(row, &columns, process_id) {
            if let (Some(start), Some(end)) =
                (cell_u64(row, columns.start), cell_u64(row, columns.end))
                && end < start
            {
                bad.note(
                    line_of(row),
                    "End_Timestamp",
                    &format!("{end} (before Start_Timestamp {start})"),
                    Problem::Negative,
                );
            }
            part.kernels.push(record);
        }
    }
    part.diagnostics.extend(bad.into_diagnostics());
    part.kernels.sort_by_key(|k| k.launch_id);
    Ok(part)
}

fn record(row: &csv::StringRecord, c: &Columns, process_id: Option<u32>) -> Option<KernelRecord> {
    let name = cell_str(row, c.name)?.to_string();
    let start = cell_u64(row, c.start);
    let end = cell_u64(row, c.end);
    let mut record = KernelRecord {
        profiler: NAME.to_string(),
        process_id,
        launch_id: cell_u64(row, c.dispatch)?,
        short_name: short_kernel_name(&name),
        name,
        device: cell_str(row, c.agent).map(agent_label),
        stream: cell_str(row, c.stream)
            .or(cell_str(row, c.queue))
            .map(str::to_string),
        start_ns: start.map(|s| s as f64),
        // End before start is a broken clock pair, not a negative duration.
        duration_ns: start
            .zip(end)
            .and_then(|(s, e)| e.checked_sub(s))
            .map(|d| d as f64),
        ..Default::default()
    };
    let workgroup = c.workgroup.map(|i| cell_u64(row, i));
    let grid = c.grid.map(|i| cell_u64(row, i));
    if let (Some(wg), Some(items)) = (all(workgroup), all(grid)) {
        record.block = Some(wg);
        record.grid = Some(blocks(items, wg));
    }
    for (axis, items) in ["Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
        .iter()
        .zip(grid)
    {
        put(&mut record, axis, items.map(|v| v as f64), "work-item");
    }
    fill_resources(&mut record, row, c);
    if let Some(agent) = cell_str(row, c.agent) {
        record.metrics.insert(
            "Agent_Id".into(),
            Metric {
                value: MetricValue::Text(agent_label(agent)),
                unit: Cow::Borrowed(""),
            },
        );
    }
    for (column, index) in &c.ids {
        put(&mut record, column, cell_f64(row, *index), "");
    }
    Some(record)
}

/// Registers, LDS and scratch: the per-dispatch resources both layouts (partly) carry.
fn fill_resources(record: &mut KernelRecord, row: &csv::StringRecord, c: &Columns) {
    let vgpr = cell_u64(row, c.vgpr);
    let accum = cell_u64(row, c.accum_vgpr);
    // Arch and accumulation VGPRs share one per-lane register file on CDNA, so together they
    // are what a work-item holds (ncu's registers per thread).
    record.registers_per_thread = vgpr
        .map(|v| v + accum.unwrap_or(0))
        .and_then(|v| u32::try_from(v).ok());
    record.shared_mem_per_block = cell_u64(row, c.lds);
    put(record, "VGPR_Count", vgpr.map(|v| v as f64), "register");
    put(
        record,
        "Accum_VGPR_Count",
        accum.map(|v| v as f64),
        "register",
    );
    put(
        record,
        "SGPR_Count",
        cell_u64(row, c.sgpr).map(|v| v as f64),
        "register",
    );
    put(
        record,
        "LDS_Block_Size",
        cell_u64(row, c.lds).map(|v| v as f64),
        "byte",
    );
    put(
        record,
        "Scratch_Size",
        cell_u64(row, c.scratch).map(|v| v as f64),
        "byte",
    );
}

pub(crate) fn put(record: &mut KernelRecord, name: &str, value: Option<f64>, unit: &'static str) {
    if let Some(value) = value {
        record.metrics.insert(
            name.into(),
            Metric {
                value: MetricValue::Number(value),
                unit: Cow::Borrowed(unit),
            },
        );
    }
}

fn all(values: [Option<u64>; 3]) -> Option<[u64; 3]> {
    Some([values[0]?, values[1]?, values[2]?])
}

/// Work-groups per axis: rocprofv3's grid counts work-items, ncu's counts blocks. A partial
/// last work-group still counts as one.
pub(crate) fn blocks(items: [u64; 3], workgroup: [u64; 3]) -> [u64; 3] {
    let mut out = [0; 3];
    for axis in 0..3 {
        out[axis] = match workgroup[axis] {
            0 => items[axis],
            wg => items[axis].div_ceil(wg),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CURRENT: &[u8] = include_bytes!("../../../tests/fixtures/rocprofv3/kernel_trace.csv");
    const OLD: &[u8] = include_bytes!("../../../tests/fixtures/rocprofv3/kernel_trace_2024.csv");
    const SHORT: &[u8] =
        include_bytes!("../../../tests/fixtures/rocprofv3/kernel_trace_truncated.csv");

    #[test]
    fn current_layout_maps_to_ncu_meanings() {
        let part = parse("kernel_trace.csv", CURRENT, Some(834304)).unwrap();
        assert!(part.diagnostics.is_empty(), "{:?}", part.diagnostics);
        assert_eq!(part.kernels.len(), 9);
        let ids: Vec<u64> = part.kernels.iter().map(|k| k.launch_id).collect();
        assert_eq!(ids, [1, 2, 3, 4, 5, 6, 11, 12, 13]);
        let first = &part.kernels[0];
        assert_eq!(
            first.name,
            "void addition_kernel<float>(float*, float const*, float const*, int, int)"
        );
        assert_eq!(first.short_name, "addition_kernel<float>");
        assert_eq!(first.process_id, Some(834304));
        assert_eq!(first.device.as_deref(), Some("Agent 4"));
        assert_eq!(first.stream.as_deref(), Some("1"));
        assert_eq!(first.start_ns, Some(1550151853029637.0));
        assert_eq!(first.duration_ns, Some(12800.0));
        // 1024x1024 work-items in 64x1 work-groups: 16x1024 blocks, as ncu would say.
        assert_eq!(first.block, Some([64, 1, 1]));
        assert_eq!(first.grid, Some([16, 1024, 1]));
        assert_eq!(first.metric("Grid_Size_X"), Some(1024.0));
        assert_eq!(first.metric("Grid_Size_Y"), Some(1024.0));
        assert_eq!(first.registers_per_thread, Some(8));
        assert_eq!(first.shared_mem_per_block, Some(0));
        assert_eq!(first.metric("SGPR_Count"), Some(16.0));
        assert_eq!(first.metric("Kernel_Id"), Some(10.0));
        // divide_kernel uses 12 arch + 4 accumulation VGPRs.
        let divide = part.kernels.iter().find(|k| k.launch_id == 4).unwrap();
        assert_eq!(divide.short_name, "divide_kernel");
        assert_eq!(divide.registers_per_thread, Some(16));
        assert_eq!(divide.metric("Accum_VGPR_Count"), Some(4.0));
        let on_stream_3 = part.kernels.iter().find(|k| k.launch_id == 12).unwrap();
        assert_eq!(on_stream_3.stream.as_deref(), Some("3"));
    }

    #[test]
    fn layout_of_2024_by_header_names() {
        let part = parse("kernel_trace_2024.csv", OLD, None).unwrap();
        assert!(part.diagnostics.is_empty(), "{:?}", part.diagnostics);
        assert_eq!(part.kernels.len(), 7);
        let first = &part.kernels[0];
        assert_eq!(first.launch_id, 1);
        assert_eq!(first.device.as_deref(), Some("Agent 1"));
        // No Stream_Id in this layout: the queue stands in.
        assert_eq!(first.stream.as_deref(), Some("1"));
        assert_eq!(first.duration_ns, Some(48744.0));
        assert_eq!(first.grid, Some([16, 1024, 1]));
        assert_eq!(first.shared_mem_per_block, Some(0));
        assert_eq!(first.metric("Scratch_Size"), Some(0.0));
        assert_eq!(first.registers_per_thread, None);
    }

    #[test]
    fn truncated_names_are_kept_as_printed() {
        let part = parse("t.csv", SHORT, None).unwrap();
        let names: Vec<&str> = part.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "addition_kernel",
                "subtract_kernel",
                "multiply_kernel",
                "divide_kernel"
            ]
        );
    }

    #[test]
    fn a_file_cut_mid_row_keeps_the_whole_rows_and_warns() {
        let cut = &CURRENT[..CURRENT.len() - 60];
        let part = parse("kernel_trace.csv", cut, None).unwrap();
        assert_eq!(part.kernels.len(), 8);
        assert_eq!(part.diagnostics.len(), 1);
        assert_eq!(part.diagnostics[0].kind, super::super::table::TRUNCATED);
    }

    #[test]
    fn a_foreign_csv_is_an_error_naming_the_columns() {
        let err = parse("x.csv", b"\"A\",\"B\"\n1,2\n", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("Kernel_Name"), "{err}");
        assert!(err.contains("--kernel-trace"), "{err}");
    }

    #[test]
    fn blocks_round_partial_work_groups_up() {
        assert_eq!(blocks([1000, 1, 1], [64, 1, 1]), [16, 1, 1]);
        assert_eq!(blocks([1024, 1024, 1], [64, 1, 1]), [16, 1024, 1]);
        assert_eq!(blocks([5, 1, 1], [0, 1, 1]), [5, 1, 1]);
    }
}
