//! The static AGX analysis of one listing: registers and occupancy, per-instruction unit and
//! cost, read-after-write penalties, memory stalls, loops, bottleneck and suggestions.
//!
//! Everything here is a model: unit costs are Mesa's G13G table, the penalties are
//! philipturner/metal-benchmarks' measured FMUL numbers, and the memory stall is a heuristic
//! with the load latency as a parameter. The report says which model produced it.

use serde::Serialize;

use super::cost::{CostModel, Timing, Unit, is_memory};
use super::listing::{LineWarning, Listing};
use super::loops::{Loop, find_loops};
use super::occupancy::Occupancy;
use super::operands::{Access, Operand, Reg, RegFile, access, classify, role_of};

/// Extra cycles when an instruction reads a 32-bit register written by the previous one
/// (philipturner/metal-benchmarks, back-to-back dependent FMUL).
pub const RAW_PENALTY_32: f64 = 0.84;
/// The same for a 16-bit register.
pub const RAW_PENALTY_16: f64 = 0.56;
/// Default device-memory load latency in cycles (metal-profiler's assumption; Mesa has none).
pub const DEFAULT_LOAD_LATENCY: f64 = 200.0;

/// Knobs of the analysis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AnalyzeOptions {
    pub model: CostModel,
    /// Cycles from a device-memory load to its data, for the stall estimate.
    pub load_latency: f64,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            model: CostModel::Mesa,
            load_latency: DEFAULT_LOAD_LATENCY,
        }
    }
}

/// One analysed instruction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstructionReport {
    pub offset: u32,
    pub mnemonic: String,
    pub operands: Vec<String>,
    pub section: usize,
    pub unit: Unit,
    pub latency: f64,
    /// Cycles this instruction adds to its bucket in the model (IC counts 2·tp under Mesa).
    pub cycles: f64,
    /// Read-after-write penalty on this instruction, in cycles.
    pub raw_penalty: f64,
    /// Estimated stall at this `wait`, in cycles.
    pub stall: f64,
    /// Number of loops containing this instruction.
    pub loop_depth: usize,
    pub defs: Vec<String>,
    pub uses: Vec<String>,
}

/// Instruction count of one section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SectionCount {
    pub name: String,
    pub instructions: usize,
}

/// Cycle buckets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Buckets {
    pub f32: f64,
    pub f16: f64,
    pub scib: f64,
    pub ic: f64,
    /// F32 + F16 + SCIB, one pipe group in Mesa's model.
    pub f_scib: f64,
    /// max(f_scib, ic): the two groups run in parallel across SIMD groups.
    pub alu: f64,
}

impl Buckets {
    fn add(&mut self, unit: Unit, cycles: f64) {
        match unit {
            Unit::F32 => self.f32 += cycles,
            Unit::F16 => self.f16 += cycles,
            Unit::Scib => self.scib += cycles,
            Unit::Ic => self.ic += cycles,
            _ => {}
        }
        self.f_scib = self.f32 + self.f16 + self.scib;
        self.alu = self.f_scib.max(self.ic);
    }
}

/// What limits a kernel or loop in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bottleneck {
    MemoryLatency,
    IntegerComplex,
    FloatScalar,
    ControlFlow,
}

impl Bottleneck {
    pub fn describe(self) -> &'static str {
        match self {
            Bottleneck::MemoryLatency => "memory latency (estimated stalls exceed ALU cycles)",
            Bottleneck::IntegerComplex => "integer-complex pipe (IC)",
            Bottleneck::FloatScalar => "F32/F16/SCIB pipes",
            Bottleneck::ControlFlow => "control flow (no timed ALU work)",
        }
    }

    fn judge(buckets: &Buckets, raw: f64, stall: f64, loads: usize) -> Bottleneck {
        if loads > 0 && stall > buckets.alu + raw {
            Bottleneck::MemoryLatency
        } else if buckets.ic > buckets.f_scib {
            Bottleneck::IntegerComplex
        } else if buckets.f_scib > 0.0 {
            Bottleneck::FloatScalar
        } else {
            Bottleneck::ControlFlow
        }
    }
}

/// Per-iteration figures of one loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoopReport {
    /// Back-edge target, as the listing prints offsets (`0x74`).
    pub start: String,
    /// Address of the back-edge instruction itself.
    pub end: String,
    pub depth: usize,
    pub parent: Option<usize>,
    pub instructions: usize,
    pub buckets: Buckets,
    pub raw_penalty: f64,
    pub memory_stall: f64,
    /// alu + raw_penalty + memory_stall.
    pub cycles_per_iteration: f64,
    pub device_loads: usize,
    pub threadgroup_loads: usize,
    pub stores: usize,
    pub waits: usize,
    pub bottleneck: Bottleneck,
}

