//! `polyprof occupancy`: theoretical CUDA occupancy of a launch configuration (CC 7.0–12.0).

use polyprof::profilers::ncu::occupancy::{LaunchConfig, calculate, limits_for, parse_cc};

/// Arguments of `polyprof occupancy`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Compute capability: 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0 or 12.0 (also as 90 or
    /// sm_90).
    #[arg(long, value_name = "CC")]
    pub cc: String,
    /// Registers per thread (ncu's launch__registers_per_thread, or cuobjdump's REG rounded by
    /// the allocation).
    #[arg(long, value_name = "R")]
    pub regs: u32,
    /// Static + dynamic shared memory per block in bytes, without the 1 KiB system reserve.
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    pub shared: u64,
    /// Threads per block.
    #[arg(long, value_name = "T")]
    pub block: u32,
    /// Shared-memory carveout per SM in bytes (ncu's launch__shared_mem_config_size); by
    /// default chosen as the driver does.
    #[arg(long, value_name = "BYTES")]
    pub carveout: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let limits = limits_for(parse_cc(&args.cc)?)?;
    let result = calculate(
        limits,
        &LaunchConfig {
            threads_per_block: args.block,
            registers_per_thread: args.regs,
            shared_per_block: args.shared,
            carveout: args.carveout,
        },
    )?;
    if args.json {
        super::output::println(&serde_json::to_string_pretty(&result)?)?;
        return Ok(0);
    }
    let mut table = super::width::table();
    table.set_header(["limit", "blocks per SM"]);
    table.add_row(["warps".to_string(), result.limit_warps.to_string()]);
    table.add_row(["registers".to_string(), result.limit_registers.to_string()]);
    table.add_row([
        "shared memory".to_string(),
        result.limit_shared_mem.to_string(),
    ]);
    table.add_row(["blocks (SM)".to_string(), result.limit_blocks.to_string()]);
    super::output::println_text(&super::width::render(&table))?;
    super::output::println_text(&super::width::prose(&format!(
        "CC {}: {} active blocks x {} warps = {} warps per SM, theoretical occupancy {:.1}% \
         (limited by {}; {} registers per warp, {} B shared per block allocated, carveout {} B)",
        result.cc,
        result.active_blocks,
        result.warps_per_block,
        result.active_warps,
        result.occupancy_pct,
        result.limited_by.join(", "),
        result.registers_per_warp,
        result.shared_per_block_allocated,
        result.carveout
    )))?;
    Ok(0)
}
