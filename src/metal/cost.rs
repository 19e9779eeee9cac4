//! Execution unit and cycle cost per instruction.
//!
//! Two tables: Mesa's "crude cycle model for G13G" (`agx_performance.c`, the default, versioned
//! by the Mesa commit it was read from), and metal-profiler 0.1.1's `cost_model.py`, kept only so
//! its numbers can be reproduced and cross-checked. Mesa's mnemonics are mapped to applegpu's by
//! name (notes/metal.md §4.4).

use serde::Serialize;

/// Execution unit of an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
pub enum Unit {
    F32,
    F16,
    /// Scalar/integer/branch ALU (simple integer ops, moves, compare-selects, SIMD ops).
    #[serde(rename = "SCIB")]
    Scib,
    /// Integer-complex and transcendental pipe.
    #[serde(rename = "IC")]
    Ic,
    /// Memory: loads, stores, atomics (asynchronous; waited for by `wait`).
    #[serde(rename = "MEM")]
    Mem,
    /// Control flow and execution-mask ops.
    #[serde(rename = "CTRL")]
    Ctrl,
    /// Not in the table: counted, but costs nothing in the model.
    #[serde(rename = "untimed")]
    Untimed,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::F32 => "F32",
            Unit::F16 => "F16",
            Unit::Scib => "SCIB",
            Unit::Ic => "IC",
            Unit::Mem => "MEM",
            Unit::Ctrl => "CTRL",
            Unit::Untimed => "-",
        }
    }

    /// Units of the F/SCIB bucket, which Mesa sums together.
    pub fn is_f_scib(self) -> bool {
        matches!(self, Unit::F32 | Unit::F16 | Unit::Scib)
    }
}

/// Latency and inverse throughput (cycles) of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Timing {
    pub unit: Unit,
    pub latency: f64,
    pub throughput: f64,
}

impl Timing {
    const fn new(unit: Unit, latency: f64, throughput: f64) -> Timing {
        Timing {
            unit,
            latency,
            throughput,
        }
    }
}

/// Which table to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CostModel {
    /// Mesa's G13G model: IC adds 2·tp, everything else timed adds tp; untimed ops cost 0.
    #[default]
    Mesa,
    /// metal-profiler 0.1.1's table and prefix lookup, IC adding tp once.
    MetalProfilerCompat,
}

/// Identifier of the Mesa model (reported with every analysis).
pub const MESA_MODEL_ID: &str = "mesa-agx-g13g-crude@11f797d";
/// Identifier of the compatibility model.
pub const COMPAT_MODEL_ID: &str = "metal-profiler-0.1.1-cost_model";

impl CostModel {
    pub fn id(self) -> &'static str {
        match self {
            CostModel::Mesa => MESA_MODEL_ID,
            CostModel::MetalProfilerCompat => COMPAT_MODEL_ID,
        }
    }

    /// Timing of an instruction. `mnemonic` is the full mnemonic (`iadd.sat`); `dest_is_half`
    /// settles the width of applegpu's older width-less `fadd`/`fmul`/`fmadd`.
    pub fn timing(self, mnemonic: &str, dest_is_half: bool) -> Timing {
        match self {
            CostModel::Mesa => mesa_timing(base(mnemonic), dest_is_half),
            CostModel::MetalProfilerCompat => compat_timing(mnemonic),
        }
    }

    /// Cycles an instruction adds to its bucket: Mesa counts IC at twice its throughput.
    pub fn issue_cycles(self, timing: &Timing) -> f64 {
        match (self, timing.unit) {
            (CostModel::Mesa, Unit::Ic) => 2.0 * timing.throughput,
            (_, Unit::F32 | Unit::F16 | Unit::Scib | Unit::Ic) => timing.throughput,
            // Memory and control ops are not ALU work in either model.
            _ => 0.0,
        }
    }
}

fn base(mnemonic: &str) -> &str {
    mnemonic.split('.').next().unwrap_or(mnemonic)
}

const BITOP_ALIASES: &[&str] = &[
    "bitop",
    "and",
    "or",
    "xor",
    "nand",
    "nor",
    "xnor",
    "not",
    "mov",
    "andn1",
    "andn2",
    "orn1",
    "orn2",
    "bitop_mov_a",
    "bitop_mov_b",
    "bitop_not_a",
    "bitop_not_b",
];