/// How urgent a suggestion is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    High,
    Medium,
    Low,
}

/// An optimization hint derived from the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    pub severity: Severity,
    /// Stable identifier: `tile-threadgroup`, `unroll`, `break-dependency-chain`,
    /// `hoist-expensive`, `reduce-registers`, `consider-fp16`, `hide-load-latency`.
    pub kind: &'static str,
    /// Where it applies (`0x74`), when it is local.
    pub at: Option<String>,
    pub message: String,
}

/// The whole analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    pub model: &'static str,
    pub load_latency: f64,
    pub instruction_count: usize,
    pub sections: Vec<SectionCount>,
    /// Highest general-purpose register mentioned (`r26`), if any.
    pub highest_gpr: Option<String>,
    pub occupancy: Occupancy,
    pub buckets: Buckets,
    pub raw_penalty: f64,
    pub memory_stall: f64,
    pub untimed_instructions: usize,
    pub memory_instructions: usize,
    pub control_instructions: usize,
    pub loops: Vec<LoopReport>,
    pub bottleneck: Bottleneck,
    pub suggestions: Vec<Suggestion>,
    pub instructions: Vec<InstructionReport>,
    pub warnings: Vec<LineWarning>,
}

/// Hex as the listing prints offsets.
pub fn hex(offset: u32) -> String {
    format!("{offset:#x}")
}

struct Decoded {
    timing: Timing,
    cycles: f64,
    access: Access,
    /// Leading small-integer operand: the wait slot of loads and `wait`.
    slot: Option<u32>,
}

/// Measures a parsed listing: everything but the suggestions, which `suggest` derives from this
/// result (see [`crate::metal::analyze`], which does both).
pub fn measure(listing: &Listing, options: AnalyzeOptions) -> Analysis {
    let model = options.model;
    let insts = &listing.instructions;
    let decoded: Vec<Decoded> = insts
        .iter()
        .map(|inst| {
            let operands: Vec<Operand> = inst
                .operands
                .iter()
                .map(|o| classify(o, inst.offset))
                .collect();
            let access = access(role_of(inst.base_mnemonic()), &operands);
            let dest_is_half = access.defs.first().is_some_and(Reg::is_half);
            let timing = model.timing(&inst.mnemonic, dest_is_half);
            Decoded {
                cycles: model.issue_cycles(&timing),
                timing,
                access,
                slot: leading_slot(&operands),
            }
        })
        .collect();

    let raw = raw_penalties(listing, &decoded);
    let stalls = memory_stalls(listing, &decoded, options);
    let loops = find_loops(insts);

    let mut buckets = Buckets::default();
    let (mut untimed, mut memory, mut control) = (0, 0, 0);
    let mut highest: Option<Reg> = None;
    let mut half_regs = 0u32;
    for d in &decoded {
        buckets.add(d.timing.unit, d.cycles);
        match d.timing.unit {
            Unit::Untimed => untimed += 1,
            Unit::Mem => memory += 1,
            Unit::Ctrl => control += 1,
            _ => {}
        }
        for reg in d.access.all.iter().filter(|r| r.file == RegFile::Gpr) {
            if highest.is_none_or(|h| reg.index > h.index) {
                highest = Some(*reg);
            }
            half_regs = half_regs.max(reg.half_slots().max().unwrap_or(0) + 1);
        }
    }
    let occupancy = Occupancy::g13(half_regs);
    let raw_total: f64 = raw.iter().sum();
    let stall_total: f64 = stalls.iter().sum();
    let device_loads = insts
        .iter()
        .filter(|i| is_device_load(i.base_mnemonic()))
        .count();

    // Members of each loop as instruction indices, found once (listings are in address order,
    // so a binary search bounds each range; otherwise a scan).
    let sorted = insts.windows(2).all(|w| w[0].offset <= w[1].offset);
    let members: Vec<Vec<usize>> = loops
        .iter()
        .map(|l| {
            if sorted {
                let lo = insts.partition_point(|i| i.offset < l.start);
                let hi = insts.partition_point(|i| i.offset <= l.end);
                (lo..hi).collect()
            } else {
                (0..insts.len())
                    .filter(|&i| l.contains(insts[i].offset))
                    .collect()
            }
        })
        .collect();
    let mut depths = vec![0usize; insts.len()];
    for m in &members {
        for &i in m {
            depths[i] += 1;
        }
    }
    let loop_reports: Vec<LoopReport> = loops
        .iter()
        .zip(&members)
        .map(|(l, m)| loop_report(l, m, listing, &decoded, &raw, &stalls))
        .collect();

    let reports: Vec<InstructionReport> = insts
        .iter()
        .zip(&decoded)
        .enumerate()
        .map(|(i, (inst, d))| InstructionReport {
            offset: inst.offset,
            mnemonic: inst.mnemonic.clone(),
            operands: inst.operands.clone(),
            section: inst.section,
            unit: d.timing.unit,
            latency: d.timing.latency,
            cycles: d.cycles,
            raw_penalty: raw[i],
            stall: stalls[i],
            loop_depth: depths[i],
            defs: d.access.defs.iter().map(ToString::to_string).collect(),
            uses: d.access.uses.iter().map(ToString::to_string).collect(),
        })
        .collect();

    Analysis {
        model: model.id(),
        load_latency: options.load_latency,
        instruction_count: insts.len(),
        sections: listing
            .sections
            .iter()
            .map(|s| SectionCount {
                name: s.name.clone(),
                instructions: s.end - s.start,
            })
            .collect(),
        highest_gpr: highest.map(|r| format!("r{}", r.index)),
        occupancy,
        bottleneck: Bottleneck::judge(&buckets, raw_total, stall_total, device_loads),
        buckets,
        raw_penalty: raw_total,
        memory_stall: stall_total,
        untimed_instructions: untimed,
        memory_instructions: memory,
        control_instructions: control,
        loops: loop_reports,
        suggestions: Vec::new(),
        instructions: reports,
        warnings: listing.warnings.clone(),
    }
}

