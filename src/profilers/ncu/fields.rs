//! The identity columns every ncu CSV page starts with, and the metrics that fill the normalized
//! record's fields.

use std::borrow::Cow;

use super::options::{
    ACHIEVED_OCCUPANCY, ALU_PIPE, BLOCK_SIZE, DRAM_READ, DRAM_SOL, DRAM_TOTAL, DRAM_WRITE,
    DURATION, FMA_PIPE, FP16_OPS, FP32_OPS, FP64_OPS, GRID_SIZE, HFMA2_MMA_INST, ISSUE_ACTIVE,
    LSU_PIPE, MEMORY_SOL, REGISTERS, SHARED_DYNAMIC, SHARED_STATIC, SM_SOL, TENSOR_OPS,
    TENSOR_PIPE, THEORETICAL_OCCUPANCY,
};
use super::row::Cells;
use crate::model::record::{KernelRecord, short_kernel_name};

/// The first 11 columns of the raw and details pages.
pub const IDENTITY_COLUMNS: [&str; 11] = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
];

/// Positions of the identity columns in a header (any may be missing in odd exports).
#[derive(Debug, Clone, Default)]
pub struct IdentityIndex {
    pub id: Option<usize>,
    pub pid: Option<usize>,
    pub process_name: Option<usize>,
    pub kernel_name: Option<usize>,
    pub stream: Option<usize>,
    pub block: Option<usize>,
    pub grid: Option<usize>,
    pub device: Option<usize>,
    pub cc: Option<usize>,
    /// The NVTX columns (`--nvtx`), between `Host Name` and `Kernel Name`.
    pub push_pop_ranges: Option<usize>,
    pub start_end_ranges: Option<usize>,
}

impl IdentityIndex {
    pub fn from_header(header: &[String]) -> Self {
        let find = |name: &str| header.iter().position(|h| h == name);
        IdentityIndex {
            id: find("ID"),
            pid: find("Process ID"),
            process_name: find("Process Name"),
            kernel_name: find("Kernel Name"),
            stream: find("Stream"),
            block: find("Block Size"),
            grid: find("Grid Size"),
            device: find("Device"),
            cc: find("CC"),
            push_pop_ranges: header
                .iter()
                .position(|h| h.starts_with(super::nvtx::PUSH_POP_COLUMN)),
            start_end_ranges: header
                .iter()
                .position(|h| h.starts_with(super::nvtx::START_END_COLUMN)),
        }
    }

    /// A record with the identity filled from one CSV row.
    pub fn record<R: Cells + ?Sized>(&self, row: &R) -> KernelRecord {
        let get = |index: Option<usize>| cell(row, index);
        let name = super::names::printed_name(&get(self.kernel_name).unwrap_or_default());
        KernelRecord {
            profiler: "ncu".to_string(),
            process_id: get(self.pid).and_then(|v| v.parse().ok()),
            process_name: non_empty(get(self.process_name)),
            launch_id: get(self.id).and_then(|v| parse_u64(&v)).unwrap_or(0),
            short_name: short_kernel_name(&name),
            name,
            device: non_empty(get(self.device)),
            stream: non_empty(get(self.stream)),
            grid: get(self.grid).and_then(|v| parse_dim3(&v)),
            block: get(self.block).and_then(|v| parse_dim3(&v)),
            calls: 1,
            thread_id: get(self.push_pop_ranges)
                .and_then(|cell| super::nvtx::launching_thread(&cell)),
            ranges: get(self.push_pop_ranges)
                .map(|cell| super::nvtx::push_pop_ranges(&cell))
                .unwrap_or_default(),
            process_ranges: get(self.start_end_ranges)
                .map(|cell| super::nvtx::start_end_ranges(&cell))
                .unwrap_or_default(),
            ..Default::default()
        }
    }

    /// `(process id, launch id)`: unique within one run.
    pub fn key<R: Cells + ?Sized>(&self, row: &R) -> (Option<u32>, u64) {
        (
            cell(row, self.pid).and_then(|v| v.parse().ok()),
            cell(row, self.id).and_then(|v| parse_u64(&v)).unwrap_or(0),
        )
    }
}

