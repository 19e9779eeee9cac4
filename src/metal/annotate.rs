//! Human-readable report: summary, loops, suggestions and the annotated listing.

use std::fmt::Write;

use super::analysis::{Analysis, Severity, hex};

/// Renders the report. `source` names the input in the header.
pub fn render(a: &Analysis, source: &str) -> String {
    let mut s = String::new();
    // Writing into a String cannot fail.
    let _ = write_report(&mut s, a, source);
    s
}

fn write_report(s: &mut String, a: &Analysis, source: &str) -> std::fmt::Result {
    writeln!(s, "AGX static analysis of {source}")?;
    writeln!(s, "  cost model:   {} (modelled, not measured)", a.model)?;
    writeln!(s, "  instructions: {}", a.instruction_count)?;
    for sec in &a.sections {
        writeln!(s, "    {:<40} {}", sec.name, sec.instructions)?;
    }
    let occ = &a.occupancy;
    writeln!(
        s,
        "  registers:    highest {} → {} half registers",
        a.highest_gpr.as_deref().unwrap_or("none"),
        occ.half_regs
    )?;
    match (occ.max_threads, occ.percent) {
        (Some(t), Some(p)) => writeln!(
            s,
            "  occupancy:    {t} threads/core ({p:.0}%), {}",
            occ.model
        )?,
        _ => writeln!(
            s,
            "  occupancy:    beyond the table (> 256 half registers), {}",
            occ.model
        )?,
    }
    let b = &a.buckets;
    writeln!(
        s,
        "  cycles:       F32 {:.1}  F16 {:.1}  SCIB {:.1}  IC {:.1}  → ALU max(F+SCIB {:.1}, IC {:.1}) = {:.1}",
        b.f32, b.f16, b.scib, b.ic, b.f_scib, b.ic, b.alu
    )?;
    writeln!(
        s,
        "  penalties:    RAW +{:.2} cycles; memory stalls ~{:.0} cycles (load latency {:.0}, estimate)",
        a.raw_penalty, a.memory_stall, a.load_latency
    )?;
    writeln!(
        s,
        "  other:        {} memory, {} control, {} untimed instructions",
        a.memory_instructions, a.control_instructions, a.untimed_instructions
    )?;
    writeln!(s, "  bottleneck:   {}", a.bottleneck.describe())?;
    for (n, l) in a.loops.iter().enumerate() {
        writeln!(
            s,
            "  loop {n}: [{}, {}] depth {}, {} instructions; per iteration ALU {:.1} + RAW {:.2} + stall {:.0} = {:.1} cycles; {}",
            l.start,
            l.end,
            l.depth,
            l.instructions,
            l.buckets.alu,
            l.raw_penalty,
            l.memory_stall,
            l.cycles_per_iteration,
            l.bottleneck.describe()
        )?;
    }
    if !a.suggestions.is_empty() {
        writeln!(s, "\nSuggestions")?;
        for sug in &a.suggestions {
            let tag = match sug.severity {
                Severity::High => "high",
                Severity::Medium => "medium",
                Severity::Low => "low",
            };
            writeln!(s, "  [{tag}] {}: {}", sug.kind, sug.message)?;
        }
    }
    for w in &a.warnings {
        writeln!(s, "warning: line {}: {} ({})", w.line, w.reason, w.text)?;
    }
    writeln!(
        s,
        "\nAnnotated listing (loop depth | offset | unit cycles | instruction | marks)"
    )?;
    let mut section = usize::MAX;
    for i in &a.instructions {
        if i.section != section {
            section = i.section;
            if let Some(sec) = a.sections.get(section) {
                writeln!(s, "{}:", sec.name)?;
            }
        }
        let depth = "|".repeat(i.loop_depth);
        let mut marks = String::new();
        if i.raw_penalty > 0.0 {
            let _ = write!(marks, " RAW +{:.2}", i.raw_penalty);
        }
        if i.stall > 0.0 {
            let _ = write!(marks, " STALL ~{:.0}", i.stall);
        }
        writeln!(
            s,
            "{depth:<3}{:>6}  {:<4} {:>4}  {:<16} {}{}",
            hex(i.offset),
            i.unit.as_str(),
            if i.cycles > 0.0 {
                format!("{:.0}", i.cycles)
            } else {
                String::new()
            },
            i.mnemonic,
            i.operands.join(", "),
            marks
        )?;
    }
    Ok(())
}
