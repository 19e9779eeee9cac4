//! The ncu metric names the roofline verdict reads from a record's `metrics` map. They live in
//! the model because both sides use them: the ncu backend collects them (its presets re-export
//! these names) and results/ reads them, and neither layer may import the other.

/// Memory speed of light over DRAM, L1 and L2: costs 6 replay passes on an H200.
pub const MEMORY_SOL: &str = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
/// DRAM speed of light: 1 pass. The minimal preset's memory SOL (the roofline's memory side is
/// DRAM); `gpu__compute_memory_throughput` wins when both are present.
pub const DRAM_SOL: &str = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
/// The SM clock the launch ran at (Hz): compute peaks are scaled to it.
pub const SM_CLOCK: &str = "sm__cycles_elapsed.avg.per_second";
/// The DRAM clock the launch ran at (Hz): the bandwidth peak is scaled to it.
pub const DRAM_CLOCK: &str = "dram__cycles_elapsed.avg.per_second";
/// Pipe and issue utilization, % of peak over the elapsed cycles: the minimal preset's compute
/// load. They are the terms the SM speed of light (`sm__throughput`, 9 replay passes on an H200)
/// takes its maximum over for compute-heavy kernels, and the five cost 3 passes. Seen on the H200
/// (scripts/gpu-preset-cost.sh): bf16/fp16 cuBLAS matmuls 89.9/90.3 % on the tensor pipe against
/// an SM speed of light of 89.9/90.3 %, an FP32 SIMT matmul 84.5 % issue against 84.5 %.
pub const TENSOR_PIPE: &str = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed";
pub const FMA_PIPE: &str = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed";
pub const ALU_PIPE: &str = "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed";
pub const LSU_PIPE: &str = "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed";
/// Warp instructions issued over the SMs' issue slots.
pub const ISSUE_ACTIVE: &str = "sm__inst_executed.avg.pct_of_peak_sustained_elapsed";
/// The five, in the order a tie names the limiter.
pub const PIPE_LOADS: [&str; 5] = [TENSOR_PIPE, FMA_PIPE, ALU_PIPE, LSU_PIPE, ISSUE_ACTIVE];