/// One cell as trimmed text (invalid UTF-8 replaced, never dropped).
pub fn cell<R: Cells + ?Sized>(row: &R, index: Option<usize>) -> Option<Cow<'_, str>> {
    let bytes = row.cell_bytes(index?)?;
    Some(match String::from_utf8_lossy(bytes) {
        Cow::Borrowed(text) => Cow::Borrowed(text.trim()),
        Cow::Owned(text) => Cow::Owned(text.trim().to_string()),
    })
}

fn non_empty(text: Option<Cow<'_, str>>) -> Option<String> {
    text.filter(|t| !t.is_empty()).map(Cow::into_owned)
}

fn parse_u64(text: &str) -> Option<u64> {
    super::units::parse_number(text)
        .filter(|v| *v >= 0.0 && v.fract() == 0.0 && *v <= u64::MAX as f64)
        .map(|v| v as u64)
}

/// `(256, 1, 1)` → `[256, 1, 1]`. A zero dimension is no launch configuration: ncu prints
/// `(0, 0, 0)` for a launch that faulted before it could read it, so that reads as unknown.
pub fn parse_dim3(text: &str) -> Option<[u64; 3]> {
    let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
    let mut parts = inner.split(',').map(|p| p.trim().parse::<u64>().ok());
    let dims = [parts.next()??, parts.next()??, parts.next()??];
    (parts.next().is_none() && dims.iter().all(|d| *d > 0)).then_some(dims)
}

/// Which record field a metric feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Duration,
    DramRead,
    DramWrite,
    DramTotal,
    AchievedOccupancy,
    TheoreticalOccupancy,
    SmSol,
    /// One of the pipe loads that stand in for the SM speed of light (their maximum).
    PipeLoad,
    MemorySol,
    /// DRAM-only memory SOL: used when the full memory SOL is absent.
    DramSol,
    Registers,
    SharedMem,
    /// Precision index (0 fp16, 1 fp32, 2 fp64) and FLOPs per instruction.
    Flops(u8, u8),
    /// Tensor-core op count, by index into [`TENSOR_OPS`].
    TensorFlops(u8),
    /// `HFMA2.MMA` warp instructions (phantom FP16 work, labelled in the record).
    Hfma2Mma,
    GridSize,
    BlockSize,
}

/// The field a raw metric name (base units) feeds, if any.
pub fn field_for_metric(name: &str) -> Option<Field> {
    Some(match name {
        DURATION => Field::Duration,
        DRAM_READ => Field::DramRead,
        DRAM_WRITE => Field::DramWrite,
        DRAM_TOTAL => Field::DramTotal,
        ACHIEVED_OCCUPANCY => Field::AchievedOccupancy,
        THEORETICAL_OCCUPANCY => Field::TheoreticalOccupancy,
        SM_SOL => Field::SmSol,
        TENSOR_PIPE | FMA_PIPE | ALU_PIPE | LSU_PIPE | ISSUE_ACTIVE => Field::PipeLoad,
        MEMORY_SOL => Field::MemorySol,
        DRAM_SOL => Field::DramSol,
        REGISTERS => Field::Registers,
        SHARED_STATIC | SHARED_DYNAMIC => Field::SharedMem,
        GRID_SIZE => Field::GridSize,
        BLOCK_SIZE => Field::BlockSize,
        HFMA2_MMA_INST => Field::Hfma2Mma,
        _ => {
            if let Some(index) = TENSOR_OPS.iter().position(|o| *o == name) {
                return Some(Field::TensorFlops(index as u8));
            }
            for (precision, ops) in [FP16_OPS, FP32_OPS, FP64_OPS].iter().enumerate() {
                if let Some(op) = ops.iter().position(|o| *o == name) {
                    // An FMA is 2 FLOPs; every SASS FP16 instruction is packed (HADD2, HMUL2,
                    // HFMA2: two halves), so it counts twice again. A scalar half op leaves one
                    // half idle: FP16 FLOPs are the packed capacity, as the FP16 peak is.
                    let fma = if op == 2 { 2 } else { 1 };
                    let per_inst = if precision == 0 { 2 * fma } else { fma };
                    return Some(Field::Flops(precision as u8, per_inst));
                }
            }
            return None;
        }
    })
}

