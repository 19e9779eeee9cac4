//! `--pmc`: `<prefix>_counter_collection.csv`, one row per (dispatch, counter). Rows of one
//! dispatch fold into one record; FLOPs and DRAM bytes are derived from the counters that
//! give them.
//!
//! Two layouts, told apart by the header: the 2024 one (no `Accum_VGPR_Count`, no timestamps,
//! numeric `Agent_Id`, integer values) and the current one (`Accum_VGPR_Count`,
//! `Start_Timestamp`/`End_Timestamp`, `"Agent 1"`, values like `16384.000000`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::kernel_trace::put;
use super::table::{Table, agent_label, cell_f64, cell_str, cell_u64};
use super::{NAME, ParsedPart};
use crate::model::error::{Error, Result};
use crate::model::record::{KernelRecord, Metric, MetricValue, short_kernel_name};

/// Which header layout a counter file has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// rocprofiler-sdk as of late 2024: no accumulation VGPRs, no timestamps.
    Sdk2024,
    /// Current releases: `Accum_VGPR_Count` and per-dispatch timestamps.
    Current,
}

impl Layout {
    fn of(table: &Table) -> Layout {
        if table.has("Accum_VGPR_Count") || table.has("Start_Timestamp") {
            Layout::Current
        } else {
            Layout::Sdk2024
        }
    }
}

const REQUIRED: &[&str] = &[
    "Dispatch_Id",
    "Kernel_Name",
    "Counter_Name",
    "Counter_Value",
];

/// Derived counters that rocprofv3 reports in kilobytes (`counter_defs.yaml`: "The total
/// kilobytes fetched from / written to the video memory"); records hold bytes.
const KILOBYTE_COUNTERS: &[&str] = &["FETCH_SIZE", "WRITE_SIZE"];

/// The file's layout and its dispatches, one record each, counters in `metrics`.
pub fn parse(name: &str, bytes: &[u8]) -> Result<(Layout, ParsedPart)> {
    let table = Table::read(name, bytes);
    let missing = table.missing(REQUIRED);
    if !missing.is_empty() && !table.rows.is_empty() {
        return Err(Error::Parse {
            context: format!("rocprofv3 counter collection `{name}`"),
            message: format!(
                "the header lacks {}; is this a `--pmc` counter_collection CSV?",
                missing.join(", ")
            ),
        });
    }
    let layout = Layout::of(&table);
    let one = |n: &str| table.index(&[n]);
    let c = Columns {
        dispatch: one("Dispatch_Id"),
        process: one("Process_Id"),
        agent: one("Agent_Id"),
        queue: one("Queue_Id"),
        name: one("Kernel_Name"),
        grid: one("Grid_Size"),
        workgroup: one("Workgroup_Size"),
        lds: one("LDS_Block_Size"),
        scratch: one("Scratch_Size"),
        vgpr: one("VGPR_Count"),
        accum: one("Accum_VGPR_Count"),
        sgpr: one("SGPR_Count"),
        counter: one("Counter_Name"),
        value: one("Counter_Value"),
        start: one("Start_Timestamp"),
        end: one("End_Timestamp"),
        kernel_id: one("Kernel_Id"),
        correlation: one("Correlation_Id"),
    };
    let mut part = ParsedPart {
        diagnostics: table.warnings.clone(),
        ..Default::default()
    };
    let bad = table.bad_numbers(
        name,
        &[
            "Dispatch_Id",
            "Counter_Value",
            "Start_Timestamp",
            "End_Timestamp",
        ],
    );
    part.diagnostics.extend(bad.into_diagnostics());
    // Keyed by (process, dispatch): each dispatch has one row per counter.
    let mut dispatches: BTreeMap<(Option<u32>, u64), KernelRecord> = BTreeMap::new();
    for row in &table.rows {
        let (Some(dispatch), Some(counter), Some(value)) = (
            cell_u64(row, c.dispatch),
            cell_str(row, c.counter),
            cell_f64(row, c.value),
        ) else {
            continue;
        };
        let process = cell_u64(row, c.process).and_then(|p| u32::try_from(p).ok());
        let record = dispatches
            .entry((process, dispatch))
            .or_insert_with(|| describe(row, &c, process, dispatch));
        let (value, unit) = if KILOBYTE_COUNTERS.contains(&counter) {
            (value * 1024.0, "byte")
        } else {
            (value, "")
        };
        record.metrics.insert(
            counter.into(),
            Metric {
                value: MetricValue::Number(value),
                unit: Cow::Borrowed(unit),
            },
        );
    }
    part.counter_records = dispatches.into_values().collect();
    for record in &mut part.counter_records {
        derive(record);
    }
    Ok((layout, part))
}

