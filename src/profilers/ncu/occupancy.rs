//! Theoretical occupancy of a CUDA launch for compute capabilities 7.0 to 12.0, following the
//! structure of NVIDIA's occupancy calculator: block limits from warps, registers and shared
//! memory, the smallest one wins. Checked against ncu's `launch__occupancy_limit_*` values in the
//! H200 fixtures (tests/ncu_occupancy.rs).

use serde::{Deserialize, Serialize};

use crate::model::error::{Error, Result};

/// Per-SM limits of one compute capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SmLimits {
    pub cc: (u32, u32),
    pub max_threads: u32,
    pub max_warps: u32,
    pub max_blocks: u32,
    pub registers: u32,
    pub max_registers_per_block: u32,
    pub max_registers_per_thread: u32,
    /// Registers are allocated per warp in units of this many.
    pub register_unit: u32,
    /// Warps that fit by registers are rounded down to a multiple of this.
    pub warp_granularity: u32,
    /// Largest shared-memory carveout per SM, bytes.
    pub max_shared: u64,
    /// Carveouts the driver can choose, KiB.
    pub carveouts_kib: &'static [u64],
    pub shared_unit: u64,
    /// Shared memory the system reserves per block, bytes.
    pub reserved_shared: u64,
    pub max_shared_per_block_optin: u64,
}

const KIB: u64 = 1024;

/// CC 7.0–12.0. Values from NVIDIA's CUDA programming guide tables as carried by
/// `fabiodrg/cuda-calculator` and `NVIDIA/cccl` (sm_90); allocation granularities are the CC 8.x
/// ones, which reproduce ncu's limits on sm_90. CC 10.0 (B200, GB200) and 12.0 (RTX 50xx): the
/// CUDA C++ Programming Guide's "Technical Specifications per Compute Capability" table
/// (<https://docs.nvidia.com/cuda/cuda-c-programming-guide/#features-and-technical-specifications>),
/// 12.0's block and warp limits also as ncu reports them on an RTX 5090 (tests/fixtures/ncu-cc120:
/// `Block Limit SM` 24, `Block Limit Warps` 12 for 4-warp blocks).
pub const LIMITS: &[SmLimits] = &[
    VOLTA,
    SmLimits {
        cc: (7, 2),
        ..VOLTA
    },
    SmLimits {
        cc: (7, 5),
        max_threads: 1024,
        max_warps: 32,
        max_blocks: 16,
        max_shared: 64 * KIB,
        carveouts_kib: &[32, 64],
        max_shared_per_block_optin: 64 * KIB,
        ..VOLTA
    },
    AMPERE,
    SmLimits {
        cc: (8, 6),
        max_threads: 1536,
        max_warps: 48,
        max_blocks: 16,
        ..GA10X_SHARED
    },
    SmLimits {
        cc: (8, 7),
        max_blocks: 16,
        ..AMPERE
    },
    SmLimits {
        cc: (8, 9),
        max_threads: 1536,
        max_warps: 48,
        max_blocks: 24,
        ..GA10X_SHARED
    },
    SmLimits {
        cc: (9, 0),
        max_shared: 228 * KIB,
        carveouts_kib: &[0, 8, 16, 32, 64, 100, 132, 164, 196, 228],
        max_shared_per_block_optin: 227 * KIB,
        ..AMPERE
    },
    // Data-center Blackwell: Hopper's SM limits and its 228 KiB of shared memory.
    SmLimits {
        cc: (10, 0),
        max_shared: 228 * KIB,
        carveouts_kib: &[0, 8, 16, 32, 64, 100, 132, 164, 196, 228],
        max_shared_per_block_optin: 227 * KIB,
        ..AMPERE
    },
    // Consumer Blackwell: 48 warps and 24 blocks per SM, 100 KiB of shared memory (as CC 8.9).
    SmLimits {
        cc: (12, 0),
        max_threads: 1536,
        max_warps: 48,
        max_blocks: 24,
        ..GA10X_SHARED
    },
];

/// CC 7.0: the base the other entries differ from. Every listed CC has 64 K registers, at most
/// 255 per thread, allocated per warp in units of 256.
const VOLTA: SmLimits = SmLimits {
    cc: (7, 0),
    max_threads: 2048,
    max_warps: 64,
    max_blocks: 32,
    registers: 65536,
    max_registers_per_block: 65536,
    max_registers_per_thread: 255,
    register_unit: 256,
    warp_granularity: 4,
    max_shared: 96 * KIB,
    carveouts_kib: &[0, 8, 16, 32, 64, 96],
    shared_unit: 256,
    reserved_shared: 0,
    max_shared_per_block_optin: 96 * KIB,
};