/// The field a details-page row feeds, by section display name and metric label.
pub fn field_for_label(section: &str, label: &str) -> Option<Field> {
    Some(match (section, label) {
        ("GPU Speed Of Light Throughput", "Duration") => Field::Duration,
        ("GPU Speed Of Light Throughput", "Memory Throughput") => Field::MemorySol,
        ("GPU Speed Of Light Throughput", "Compute (SM) Throughput") => Field::SmSol,
        ("Occupancy", "Achieved Occupancy") => Field::AchievedOccupancy,
        ("Occupancy", "Theoretical Occupancy") => Field::TheoreticalOccupancy,
        ("Launch Statistics", "Registers Per Thread") => Field::Registers,
        ("Launch Statistics", "Static Shared Memory Per Block")
        | ("Launch Statistics", "Dynamic Shared Memory Per Block") => Field::SharedMem,
        _ => return None,
    })
}

/// Set a field from a value already in base units. Fields set by an earlier metric are kept,
/// except the sums (shared memory, FLOPs) which accumulate their parts.
pub fn apply(record: &mut KernelRecord, field: Field, value: f64) {
    let set = |slot: &mut Option<f64>| {
        if slot.is_none() {
            *slot = Some(value);
        }
    };
    match field {
        Field::Duration => set(&mut record.duration_ns),
        Field::DramRead => set(&mut record.dram_bytes_read),
        Field::DramWrite => set(&mut record.dram_bytes_write),
        Field::DramTotal => set(&mut record.dram_bytes),
        Field::AchievedOccupancy => set(&mut record.achieved_occupancy_pct),
        Field::TheoreticalOccupancy => set(&mut record.theoretical_occupancy_pct),
        // Without the speed of light the pipe loads give their maximum. The speed of light
        // replaces them; a load after it can only raise it by rounding (its maximum covers them).
        Field::SmSol => record.sm_throughput_pct = Some(value),
        Field::PipeLoad => {
            record.sm_throughput_pct =
                Some(record.sm_throughput_pct.map_or(value, |v| v.max(value)))
        }
        // The full memory SOL outranks the DRAM-only one whichever column comes first.
        Field::MemorySol => record.memory_throughput_pct = Some(value),
        Field::DramSol => set(&mut record.memory_throughput_pct),
        Field::Registers => {
            if record.registers_per_thread.is_none() && value >= 0.0 && value <= u32::MAX as f64 {
                record.registers_per_thread = Some(value as u32);
            }
        }
        Field::SharedMem => {
            if value >= 0.0 {
                record.shared_mem_per_block =
                    Some(record.shared_mem_per_block.unwrap_or(0) + value as u64);
            }
        }
        Field::Flops(precision, per_inst) => {
            let slot = match precision {
                0 => &mut record.flops.fp16,
                1 => &mut record.flops.fp32,
                _ => &mut record.flops.fp64,
            };
            *slot = Some(slot.unwrap_or(0.0) + value * f64::from(per_inst));
        }
        Field::TensorFlops(index) => {
            let flops = &mut record.flops;
            let slot = match index {
                0 => &mut flops.tensor_fp16,
                1 => &mut flops.tensor_bf16,
                2 => &mut flops.tensor_tf32,
                3 => &mut flops.tensor_fp8,
                4 => &mut flops.tensor_int8,
                _ => &mut flops.tensor_fp64,
            };
            set(slot);
        }
        // Every such warp instruction was counted as up to 32 thread HFMA2s of 4 FLOPs each.
        Field::Hfma2Mma => {
            if record.flops.fp16_hfma2_mma.is_none() {
                record.flops.fp16_hfma2_mma = Some(value * 128.0);
            }
        }
        // The identity columns' (x, y, z) triples carry these; the scalar totals stay metrics.
        Field::GridSize | Field::BlockSize => {}
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn full_memory_sol_outranks_dram_sol_in_any_order() {
        for order in [[DRAM_SOL, MEMORY_SOL], [MEMORY_SOL, DRAM_SOL]] {
            let mut record = KernelRecord::default();
            for name in order {
                let value = if name == MEMORY_SOL { 70.0 } else { 40.0 };
                apply(&mut record, field_for_metric(name).unwrap(), value);
            }
            assert_eq!(record.memory_throughput_pct, Some(70.0));
        }
        let mut record = KernelRecord::default();
        apply(&mut record, field_for_metric(DRAM_SOL).unwrap(), 40.0);
        assert_eq!(record.memory_throughput_pct, Some(40.0));
    }

    use super::*;

    #[test]
    fn dim3_parsing() {
        assert_eq!(parse_dim3("(256, 1, 1)"), Some([256, 1, 1]));
        assert_eq!(parse_dim3(" (4, 12, 54) "), Some([4, 12, 54]));
        for bad in [
            "(1, 2)",
            "(1, 2, 3, 4)",
            "256",
            "(a, 1, 1)",
            "",
            "(0, 0, 0)",
        ] {
            assert_eq!(parse_dim3(bad), None, "{bad}");
        }
    }

    #[test]
    fn flops_count_fma_twice_and_shared_memory_sums() {
        let mut record = KernelRecord::default();
        for (name, value) in [
            (FP32_OPS[0], 10.0),
            (FP32_OPS[1], 5.0),
            (FP32_OPS[2], 100.0),
            (SHARED_STATIC, 8192.0),
            (SHARED_DYNAMIC, 1024.0),
        ] {
            apply(&mut record, field_for_metric(name).unwrap(), value);
        }
        assert_eq!(record.flops.fp32, Some(215.0));
        assert_eq!(record.flops.fp16, None);
        assert_eq!(record.shared_mem_per_block, Some(9216));
    }

    #[test]
    fn pipe_loads_give_their_maximum_and_the_speed_of_light_replaces_them() {
        let mut record = KernelRecord::default();
        for (name, value) in [(TENSOR_PIPE, 89.9), (ISSUE_ACTIVE, 11.3), (LSU_PIPE, 1.1)] {
            apply(&mut record, field_for_metric(name).unwrap(), value);
        }
        assert_eq!(record.sm_throughput_pct, Some(89.9));
        apply(&mut record, field_for_metric(SM_SOL).unwrap(), 90.2);
        assert_eq!(record.sm_throughput_pct, Some(90.2));
    }

    #[test]
    fn tensor_ops_feed_their_precision_and_hfma2_moves_are_labelled() {
        let mut record = KernelRecord::default();
        for (index, name) in TENSOR_OPS.iter().enumerate() {
            apply(
                &mut record,
                field_for_metric(name).unwrap(),
                (index + 1) as f64,
            );
        }
        let f = record.flops;
        assert_eq!(
            [
                f.tensor_fp16,
                f.tensor_bf16,
                f.tensor_tf32,
                f.tensor_fp8,
                f.tensor_int8,
                f.tensor_fp64
            ],
            [
                Some(1.0),
                Some(2.0),
                Some(3.0),
                Some(4.0),
                Some(5.0),
                Some(6.0)
            ]
        );
        // INT8 ops are not FLOPs.
        assert_eq!(f.tensor_total(), Some(1.0 + 2.0 + 3.0 + 4.0 + 6.0));
        // A kernel whose only "FP16 math" is HFMA2.MMA constant moves counts no FP16 FLOPs.
        let mut fill = KernelRecord::default();
        apply(
            &mut fill,
            field_for_metric(FP16_OPS[2]).unwrap(),
            10.0 * 32.0,
        );
        apply(&mut fill, field_for_metric(HFMA2_MMA_INST).unwrap(), 10.0);
        // 320 thread HFMA2s of two halves each: 4 FLOPs apiece.
        assert_eq!(fill.flops.fp16, Some(1280.0));
        assert_eq!(fill.flops.fp16_hfma2_mma, Some(1280.0));
        assert_eq!(fill.flops.vector_fp16(), Some(0.0));
        assert_eq!(fill.flops.total(), Some(0.0));
    }
}