struct Columns {
    dispatch: Option<usize>,
    process: Option<usize>,
    agent: Option<usize>,
    queue: Option<usize>,
    name: Option<usize>,
    grid: Option<usize>,
    workgroup: Option<usize>,
    lds: Option<usize>,
    scratch: Option<usize>,
    vgpr: Option<usize>,
    accum: Option<usize>,
    sgpr: Option<usize>,
    counter: Option<usize>,
    value: Option<usize>,
    start: Option<usize>,
    end: Option<usize>,
    kernel_id: Option<usize>,
    correlation: Option<usize>,
}

/// The dispatch's own facts, from the first of its rows.
fn describe(
    row: &csv::StringRecord,
    c: &Columns,
    process_id: Option<u32>,
    dispatch: u64,
) -> KernelRecord {
    let name = cell_str(row, c.name).unwrap_or_default().to_string();
    let start = cell_u64(row, c.start);
    let mut record = KernelRecord {
        profiler: NAME.to_string(),
        process_id,
        launch_id: dispatch,
        short_name: short_kernel_name(&name),
        name,
        device: cell_str(row, c.agent).map(agent_label),
        stream: cell_str(row, c.queue).map(str::to_string),
        start_ns: start.map(|s| s as f64),
        duration_ns: start
            .zip(cell_u64(row, c.end))
            .and_then(|(s, e)| e.checked_sub(s))
            .map(|d| d as f64),
        ..Default::default()
    };
    // This file flattens the grid and work-group to totals; keep them 1-D.
    let items = cell_u64(row, c.grid);
    let workgroup = cell_u64(row, c.workgroup);
    if let (Some(items), Some(wg)) = (items, workgroup) {
        record.block = Some([wg, 1, 1]);
        record.grid = Some([if wg == 0 { items } else { items.div_ceil(wg) }, 1, 1]);
    }
    put(
        &mut record,
        "Grid_Size",
        items.map(|v| v as f64),
        "work-item",
    );
    let vgpr = cell_u64(row, c.vgpr);
    let accum = cell_u64(row, c.accum);
    record.registers_per_thread = vgpr
        .map(|v| v + accum.unwrap_or(0))
        .and_then(|v| u32::try_from(v).ok());
    record.shared_mem_per_block = cell_u64(row, c.lds);
    let facts = [
        ("VGPR_Count", vgpr, "register"),
        ("Accum_VGPR_Count", accum, "register"),
        ("SGPR_Count", cell_u64(row, c.sgpr), "register"),
        ("LDS_Block_Size", cell_u64(row, c.lds), "byte"),
        ("Scratch_Size", cell_u64(row, c.scratch), "byte"),
        ("Kernel_Id", cell_u64(row, c.kernel_id), ""),
        ("Correlation_Id", cell_u64(row, c.correlation), ""),
    ];
    for (name, value, unit) in facts {
        put(&mut record, name, value.map(|v| v as f64), unit);
    }
    record
}