/// CC 8.0: 1 KiB reserved per block, 128-byte shared-memory units, up to 164 KiB.
const AMPERE: SmLimits = SmLimits {
    cc: (8, 0),
    max_shared: 164 * KIB,
    carveouts_kib: &[0, 8, 16, 32, 64, 100, 132, 164],
    shared_unit: 128,
    reserved_shared: 1024,
    max_shared_per_block_optin: 163 * KIB,
    ..VOLTA
};

/// The 100 KiB shared-memory configuration of CC 8.6 and 8.9.
const GA10X_SHARED: SmLimits = SmLimits {
    max_shared: 100 * KIB,
    carveouts_kib: &[0, 8, 16, 32, 64, 100],
    max_shared_per_block_optin: 99 * KIB,
    ..AMPERE
};

/// `9.0` / `90` / `sm_90` → (9, 0).
pub fn parse_cc(text: &str) -> Result<(u32, u32)> {
    let t = text
        .trim()
        .trim_start_matches("sm_")
        .trim_start_matches("compute_");
    let parsed = if let Some((major, minor)) = t.split_once('.') {
        major.parse().ok().zip(minor.parse().ok())
    } else if t.len() >= 2 && t.bytes().all(|b| b.is_ascii_digit()) {
        let (major, minor) = t.split_at(t.len() - 1);
        major.parse().ok().zip(minor.parse().ok())
    } else {
        None
    };
    parsed.ok_or_else(|| {
        Error::invalid(
            "compute capability",
            format!("`{text}` is not a compute capability such as 9.0, 90 or sm_90"),
        )
    })
}

/// The limits of a compute capability, or an error listing the supported ones.
pub fn limits_for(cc: (u32, u32)) -> Result<&'static SmLimits> {
    LIMITS
        .iter()
        .find(|l| l.cc == cc)
        .ok_or_else(|| Error::UnknownValue {
            what: "compute capability",
            value: format!("{}.{}", cc.0, cc.1),
            valid: LIMITS
                .iter()
                .map(|l| format!("{}.{}", l.cc.0, l.cc.1))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// One launch configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchConfig {
    pub threads_per_block: u32,
    pub registers_per_thread: u32,
    /// Static + dynamic shared memory per block, bytes, without the system reserve.
    pub shared_per_block: u64,
    /// The driver's shared-memory carveout per SM, bytes (ncu's `launch__shared_mem_config_size`);
    /// `None` lets polyprof pick it like the driver does.
    pub carveout: Option<u64>,
}

/// What limits a launch and the resulting theoretical occupancy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Occupancy {
    pub cc: String,
    pub warps_per_block: u32,
    pub registers_per_warp: u32,
    pub shared_per_block_allocated: u64,
    pub carveout: u64,
    pub limit_blocks: u32,
    pub limit_warps: u32,
    pub limit_registers: u32,
    pub limit_shared_mem: u32,
    pub active_blocks: u32,
    pub active_warps: u32,
    pub occupancy_pct: f64,
    /// Which limits are the binding ones (`warps`, `registers`, `shared_mem`, `blocks`).
    pub limited_by: Vec<&'static str>,
}

fn round_up(value: u64, unit: u64) -> u64 {
    if unit == 0 {
        value
    } else {
        value.div_ceil(unit) * unit
    }
}

