//! The static AGX lane on the real applegpu listings (tests/fixtures/metal, from
//! marysaka/applegpu), through the library and through the `polyprof metal analyze` binary.

use assert_cmd::Command;
use polyprof::metal::analysis::{Analysis, AnalyzeOptions};
use polyprof::metal::{analyze_text, parse_listing};

const CALL: &str = include_str!("../fixtures/metal/applegpu_simple_call.asm");
const INDEX: &str = include_str!("../fixtures/metal/applegpu_simple_s32_index.asm");
const UNROLLED: &str = include_str!("../fixtures/metal/applegpu_simple_s32_unrolled_index.asm");

fn analysis(text: &str) -> Analysis {
    analyze_text(text, AnalyzeOptions::default())
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/metal/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Highest `r` index by the mechanical rule of notes/metal.md §13.1 (any `r<digits>` token,
/// `$` prefix and `l`/`h` suffix allowed, `sr…` excluded), computed independently of the parser.
fn mechanical_highest_gpr(text: &str) -> u32 {
    let mut best = 0;
    for line in text.lines() {
        let Some((_, rest)) = line.split_once(':') else {
            continue;
        };
        let bytes = rest.as_bytes();
        for i in 0..bytes.len() {
            let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric());
            if bytes[i] == b'r' && boundary {
                let digits: String = rest[i + 1..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                if let Ok(n) = digits.parse::<u32>() {
                    best = best.max(n);
                }
            }
        }
    }
    best
}

#[test]
fn instruction_counts_per_section_and_file() {
    let a = analysis(CALL);
    assert_eq!(a.instruction_count, 61);
    let sections: Vec<(&str, usize)> = a
        .sections
        .iter()
        .map(|s| (s.name.as_str(), s.instructions))
        .collect();
    assert_eq!(
        sections,
        [
            ("compute l__Z6helperPU9MTLdeviceKjj", 46),
            ("compute shader", 15)
        ]
    );
    assert_eq!(analysis(INDEX).instruction_count, 52);
    assert_eq!(analysis(UNROLLED).instruction_count, 94);
    for text in [CALL, INDEX, UNROLLED] {
        let counted = text
            .lines()
            .filter(|l| {
                l.trim_start()
                    .split_once(": ")
                    .is_some_and(|(h, _)| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
            })
            .count();
        assert_eq!(analysis(text).instruction_count, counted);
        assert!(parse_listing(text).warnings.is_empty());
    }
}

#[test]
fn highest_register_and_g13_occupancy() {
    for (text, reg, halfregs, threads) in [
        (CALL, "r26", 54, 1024),
        (INDEX, "r19", 40, 1024),
        (UNROLLED, "r66", 134, 768),
    ] {
        let a = analysis(text);
        assert_eq!(a.highest_gpr.as_deref(), Some(reg));
        assert_eq!(format!("r{}", mechanical_highest_gpr(text)), reg);
        assert_eq!(a.occupancy.half_regs, halfregs);
        assert_eq!(a.occupancy.max_threads, Some(threads));
        assert!(a.occupancy.model.starts_with("G13 model"));
    }
}

#[test]
fn loops_from_back_edges() {
    let a = analysis(CALL);
    // while_icmp at 0xba, a mov_imm at 0xc0, the back-jump at 0xc4: still one loop.
    let ranges: Vec<(&str, &str, usize)> = a
        .loops
        .iter()
        .map(|l| (l.start.as_str(), l.end.as_str(), l.depth))
        .collect();
    assert_eq!(ranges, [("0x74", "0xc4", 1)]);
    assert_eq!(a.loops[0].device_loads, 1);
    let inside: Vec<u32> = a
        .instructions
        .iter()
        .filter(|i| i.loop_depth == 1)
        .map(|i| i.offset)
        .collect();
    assert_eq!(inside.first(), Some(&0x74));
    assert_eq!(inside.last(), Some(&0xc4));
    // The loop body before the while_icmp is in the loop (metal-profiler's bug 6).
    assert!(
        a.instructions
            .iter()
            .any(|i| i.offset == 0x7c && i.loop_depth == 1)
    );

    let a = analysis(INDEX);
    let ranges: Vec<(&str, &str)> = a
        .loops
        .iter()
        .map(|l| (l.start.as_str(), l.end.as_str()))
        .collect();
    assert_eq!(ranges, [("0x26", "0x134")]);
    assert_eq!(a.loops[0].instructions, 35);
    assert!(analysis(UNROLLED).loops.is_empty());
}

#[test]
fn python_tool_mistakes_are_not_repeated() {
    for text in [CALL, INDEX, UNROLLED] {
        let a = analysis(text);
        for i in &a.instructions {
            // sr80 is never a register use.
            assert!(!i.uses.iter().chain(&i.defs).any(|r| r == "r80"), "{i:?}");
            // Conversion modes are never registers.
            assert!(!i.defs.iter().any(|r| r == "u32" || r == "s32"), "{i:?}");
            // Stores and jumps write nothing.
            if i.mnemonic.contains("store") || i.mnemonic.starts_with("jmp") || i.mnemonic == "wait"
            {
                assert!(i.defs.is_empty(), "{i:?}");
            }
        }
    }
    let a = analysis(INDEX);
    let convert = a
        .instructions
        .iter()
        .find(|i| i.mnemonic == "convert")
        .unwrap();
    assert_eq!(
        (convert.defs.as_slice(), convert.uses.as_slice()),
        (&["r1".to_string()][..], &["r1".to_string()][..])
    );
    let store = a.instructions.iter().find(|i| i.offset == 0x5e).unwrap();
    assert_eq!(store.uses, ["r5", "r6", "r7", "r8", "r2"]);
    let call = analysis(CALL);
    let load = call.instructions.iter().find(|i| i.offset == 0xe4).unwrap();
    assert_eq!(load.defs, ["r26l", "r26h"]);
}

#[test]
fn costs_follow_mesa() {
    let a = analysis(CALL);
    let imadd = a.instructions.iter().find(|i| i.offset == 0x74).unwrap();
    assert_eq!((imadd.unit.as_str(), imadd.cycles), ("IC", 4.0));
    assert_eq!(a.buckets.ic, 8.0);
    assert_eq!(a.loops[0].buckets.ic, 8.0);
    // Two device_load + wait pairs with nothing in between: a full stall each.
    let stalls: Vec<(u32, f64)> = a
        .instructions
        .iter()
        .filter(|i| i.stall > 0.0)
        .map(|i| (i.offset, i.stall))
        .collect();
    assert_eq!(stalls[..2], [(0x4e, 200.0), (0xaa, 200.0)]);
    let kinds: Vec<&str> = a.suggestions.iter().map(|s| s.kind).collect();
    assert_eq!(kinds[0], "tile-threadgroup");
    assert!(kinds.contains(&"unroll"));
    let u = analysis(UNROLLED);
    assert!(
        u.suggestions.iter().all(|s| s.kind != "reduce-registers"),
        "75% is not below 75%"
    );
}

#[test]
fn older_cryptic_form_and_odd_lines() {
    // Lines in the older `$r` form described for dougallj/applegpu's README sample, plus a
    // failed decode, a blank line and padding.
    let text = "   0: 0611c0000100  fmul  $r2, r0.discard, 0.5\n\
                \n\
                   6: 0000  <disassembly failed>\n\
                   8: 9a25a4e02a00  rcp  r1, $r1.discard\n\
                   e: 4529000e00c01200  uniform_store 2, i16, pair, 0, r1l_r1h, 4, 0\n\
                  16: 00c0f0ffffff  some_future_op  r3, r4, r5, r6, r7, extra\n";
    let a = analysis(text);
    assert_eq!(a.instruction_count, 4);
    assert_eq!(a.warnings.len(), 1);
    assert_eq!(a.instructions[0].unit.as_str(), "F32");
    assert_eq!(a.instructions[1].unit.as_str(), "IC");
    assert!(a.instructions[2].defs.is_empty());
    assert_eq!(a.instructions[3].unit.as_str(), "-");
    assert_eq!(a.instructions[3].uses.len(), 4);
}

#[test]
fn cli_analyze_text_and_json() {
    let out = Command::cargo_bin("polyprof")
        .unwrap()
        .args(["metal", "analyze", &fixture("applegpu_simple_call.asm")])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("instructions: 61"), "{text}");
    assert!(text.contains("highest r26 → 54 half registers"), "{text}");
    assert!(text.contains("loop 0: [0x74, 0xc4]"), "{text}");
    assert!(text.contains("[high] tile-threadgroup"), "{text}");
    assert!(
        text.contains("|    0x74  IC      4  imadd            r26, r13.cache, 69, 0"),
        "{text}"
    );

    let out = Command::cargo_bin("polyprof")
        .unwrap()
        .args([
            "metal",
            "analyze",
            "--json",
            &fixture("applegpu_simple_s32_unrolled_index.asm"),
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["instruction_count"], 94);
    assert_eq!(json["highest_gpr"], "r66");
    assert_eq!(json["occupancy"]["half_regs"], 134);
    assert_eq!(json["occupancy"]["max_threads"], 768);
    assert_eq!(json["model"], "mesa-agx-g13g-crude@11f797d");
    assert_eq!(json["instructions"].as_array().unwrap().len(), 94);
}

#[test]
fn cli_analyze_bad_input() {
    Command::cargo_bin("polyprof")
        .unwrap()
        .args(["metal", "analyze", "/nonexistent/listing.asm"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot read listing"));
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.asm");
    std::fs::write(&junk, b"\xff\xfe\0\0 not a listing\n").unwrap();
    Command::cargo_bin("polyprof")
        .unwrap()
        .args(["metal", "analyze", "--json"])
        .arg(&junk)
        .assert()
        .success()
        .stderr(predicates::str::contains("no instructions found"));
}
