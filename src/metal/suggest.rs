//! Suggestions with severity, derived from an [`Analysis`]. Each rule names the model figure
//! that triggered it, so a reader can judge how much to trust it.

use super::analysis::{Analysis, Severity, Suggestion, hex};
use super::cost::Unit;

/// Below this many ALU cycles per iteration a loop cannot hide a load (metal-profiler's rule).
const UNROLL_ALU_CYCLES: f64 = 10.0;
/// A wait stalling longer than this is worth restructuring around.
const LONG_STALL_CYCLES: f64 = 100.0;

pub fn suggestions(a: &Analysis) -> Vec<Suggestion> {
    let mut out = Vec::new();
    for (n, l) in a.loops.iter().enumerate() {
        let at = Some(l.start.clone());
        if l.device_loads > 0 && l.threadgroup_loads == 0 {
            let severe = l.memory_stall > 2.0 * l.buckets.alu;
            out.push(Suggestion {
                severity: if severe {
                    Severity::High
                } else {
                    Severity::Medium
                },
                kind: "tile-threadgroup",
                at: at.clone(),
                message: format!(
                    "loop {n} ({}..{}) loads device memory {} time(s) per iteration and never \
                     threadgroup memory (~{:.0} stall vs {:.0} ALU cycles): tile the data into \
                     threadgroup memory and reuse it across iterations",
                    l.start, l.end, l.device_loads, l.memory_stall, l.buckets.alu
                ),
            });
        }
        if l.memory_stall > 0.0 && l.buckets.alu < UNROLL_ALU_CYCLES {
            out.push(Suggestion {
                severity: Severity::Medium,
                kind: "unroll",
                at: at.clone(),
                message: format!(
                    "loop {n} has only {:.0} ALU cycles per iteration to cover a load: unroll it \
                     or interleave independent work before the wait",
                    l.buckets.alu
                ),
            });
        }
    }

    // Runs of consecutive penalized instructions are dependency chains.
    let mut run: Vec<usize> = Vec::new();
    for i in 0..=a.instructions.len() {
        let penalized = a.instructions.get(i).is_some_and(|x| x.raw_penalty > 0.0);
        if penalized {
            run.push(i);
            continue;
        }
        if run.len() >= 2 {
            let first = &a.instructions[run[0]];
            let total: f64 = run.iter().map(|&j| a.instructions[j].raw_penalty).sum();
            out.push(Suggestion {
                severity: Severity::Medium,
                kind: "break-dependency-chain",
                at: Some(hex(first.offset)),
                message: format!(
                    "{} back-to-back dependent instructions from {} cost +{total:.2} cycles of \
                     read-after-write penalty: interleave independent operations (more \
                     accumulators) to break the chain",
                    run.len() + 1,
                    hex(first.offset)
                ),
            });
        }
        run.clear();
    }

    for inst in a.instructions.iter().filter(|i| i.loop_depth > 0) {
        let base = inst.mnemonic.split('.').next().unwrap_or("");
        let simd = base.starts_with("simd_reduce") || base.starts_with("simd_prefix");
        if simd || matches!(base, "rcp" | "rsqrt" | "rsqrt_special" | "srsqrt") {
            out.push(Suggestion {
                severity: if simd {
                    Severity::High
                } else {
                    Severity::Medium
                },
                kind: "hoist-expensive",
                at: Some(hex(inst.offset)),
                message: format!(
                    "{} inside a loop costs {:.0} cycles per iteration: hoist it out if its \
                     inputs are loop-invariant, or accumulate per thread and reduce once",
                    inst.mnemonic, inst.cycles
                ),
            });
        }
    }

    for inst in a
        .instructions
        .iter()
        .filter(|i| i.stall > LONG_STALL_CYCLES)
    {
        out.push(Suggestion {
            severity: Severity::Medium,
            kind: "hide-load-latency",
            at: Some(hex(inst.offset)),
            message: format!(
                "wait at {} stalls ~{:.0} cycles (load latency {:.0}): issue the load earlier \
                 or schedule independent ALU work between the load and the wait",
                hex(inst.offset),
                inst.stall,
                a.load_latency
            ),
        });
    }

    let occ = &a.occupancy;
    let (severity, pct) = match occ.percent {
        None => (Some(Severity::High), 0.0),
        Some(p) if p < 50.0 => (Some(Severity::High), p),
        Some(p) if p < 75.0 => (Some(Severity::Medium), p),
        Some(p) => (None, p),
    };
    if let Some(severity) = severity {
        out.push(Suggestion {
            severity,
            kind: "reduce-registers",
            at: None,
            message: format!(
                "{} half registers allow {} threads per core ({pct:.0}%, {}): shorten live \
                 ranges, use fewer temporaries or 16-bit values",
                occ.half_regs,
                occ.max_threads.map_or("no".to_string(), |t| t.to_string()),
                occ.model
            ),
        });
    }

    let f32_ops = a
        .instructions
        .iter()
        .filter(|i| i.unit == Unit::F32)
        .count();
    let f16_ops = a
        .instructions
        .iter()
        .filter(|i| i.unit == Unit::F16)
        .count();
    if f32_ops > 4 && f16_ops == 0 {
        out.push(Suggestion {
            severity: Severity::Low,
            kind: "consider-fp16",
            at: None,
            message: format!(
                "all {f32_ops} float operations are FP32: where precision allows, FP16 halves \
                 register use and has the smaller dependency penalty"
            ),
        });
    }
    out.sort_by_key(|s| s.severity);
    out
}

#[cfg(test)]
mod tests {
    use crate::metal::analysis::AnalyzeOptions;
    use crate::metal::analyze;
    use crate::metal::listing::parse_listing;

    fn kinds(text: &str) -> Vec<&'static str> {
        analyze(&parse_listing(text), AnalyzeOptions::default())
            .suggestions
            .iter()
            .map(|s| s.kind)
            .collect()
    }

    #[test]
    fn memory_bound_loop_suggests_tiling_and_unrolling() {
        let k = kinds(
            "0: 00 device_load 0, i32, x, r1, u0_u1, r2, unsigned\n\
             8: 00 wait 0\n\
             a: 00 fadd32 r3, r3, r1\n\
             10: 00 jmp_exec_any 0x0\n",
        );
        assert_eq!(k, ["tile-threadgroup", "unroll", "hide-load-latency"]);
    }

    #[test]
    fn chains_fp32_registers_and_expensive_ops() {
        let mut text = String::new();
        for i in 0..6 {
            text.push_str(&format!("{:x}: 00 fmadd32 r1, r1, r2, r3\n", i * 8));
        }
        text.push_str("30: 00 rcp r4, r1\n38: 00 mov_imm r120, 0\n40: 00 jmp_exec_any 0x0\n");
        let k = kinds(&text);
        assert_eq!(
            k,
            [
                "reduce-registers",
                "break-dependency-chain",
                "hoist-expensive",
                "consider-fp16"
            ]
        );
    }

    #[test]
    fn quiet_listing_has_no_suggestions() {
        assert!(kinds("0: 00 iadd r1, r2, 1\n8: 00 stop\n").is_empty());
    }
}