fn mesa_timing(m: &str, dest_is_half: bool) -> Timing {
    use Unit::*;
    let t = Timing::new;
    match m {
        "fmadd32" | "fadd32" | "fmul32" => t(F32, 2.0, 1.0),
        "fmadd16" | "fadd16" | "fmul16" => t(F16, 2.0, 1.0),
        "fmadd" | "fadd" | "fmul" if dest_is_half => t(F16, 2.0, 1.0),
        "fmadd" | "fadd" | "fmul" => t(F32, 2.0, 1.0),
        "mov_imm" => t(Scib, 1.0, 1.0),
        "icmpsel" | "fcmpsel" | "iadd" | "isub" => t(Scib, 2.0, 1.0),
        m if BITOP_ALIASES.contains(&m) => t(Scib, 2.0, 1.0),
        "get_sr" | "get_sr_barrier" | "get_sr_coverage" => t(Scib, 2.0, 2.0),
        "imadd" | "imsub" | "bfi" | "extr" | "asr" | "floor" | "ceil" | "trunc" | "sin_pt_1" => {
            t(Ic, 3.0, 2.0)
        }
        "sin_pt_2" | "log2" | "exp2" => t(Ic, 5.0, 2.0),
        "rcp" => t(Ic, 5.0, 3.0),
        "rsqrt" | "rsqrt_special" | "srsqrt" => t(Ic, 6.0, 4.0),
        // Mesa marks the SIMD rows "XXX: check this"; they are kept as written.
        m if m.starts_with("simd_prefix") || m.starts_with("quad_prefix") => t(Scib, 18.0, 18.0),
        m if m.starts_with("simd_reduce") || m.starts_with("quad_reduce") => t(Scib, 24.0, 24.0),
        m if m.starts_with("simd_shuffle") || m.starts_with("quad_shuffle") => t(Scib, 5.0, 2.0),
        "icmp_ballot" | "fcmp_ballot" => t(Scib, 5.0, 2.0),
        "icmp_quad_ballot" | "fcmp_quad_ballot" => t(Scib, 4.0, 2.0),
        m if is_memory(m) => t(Mem, 0.0, 0.0),
        m if is_control(m) => t(Ctrl, 0.0, 0.0),
        _ => t(Untimed, 0.0, 0.0),
    }
}

/// Memory ops (unit MEM in both models' reports).
pub fn is_memory(m: &str) -> bool {
    m.starts_with("device_")
        || m.starts_with("threadgroup_load")
        || m.starts_with("threadgroup_store")
        || m.starts_with("threadgroup_atomic")
        || m.starts_with("local_")
        || m.starts_with("stack_load")
        || m.starts_with("stack_store")
        || m.starts_with("texture_")
        || m.starts_with("image_")
        || m.starts_with("async_")
        || m.starts_with("uniform_store")
        || m == "atomic"
}

fn is_control(m: &str) -> bool {
    m.starts_with("jmp_")
        || m.starts_with("if_")
        || m.starts_with("else_")
        || m.starts_with("while_")
        || matches!(
            m,
            "push_exec"
                | "pop_exec"
                | "update_exec"
                | "call"
                | "ret"
                | "stop"
                | "trap"
                | "wait"
                | "threadgroup_barrier"
                | "memory_barrier"
                | "stack_adjust"
        )
}