/// Theoretical occupancy of `config` on `limits`.
pub fn calculate(limits: &SmLimits, config: &LaunchConfig) -> Result<Occupancy> {
    let threads = config.threads_per_block;
    if threads == 0 || threads > 1024 {
        return Err(Error::invalid(
            "block size",
            format!("{threads} threads per block; must be 1..=1024"),
        ));
    }
    if config.registers_per_thread > limits.max_registers_per_thread {
        return Err(Error::invalid(
            "registers per thread",
            format!(
                "{} exceeds the limit of {} on CC {}.{}",
                config.registers_per_thread,
                limits.max_registers_per_thread,
                limits.cc.0,
                limits.cc.1
            ),
        ));
    }
    let warps_per_block = threads.div_ceil(32);
    let limit_warps = (limits.max_warps / warps_per_block).min(limits.max_blocks);

    let registers_per_warp = round_up(
        u64::from(config.registers_per_thread) * 32,
        u64::from(limits.register_unit),
    ) as u32;
    let limit_registers = if registers_per_warp == 0 {
        limits.max_blocks
    } else if registers_per_warp * warps_per_block > limits.max_registers_per_block {
        0
    } else {
        let warps = limits.registers / registers_per_warp;
        let warps = warps / limits.warp_granularity * limits.warp_granularity;
        (warps / warps_per_block).min(limits.max_blocks)
    };

    if config.shared_per_block > limits.max_shared_per_block_optin {
        return Err(Error::invalid(
            "shared memory per block",
            format!(
                "{} bytes exceeds the opt-in maximum of {} on CC {}.{}",
                config.shared_per_block,
                limits.max_shared_per_block_optin,
                limits.cc.0,
                limits.cc.1
            ),
        ));
    }
    let shared_allocated = round_up(
        config.shared_per_block + limits.reserved_shared,
        limits.shared_unit,
    );
    let others = limit_warps.min(limit_registers).min(limits.max_blocks);
    let carveout = match config.carveout {
        Some(bytes) => bytes.min(limits.max_shared),
        None => default_carveout(limits, shared_allocated, others),
    };
    let limit_shared_mem =
        carveout
            .checked_div(shared_allocated)
            .map_or(limits.max_blocks, |blocks| {
                u32::try_from(blocks)
                    .unwrap_or(u32::MAX)
                    .min(limits.max_blocks)
            });

    let active_blocks = others.min(limit_shared_mem);
    let active_warps = active_blocks * warps_per_block;
    let mut limited_by = Vec::new();
    for (name, limit) in [
        ("warps", limit_warps),
        ("registers", limit_registers),
        ("shared_mem", limit_shared_mem),
        ("blocks", limits.max_blocks),
    ] {
        if limit == active_blocks {
            limited_by.push(name);
        }
    }
    Ok(Occupancy {
        cc: format!("{}.{}", limits.cc.0, limits.cc.1),
        warps_per_block,
        registers_per_warp,
        shared_per_block_allocated: shared_allocated,
        carveout,
        limit_blocks: limits.max_blocks,
        limit_warps,
        limit_registers,
        limit_shared_mem,
        active_blocks,
        active_warps,
        occupancy_pct: f64::from(active_warps) * 100.0 / f64::from(limits.max_warps),
        limited_by,
    })
}

/// The carveout the driver picks when the kernel states no preference: the smallest option that
/// keeps the blocks the other limits allow, but at least 32 KiB where offered (all four H200
/// fixture kernels ran with 32 KiB, even those needing 8 KiB) [heuristic].
fn default_carveout(limits: &SmLimits, shared_per_block: u64, blocks: u32) -> u64 {
    let needed = shared_per_block * u64::from(blocks);
    let floor = if limits.carveouts_kib.contains(&32) {
        32 * KIB
    } else {
        0
    };
    limits
        .carveouts_kib
        .iter()
        .map(|k| k * KIB)
        .find(|&bytes| bytes >= needed.max(floor))
        .unwrap_or(limits.max_shared)
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn cc_spellings() {
        assert_eq!(parse_cc("9.0").unwrap(), (9, 0));
        assert_eq!(parse_cc("sm_90").unwrap(), (9, 0));
        assert_eq!(parse_cc("86").unwrap(), (8, 6));
        assert_eq!(parse_cc("sm_120").unwrap(), (12, 0));
        assert_eq!(parse_cc("100").unwrap(), (10, 0));
        assert!(parse_cc("nine").is_err());
        assert_eq!(limits_for((12, 0)).unwrap().max_warps, 48);
        let err = limits_for((11, 0)).unwrap_err().to_string();
        assert!(err.contains("9.0, 10.0, 12.0"), "{err}");
    }

    #[test]
    fn register_and_block_size_errors() {
        let sm90 = limits_for((9, 0)).unwrap();
        let config = LaunchConfig {
            threads_per_block: 2048,
            registers_per_thread: 32,
            shared_per_block: 0,
            carveout: None,
        };
        assert!(calculate(sm90, &config).is_err());
        let too_many_regs = LaunchConfig {
            threads_per_block: 256,
            registers_per_thread: 256,
            ..config
        };
        assert!(calculate(sm90, &too_many_regs).is_err());
        // 255 registers × 1024 threads does not fit the 64 K registers of a block.
        let fat = LaunchConfig {
            threads_per_block: 1024,
            registers_per_thread: 255,
            ..config
        };
        let result = calculate(sm90, &fat).unwrap();
        assert_eq!((result.limit_registers, result.occupancy_pct), (0, 0.0));
    }
}