/// FLOPs per precision and DRAM bytes from the counters present, as rocprof-compute's roofline
/// counts them (`analysis_configs/gfx942/0400_roofline.yaml`): each VALU instruction does 64
/// lanes of work (an FMA two operations), each MFMA "MOPS" unit is 512 operations. The BF16
/// matrix count goes with FP16 (both 16-bit). Only CDNA (gfx90a, gfx94x) has these counters.
pub fn derive(record: &mut KernelRecord) {
    let get = |name: &str| record.metric(name);
    let precision = |suffix: &str, matrix: &[&str]| -> Option<f64> {
        let vector = [("ADD", 1.0), ("MUL", 1.0), ("TRANS", 1.0), ("FMA", 2.0)]
            .map(|(op, weight)| get(&format!("SQ_INSTS_VALU_{op}_{suffix}")).map(|v| v * weight));
        let mfma = matrix
            .iter()
            .map(|m| get(&format!("SQ_INSTS_VALU_MFMA_MOPS_{m}")));
        let mut any = false;
        let mut total = 0.0;
        for (value, scale) in vector
            .into_iter()
            .map(|v| (v, 64.0))
            .chain(mfma.map(|v| (v, 512.0)))
        {
            if let Some(value) = value {
                any = true;
                total += value * scale;
            }
        }
        any.then_some(total)
    };
    let fp16 = precision("F16", &["F16", "BF16"]);
    let fp32 = precision("F32", &["F32"]);
    let fp64 = precision("F64", &["F64"]);
    let read = get("FETCH_SIZE");
    let write = get("WRITE_SIZE");
    record.flops.fp16 = fp16.or(record.flops.fp16);
    record.flops.fp32 = fp32.or(record.flops.fp32);
    record.flops.fp64 = fp64.or(record.flops.fp64);
    record.dram_bytes_read = read.or(record.dram_bytes_read);
    record.dram_bytes_write = write.or(record.dram_bytes_write);
    if let (Some(r), Some(w)) = (record.dram_bytes_read, record.dram_bytes_write) {
        record.dram_bytes = Some(r + w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_layout() {
        let bytes = include_bytes!("../../../tests/fixtures/rocprofv3/counter_collection.csv");
        let (layout, part) = parse("counter_collection.csv", bytes).unwrap();
        assert_eq!(layout, Layout::Current);
        assert!(part.diagnostics.is_empty());
        assert_eq!(part.counter_records.len(), 4);
        let add = &part.counter_records[0];
        assert_eq!(add.launch_id, 1);
        assert_eq!(add.process_id, Some(15606));
        assert_eq!(add.short_name, "addition_kernel<float>");
        assert_eq!(add.device.as_deref(), Some("Agent 1"));
        assert_eq!(add.metric("SQ_WAVES"), Some(16384.0));
        assert_eq!(
            add.duration_ns,
            Some(3200098838483232.0 - 3200098838431081.0)
        );
        // 1048576 work-items in work-groups of 64.
        assert_eq!(add.grid, Some([16384, 1, 1]));
        assert_eq!(add.block, Some([64, 1, 1]));
        assert_eq!(add.metric("Grid_Size"), Some(1048576.0));
        assert_eq!(add.registers_per_thread, Some(8));
        assert_eq!(add.total_flops(), None);
    }

    #[test]
    fn layout_of_2024() {
        let bytes = include_bytes!("../../../tests/fixtures/rocprofv3/counter_collection_2024.csv");
        let (layout, part) = parse("counter_collection_2024.csv", bytes).unwrap();
        assert_eq!(layout, Layout::Sdk2024);
        assert_eq!(part.counter_records.len(), 7);
        let ids: Vec<u64> = part.counter_records.iter().map(|r| r.launch_id).collect();
        assert_eq!(ids, [1, 2, 3, 5, 6, 9, 13]);
        let first = &part.counter_records[0];
        assert_eq!(first.device.as_deref(), Some("Agent 1"));
        assert_eq!(first.duration_ns, None);
        assert_eq!(first.metric("SQ_WAVES"), Some(16384.0));
        assert_eq!(first.metric("Kernel_Id"), Some(16.0));
    }

    #[test]
    fn roofline_counters_give_flops_and_bytes() {
        let bytes = include_bytes!(
            "../../../tests/fixtures/rocprofv3/counter_collection_roofline_synthetic.csv"
        );
        let (_, part) = parse("synthetic.csv", bytes).unwrap();
        let add = &part.counter_records[0];
        // 64 lanes x (ADD 16384 + 2 x FMA 0): one add per element of a 1M-element vector.
        assert_eq!(add.flops.fp32, Some(64.0 * 16384.0));
        assert_eq!(add.flops.fp64, None);
        // FETCH_SIZE 8192 KB, WRITE_SIZE 4096 KB.
        assert_eq!(add.dram_bytes_read, Some(8192.0 * 1024.0));
        assert_eq!(add.dram_bytes_write, Some(4096.0 * 1024.0));
        assert_eq!(add.dram_bytes, Some(12288.0 * 1024.0));
        assert_eq!(add.metrics["FETCH_SIZE"].unit, "byte");
        let mm = &part.counter_records[1];
        // 2 x 64 x FMA 1000 + 512 x MFMA 10 (fp32); 512 x (F16 3 + BF16 1).
        assert_eq!(mm.flops.fp32, Some(2.0 * 64.0 * 1000.0 + 512.0 * 10.0));
        assert_eq!(mm.flops.fp16, Some(512.0 * 4.0));
    }
}