/// Loads whose data comes from device memory (or the stack, which lives there).
fn is_device_load(m: &str) -> bool {
    matches!(
        m,
        "device_load" | "stack_load" | "texture_sample" | "texture_load" | "atomic"
    )
}

fn overlaps(a: &Reg, b: &Reg) -> bool {
    a.file == b.file && a.half_slots().any(|s| b.half_slots().any(|t| t == s))
}

/// The measured back-to-back penalty: the previous instruction (same section) is an FP op
/// whose result this one reads. Keyed on the width of the register read.
fn raw_penalties(listing: &Listing, decoded: &[Decoded]) -> Vec<f64> {
    let insts = &listing.instructions;
    let mut out = vec![0.0; decoded.len()];
    for i in 1..decoded.len() {
        let prev = &decoded[i - 1];
        if insts[i - 1].section != insts[i].section
            || !matches!(prev.timing.unit, Unit::F32 | Unit::F16)
        {
            continue;
        }
        for used in &decoded[i].access.uses {
            if prev.access.defs.iter().any(|d| overlaps(d, used)) {
                let p = if used.is_half() {
                    RAW_PENALTY_16
                } else {
                    RAW_PENALTY_32
                };
                out[i] = f64::max(out[i], p);
            }
        }
    }
    out
}

/// Per wait slot: a `wait N` stalls for `max(0, latency − cycles since the last load in slot
/// N)`. The compatibility model reproduces metal-profiler instead: one slot for everything,
/// only `device_load`/`texture_*` count, and earlier stalls do not advance the clock.
fn memory_stalls(listing: &Listing, decoded: &[Decoded], options: AnalyzeOptions) -> Vec<f64> {
    let compat = options.model == CostModel::MetalProfilerCompat;
    let mut pending: Vec<(u32, f64)> = Vec::new();
    let mut clock = 0.0;
    let mut out = vec![0.0; decoded.len()];
    for (i, (inst, d)) in listing.instructions.iter().zip(decoded).enumerate() {
        let m = inst.base_mnemonic();
        let is_load = if compat {
            matches!(m, "device_load" | "texture_sample" | "texture_load")
        } else {
            is_device_load(m)
        };
        if is_load {
            let slot = if compat { 0 } else { d.slot.unwrap_or(0) };
            pending.retain(|(s, _)| *s != slot);
            pending.push((slot, clock));
        } else if m == "wait" {
            let slot = if compat { None } else { d.slot };
            let mut stall: f64 = 0.0;
            pending.retain(|&(s, issued)| {
                let waited = slot.is_none_or(|w| w == s);
                if waited {
                    stall = stall.max(options.load_latency - (clock - issued));
                }
                !waited
            });
            out[i] = stall.max(0.0);
            if !compat {
                clock += out[i];
            }
        }
        clock += d.cycles;
    }
    out
}

