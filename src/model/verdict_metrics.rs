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