/// metal-profiler's `COST_TABLE`, in its insertion order (the prefix fallback depends on it).
const COMPAT_TABLE: &[(&str, Unit, f64, f64)] = &[
    ("fadd32", Unit::F32, 2.0, 1.0),
    ("fmul32", Unit::F32, 2.0, 1.0),
    ("fmadd32", Unit::F32, 2.0, 1.0),
    ("fmax32", Unit::F32, 2.0, 1.0),
    ("fmin32", Unit::F32, 2.0, 1.0),
    ("fcmpsel", Unit::Scib, 2.0, 1.0),
    ("fadd16", Unit::F16, 2.0, 1.0),
    ("fmul16", Unit::F16, 2.0, 1.0),
    ("fmadd16", Unit::F16, 2.0, 1.0),
    ("iadd", Unit::Scib, 2.0, 1.0),
    ("imad", Unit::Ic, 3.0, 2.0),
    ("imadd", Unit::Ic, 3.0, 2.0),
    ("bitop", Unit::Scib, 2.0, 1.0),
    ("bfi", Unit::Ic, 3.0, 2.0),
    ("bfeil", Unit::Ic, 3.0, 2.0),
    ("asr", Unit::Ic, 3.0, 2.0),
    ("icmpsel", Unit::Scib, 2.0, 1.0),
    ("floor", Unit::Ic, 3.0, 2.0),
    ("ceil", Unit::Ic, 3.0, 2.0),
    ("trunc", Unit::Ic, 3.0, 2.0),
    ("roundeven", Unit::Ic, 3.0, 2.0),
    ("rcp", Unit::Ic, 5.0, 3.0),
    ("rsqrt", Unit::Ic, 6.0, 4.0),
    ("srsqrt", Unit::Ic, 6.0, 4.0),
    ("log2", Unit::Ic, 5.0, 2.0),
    ("exp2", Unit::Ic, 5.0, 2.0),
    ("sin_pt_1", Unit::Ic, 3.0, 2.0),
    ("sin_pt_2", Unit::Ic, 5.0, 2.0),
    ("mov_imm", Unit::Scib, 1.0, 1.0),
    ("get_sr", Unit::Scib, 2.0, 2.0),
    ("shuffle", Unit::Scib, 5.0, 2.0),
    ("quad_shuffle", Unit::Scib, 5.0, 2.0),
    ("simd_prefix", Unit::Scib, 18.0, 18.0),
    ("simd_reduce", Unit::Scib, 24.0, 24.0),
    ("icmp_ballot", Unit::Scib, 5.0, 2.0),
    ("fcmp_ballot", Unit::Scib, 5.0, 2.0),
    ("device_load", Unit::Mem, 200.0, 1.0),
    ("device_store", Unit::Mem, 1.0, 1.0),
    ("local_load", Unit::Mem, 5.0, 1.0),
    ("local_store", Unit::Mem, 1.0, 1.0),
    ("texture_sample", Unit::Mem, 200.0, 1.0),
    ("texture_load", Unit::Mem, 200.0, 1.0),
    ("atomic", Unit::Mem, 200.0, 1.0),
    ("stop", Unit::Ctrl, 0.0, 0.0),
    ("trap", Unit::Ctrl, 0.0, 0.0),
    ("wait", Unit::Ctrl, 0.0, 0.0),
    ("jmp_exec_any", Unit::Ctrl, 1.0, 1.0),
    ("jmp_exec_none", Unit::Ctrl, 1.0, 1.0),
    ("push_exec", Unit::Ctrl, 1.0, 1.0),
    ("pop_exec", Unit::Ctrl, 1.0, 1.0),
    ("if_icmp", Unit::Ctrl, 1.0, 1.0),
    ("if_fcmp", Unit::Ctrl, 1.0, 1.0),
    ("while_icmp", Unit::Ctrl, 1.0, 1.0),
    ("while_fcmp", Unit::Ctrl, 1.0, 1.0),
    ("else_icmp", Unit::Ctrl, 1.0, 1.0),
    ("else_fcmp", Unit::Ctrl, 1.0, 1.0),
];

/// metal-profiler's `lookup_cost`: exact match, then the first key that the mnemonic starts
/// with or that starts with the mnemonic, else SCIB (1, 1).
fn compat_timing(m: &str) -> Timing {
    let hit = COMPAT_TABLE.iter().find(|(k, ..)| *k == m).or_else(|| {
        COMPAT_TABLE
            .iter()
            .find(|(k, ..)| m.starts_with(k) || k.starts_with(m))
    });
    match hit {
        Some(&(_, unit, latency, throughput)) => Timing::new(unit, latency, throughput),
        None => Timing::new(Unit::Scib, 1.0, 1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mesa_counts_ic_twice_and_leaves_unknown_untimed() {
        let m = CostModel::Mesa;
        let imadd = m.timing("imadd", false);
        assert_eq!(imadd.unit, Unit::Ic);
        assert_eq!(m.issue_cycles(&imadd), 4.0);
        let rsqrt = m.timing("rsqrt", false);
        assert_eq!(m.issue_cycles(&rsqrt), 8.0);
        assert_eq!(m.timing("iadd.sat", false).unit, Unit::Scib);
        assert_eq!(m.timing("mov", false).unit, Unit::Scib);
        let convert = m.timing("convert", false);
        assert_eq!(
            (convert.unit, m.issue_cycles(&convert)),
            (Unit::Untimed, 0.0)
        );
        assert_eq!(m.timing("device_load", false).unit, Unit::Mem);
        assert_eq!(m.issue_cycles(&m.timing("device_load", false)), 0.0);
        assert_eq!(m.timing("while_icmp", false).unit, Unit::Ctrl);
        assert_eq!(m.timing("fmul", true).unit, Unit::F16);
        assert_eq!(m.timing("fmul", false).unit, Unit::F32);
    }

    #[test]
    fn compat_reproduces_prefix_lookup() {
        let c = CostModel::MetalProfilerCompat;
        // `mov` matches `mov_imm` because the key starts with the mnemonic.
        assert_eq!(c.timing("mov", false), Timing::new(Unit::Scib, 1.0, 1.0));
        assert_eq!(c.timing("iadd.sat", false).latency, 2.0);
        assert_eq!(
            c.timing("stack_store", false),
            Timing::new(Unit::Scib, 1.0, 1.0)
        );
        let imadd = c.timing("imadd", false);
        assert_eq!(c.issue_cycles(&imadd), 2.0);
        assert_eq!(c.issue_cycles(&c.timing("device_load", false)), 0.0);
    }
}
