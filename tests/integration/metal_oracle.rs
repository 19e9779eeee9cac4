//! Cross-check against metal-profiler 0.1.1 (PyPI, pure Python): the golden JSON files in
//! tests/fixtures/metal/oracle were written by scripts/metal-oracle.py running that wheel's
//! `parse_disassembly` + `analyze` on the same listings. The compatible parts must agree:
//! parsing, counts, its cost table in compatibility mode, its memory-stall rule, loops it finds,
//! and the occupancy table. Where it is known to be wrong (§1.5 of notes/metal.md) the test
//! asserts that polyprof differs.

use polyprof::metal::analysis::{Analysis, AnalyzeOptions};
use polyprof::metal::cost::CostModel;
use polyprof::metal::occupancy::g13_max_threads;
use polyprof::metal::{analyze_text, parse_listing};
use serde_json::Value;

const LISTINGS: [&str; 3] = [
    "applegpu_simple_call",
    "applegpu_simple_s32_index",
    "applegpu_simple_s32_unrolled_index",
];

fn load(name: &str) -> (String, Value) {
    let dir = format!("{}/tests/fixtures/metal", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(format!("{dir}/{name}.asm")).unwrap();
    let golden = std::fs::read_to_string(format!("{dir}/oracle/{name}.json")).unwrap();
    (text, serde_json::from_str(&golden).unwrap())
}

fn compat(text: &str) -> Analysis {
    analyze_text(
        text,
        AnalyzeOptions {
            model: CostModel::MetalProfilerCompat,
            load_latency: 200.0,
        },
    )
}

#[test]
fn parsing_matches_instruction_by_instruction() {
    for name in LISTINGS {
        let (text, golden) = load(name);
        let ours = parse_listing(&text).instructions;
        let theirs = golden["instructions"].as_array().unwrap();
        assert_eq!(ours.len(), theirs.len(), "{name}");
        assert_eq!(
            golden["total_instructions"].as_u64(),
            Some(ours.len() as u64)
        );
        for (o, t) in ours.iter().zip(theirs) {
            assert_eq!(Some(o.offset as u64), t["offset"].as_u64(), "{name}");
            assert_eq!(
                o.bytes,
                t["raw_bytes"].as_str().unwrap(),
                "{name} {:#x}",
                o.offset
            );
            assert_eq!(
                o.mnemonic,
                t["mnemonic"].as_str().unwrap(),
                "{name} {:#x}",
                o.offset
            );
            assert_eq!(
                o.operands.join(", "),
                t["operands"].as_str().unwrap(),
                "{name} {:#x}",
                o.offset
            );
        }
    }
}

#[test]
fn compatibility_model_reproduces_unit_cycles_and_stalls() {
    for name in LISTINGS {
        let (text, golden) = load(name);
        let a = compat(&text);
        let theirs = golden["instructions"].as_array().unwrap();
        for (o, t) in a.instructions.iter().zip(theirs) {
            let timing = CostModel::MetalProfilerCompat.timing(&o.mnemonic, false);
            assert_eq!(
                o.unit.as_str(),
                t["unit"].as_str().unwrap(),
                "{name} {:#x}",
                o.offset
            );
            assert_eq!(
                Some(timing.throughput),
                t["throughput"].as_f64(),
                "{name} {:#x}",
                o.offset
            );
            assert_eq!(
                Some(o.stall),
                t["wait_cycles"].as_f64(),
                "{name} {:#x}",
                o.offset
            );
        }
        assert_eq!(Some(a.buckets.f32), golden["f32_cycles"].as_f64(), "{name}");
        assert_eq!(Some(a.buckets.f16), golden["f16_cycles"].as_f64(), "{name}");
        assert_eq!(
            Some(a.buckets.scib),
            golden["scib_cycles"].as_f64(),
            "{name}"
        );
        assert_eq!(Some(a.buckets.ic), golden["ic_cycles"].as_f64(), "{name}");
        assert_eq!(
            Some(a.memory_instructions as u64),
            golden["mem_ops"].as_u64(),
            "{name}"
        );
        assert_eq!(
            Some(a.control_instructions as u64),
            golden["ctrl_ops"].as_u64(),
            "{name}"
        );
        assert_eq!(
            Some(a.memory_stall),
            golden["total_wait_cycles"].as_f64(),
            "{name}"
        );
    }
}

#[test]
fn mesa_model_doubles_ic_where_metal_profiler_does_not() {
    let (text, golden) = load("applegpu_simple_call");
    let mesa = analyze_text(&text, AnalyzeOptions::default());
    assert_eq!(golden["ic_cycles"].as_f64(), Some(4.0));
    assert_eq!(mesa.buckets.ic, 8.0);
}

#[test]
fn loops_it_finds_agree_and_the_one_it_misses_is_found() {
    for name in LISTINGS {
        let (text, golden) = load(name);
        let a = compat(&text);
        for l in golden["loops"].as_array().unwrap() {
            let start = l["start"].as_u64().unwrap();
            let end = l["end"].as_u64().unwrap();
            let ours = a
                .loops
                .iter()
                .find(|o| o.start == format!("{start:#x}"))
                .unwrap_or_else(|| panic!("{name}: loop at {start:#x} missing"));
            // Its end is the while_* compare; ours is the back-edge right after it.
            let body_end = a
                .instructions
                .iter()
                .find(|i| i.offset as u64 == end)
                .unwrap();
            assert!(body_end.mnemonic.starts_with("while_"));
            assert!(body_end.loop_depth == 1);
            assert_eq!(
                ours.instructions as u64,
                l["body_instructions"].as_u64().unwrap() + 1
            );
        }
    }
    let (text, golden) = load("applegpu_simple_call");
    assert!(
        golden["loops"].as_array().unwrap().is_empty(),
        "metal-profiler bug 5"
    );
    assert_eq!(compat(&text).loops.len(), 1);
}

#[test]
fn occupancy_table_is_the_same() {
    let dir = format!("{}/tests/fixtures/metal/oracle", env!("CARGO_MANIFEST_DIR"));
    let table: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{dir}/occupancy_for_regs.json")).unwrap(),
    )
    .unwrap();
    for h in 0..=256u32 {
        assert_eq!(
            g13_max_threads(h).map(u64::from),
            table[h.to_string()].as_u64(),
            "{h}"
        );
    }
}

#[test]
fn where_metal_profiler_is_wrong_polyprof_differs() {
    for name in LISTINGS {
        let (text, golden) = load(name);
        // Bug 1: sr80 read as r80.
        assert_eq!(golden["max_reg"].as_u64(), Some(80), "{name}");
        let ours = compat(&text);
        let highest: u64 = ours.highest_gpr.as_deref().unwrap()[1..].parse().unwrap();
        assert!(highest < 80, "{name}");
        let theirs = golden["instructions"].as_array().unwrap();
        for (o, t) in ours.instructions.iter().zip(theirs) {
            if o.mnemonic == "get_sr" {
                assert!(t["uses"].as_array().unwrap().iter().any(|u| u == "r80"));
                assert!(o.uses.is_empty());
            }
            // Bug 3: tuple destinations, only the first member counted as written.
            if o.mnemonic == "stack_load" && o.operands[0].contains('_') {
                assert_eq!(t["defs"].as_array().unwrap().len(), 1);
                assert_eq!(o.defs.len(), 2);
            }
            // Bug 4: stack_store's first register counted as a definition.
            if o.mnemonic == "stack_store" {
                assert!(!t["defs"].as_array().unwrap().is_empty());
                assert!(o.defs.is_empty());
            }
        }
    }
}