fn leading_slot(operands: &[Operand]) -> Option<u32> {
    match operands.first() {
        Some(Operand::Immediate { value }) => value.parse().ok(),
        _ => None,
    }
}

fn loop_report(
    l: &Loop,
    members: &[usize],
    listing: &Listing,
    decoded: &[Decoded],
    raw: &[f64],
    stalls: &[f64],
) -> LoopReport {
    let mut buckets = Buckets::default();
    let (mut count, mut device_loads, mut tg_loads, mut stores, mut waits) = (0, 0, 0, 0, 0);
    let (mut raw_sum, mut stall_sum) = (0.0, 0.0);
    for &i in members {
        let inst = &listing.instructions[i];
        count += 1;
        buckets.add(decoded[i].timing.unit, decoded[i].cycles);
        raw_sum += raw[i];
        stall_sum += stalls[i];
        let m = inst.base_mnemonic();
        if is_device_load(m) {
            device_loads += 1;
        } else if m.starts_with("threadgroup_load") || m.starts_with("local_load") {
            tg_loads += 1;
        } else if is_memory(m) && m.contains("store") {
            stores += 1;
        } else if m == "wait" {
            waits += 1;
        }
    }
    LoopReport {
        start: hex(l.start),
        end: hex(l.end),
        depth: l.depth,
        parent: l.parent,
        instructions: count,
        bottleneck: Bottleneck::judge(&buckets, raw_sum, stall_sum, device_loads),
        cycles_per_iteration: buckets.alu + raw_sum + stall_sum,
        buckets,
        raw_penalty: raw_sum,
        memory_stall: stall_sum,
        device_loads,
        threadgroup_loads: tg_loads,
        stores,
        waits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metal::listing::parse_listing;

    fn run(text: &str) -> Analysis {
        measure(&parse_listing(text), AnalyzeOptions::default())
    }

    #[test]
    fn raw_penalty_after_fp32_and_fp16() {
        let a = run("0: 00 fmul32 r1, r2, r3\n\
                     8: 00 fmul32 r4, r1, r3\n\
                     10: 00 fmul16 r5l, r6l, r6h\n\
                     18: 00 fadd16 r7l, r5l, r6l\n\
                     20: 00 iadd r8, r7l, 1\n\
                     28: 00 iadd r9, r8, 1\n");
        let p: Vec<f64> = a.instructions.iter().map(|i| i.raw_penalty).collect();
        assert_eq!(p, [0.0, 0.84, 0.0, 0.56, 0.56, 0.0]);
        assert!((a.raw_penalty - 1.96).abs() < 1e-9);
    }

    #[test]
    fn wait_stall_per_slot_with_latency_parameter() {
        let text = "0: 00 device_load 0, i32, x, r1, u0_u1, r2, unsigned\n\
                    8: 00 device_load 1, i32, x, r3, u0_u1, r2, unsigned\n\
                    10: 00 iadd r4, r5, 1\n\
                    18: 00 iadd r6, r5, 1\n\
                    20: 00 wait 1\n\
                    22: 00 wait 0\n";
        let a = measure(
            &parse_listing(text),
            AnalyzeOptions {
                load_latency: 10.0,
                ..AnalyzeOptions::default()
            },
        );
        let s: Vec<f64> = a.instructions.iter().map(|i| i.stall).collect();
        // Slot 1 waited 2 ALU cycles → 8 stall; slot 0 then has waited 2 + 8 = 10 → none.
        assert_eq!(s, [0.0, 0.0, 0.0, 0.0, 8.0, 0.0]);
        assert_eq!(a.memory_stall, 8.0);
    }

    #[test]
    fn ic_counts_twice_under_mesa() {
        let a = run("0: 00 imadd r1, r2, r3, 0\n8: 00 iadd r4, r1, 1\n");
        assert_eq!(
            (a.buckets.ic, a.buckets.scib, a.buckets.alu),
            (4.0, 1.0, 4.0)
        );
        assert_eq!(a.bottleneck, Bottleneck::IntegerComplex);
    }

    #[test]
    fn empty_listing_is_not_a_panic() {
        let a = run("");
        assert_eq!(a.instruction_count, 0);
        assert_eq!(a.highest_gpr, None);
        assert_eq!(a.occupancy.max_threads, Some(1024));
        assert_eq!(a.bottleneck, Bottleneck::ControlFlow);
    }
}
