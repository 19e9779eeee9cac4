//! Operand grammar and per-mnemonic operand roles for applegpu text.
//!
//! A token grammar, not a register regex over the whole operand string: `sr80` is a special
//! register, `u32_to_f` is a conversion mode, `r0_r1_r2_r3` defines four registers, and stores,
//! jumps, waits and barriers have no destination. These are the mistakes metal-profiler 0.1.1
//! makes (notes/metal.md §1.5) and the tests below pin each one.

use serde::Serialize;

/// Register file of a register operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RegFile {
    /// General-purpose register `rN`.
    Gpr,
    /// Uniform register `uN`.
    Uniform,
}

/// Which part of a 32-bit register an operand names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    Full,
    Low,
    High,
}

/// One register (a tuple operand expands to several).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Reg {
    pub file: RegFile,
    pub index: u32,
    pub part: Part,
}

impl Reg {
    /// Half-register slots this register occupies, as `2·index (+1 for the high half)`.
    pub fn half_slots(&self) -> impl Iterator<Item = u32> {
        let base = self.index * 2;
        let (lo, hi) = match self.part {
            Part::Full => (base, base + 1),
            Part::Low => (base, base),
            Part::High => (base + 1, base + 1),
        };
        lo..=hi
    }

    /// True for 16-bit halves, which carry the smaller read-after-write penalty.
    pub fn is_half(&self) -> bool {
        self.part != Part::Full
    }
}

impl std::fmt::Display for Reg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = match self.file {
            RegFile::Gpr => 'r',
            RegFile::Uniform => 'u',
        };
        let part = match self.part {
            Part::Full => "",
            Part::Low => "l",
            Part::High => "h",
        };
        write!(f, "{file}{}{part}", self.index)
    }
}

/// A classified operand.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Operand {
    /// Registers, with flags such as `cache`/`discard` (the `$` cryptic prefix reads as `cache`).
    Registers { regs: Vec<Reg>, flags: Vec<String> },
    /// Special register `srN (name)`: read-only hardware state, not a GPR.
    Special { index: u32, name: Option<String> },
    /// Texture, sampler or coefficient state (`ts0`, `ss1`, `cf2`).
    State { text: String },
    /// A number: decimal, hex, binary or float.
    Immediate { value: String },
    /// A branch target, absolute (`0x74`) or relative (`pc-8`) resolved against the pc.
    Target { address: i64 },
    /// A word such as a condition (`ugt`), format (`i32`), mask (`xy`) or mode (`u32_to_f`).
    Word { text: String },
}

/// Classifies one operand. `pc` resolves relative `pc±N` targets.
pub fn classify(text: &str, pc: u32) -> Operand {
    let text = text.trim();
    if let Some(sr) = special_register(text) {
        return sr;
    }
    if let Some(rel) = text.strip_prefix("pc")
        && let Some(address) = signed_number(rel)
    {
        return Operand::Target {
            address: pc as i64 + address,
        };
    }
    let (cryptic, body) = match text.strip_prefix('$') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let mut pieces = body.split('.');
    let base = pieces.next().unwrap_or("");
    let mut flags: Vec<String> = pieces.map(str::to_string).collect();
    if let Some(regs) = register_tuple(base) {
        if cryptic {
            flags.insert(0, "cache".to_string());
        }
        return Operand::Registers { regs, flags };
    }
    if is_state(base) {
        return Operand::State {
            text: text.to_string(),
        };
    }
    if is_number(text) {
        return Operand::Immediate {
            value: text.to_string(),
        };
    }
    Operand::Word {
        text: text.to_string(),
    }
}

/// The absolute address of a branch target operand (`0x74` or `pc-8`).
pub fn target_address(text: &str, pc: u32) -> Option<i64> {
    let t = text.trim();
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return i64::from_str_radix(hex, 16).ok();
    }
    match classify(t, pc) {
        Operand::Target { address } => Some(address),
        _ => None,
    }
}

fn special_register(text: &str) -> Option<Operand> {
    let rest = text.strip_prefix("sr")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        return None;
    }
    let tail = rest[digits.len()..].trim();
    let name = if tail.is_empty() {
        None
    } else {
        Some(tail.strip_prefix('(')?.strip_suffix(')')?.to_string())
    };
    Some(Operand::Special {
        index: digits.parse().ok()?,
        name,
    })
}

/// `r3`, `r3l`, `u0_u1`, `r0_r1_r2_r3`, `r2l_r2h`: every member must be a register, so
/// `u32_to_f` (a conversion mode) is rejected.
fn register_tuple(base: &str) -> Option<Vec<Reg>> {
    base.split('_').map(single_register).collect()
}

fn single_register(token: &str) -> Option<Reg> {
    let mut chars = token.chars();
    let file = match chars.next()? {
        'r' => RegFile::Gpr,
        'u' => RegFile::Uniform,
        _ => return None,
    };
    let rest = chars.as_str();
    let (digits, part) = match rest.strip_suffix('l') {
        Some(d) => (d, Part::Low),
        None => match rest.strip_suffix('h') {
            Some(d) => (d, Part::High),
            None => (rest, Part::Full),
        },
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Reg {
        file,
        index: digits.parse().ok()?,
        part,
    })
}

fn is_state(base: &str) -> bool {
    ["ts", "ss", "cf"].iter().any(|p| {
        base.strip_prefix(p)
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    })
}

fn is_number(text: &str) -> bool {
    let t = text.strip_prefix('-').unwrap_or(text);
    if let Some(hex) = t.strip_prefix("0x") {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    if let Some(bin) = t.strip_prefix("0b") {
        return !bin.is_empty() && bin.bytes().all(|b| b == b'0' || b == b'1');
    }
    t.parse::<f64>().is_ok()
}

fn signed_number(text: &str) -> Option<i64> {
    let (sign, digits) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => return None,
    };
    let value = match digits.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<i64>().ok()?,
    };
    Some(sign * value)
}

/// What an instruction does with its register operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The first register operand is written, the rest are read (ALU ops, loads).
    DestinationFirst,
    /// Every register operand is read (stores, jumps, waits, barriers, calls).
    NoDestination,
    /// Execution-mask control (`if_*`, `while_*`, `pop_exec`…): `r0l` is the mask nesting
    /// counter, not data; the other registers are read.
    ExecMask,
}

/// The operand role of a mnemonic (the base, without dotted modifiers). Unknown mnemonics are
/// treated as ALU ops (destination first), which is what every unlisted applegpu op is.
pub fn role_of(base_mnemonic: &str) -> Role {
    match base_mnemonic {
        "device_store"
        | "threadgroup_store"
        | "local_store"
        | "stack_store"
        | "uniform_store"
        | "async_store"
        | "image_write"
        | "jmp_exec_any"
        | "jmp_exec_none"
        | "call"
        | "ret"
        | "wait"
        | "stop"
        | "trap"
        | "threadgroup_barrier"
        | "memory_barrier"
        | "stack_adjust"
        | "no_op"
        | "nop"
        | "device_store_unknown" => Role::NoDestination,
        m if is_exec_mask_op(m) => Role::ExecMask,
        _ => Role::DestinationFirst,
    }
}

fn is_exec_mask_op(m: &str) -> bool {
    m.starts_with("if_")
        || m.starts_with("else_")
        || m.starts_with("while_")
        || matches!(m, "pop_exec" | "push_exec" | "update_exec")
}

/// Registers written and read by one instruction.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Access {
    pub defs: Vec<Reg>,
    pub uses: Vec<Reg>,
    /// Every register mentioned, including the exec-mask counter (for the high-water mark).
    pub all: Vec<Reg>,
}

/// Applies `role` to classified operands.
pub fn access(role: Role, operands: &[Operand]) -> Access {
    let mut out = Access::default();
    let mut dest_taken = role != Role::DestinationFirst;
    for op in operands {
        let Operand::Registers { regs, .. } = op else {
            continue;
        };
        out.all.extend(regs.iter().copied());
        if !dest_taken {
            out.defs.extend(regs.iter().copied());
            dest_taken = true;
            continue;
        }
        for reg in regs {
            let exec_counter = role == Role::ExecMask
                && reg.file == RegFile::Gpr
                && reg.index == 0
                && reg.part == Part::Low;
            if !exec_counter {
                out.uses.push(*reg);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regs(list: &[(RegFile, u32, Part)]) -> Vec<Reg> {
        list.iter()
            .map(|&(file, index, part)| Reg { file, index, part })
            .collect()
    }

    fn acc(mnemonic: &str, ops: &[&str]) -> Access {
        let ops: Vec<Operand> = ops.iter().map(|o| classify(o, 0x100)).collect();
        access(role_of(mnemonic), &ops)
    }

    #[test]
    fn sr80_is_a_special_register_not_r80() {
        let op = classify("sr80 (thread_position_in_grid.x)", 0);
        assert_eq!(
            op,
            Operand::Special {
                index: 80,
                name: Some("thread_position_in_grid.x".into())
            }
        );
        let a = acc("get_sr", &["r2", "sr80 (thread_position_in_grid.x)"]);
        assert_eq!(a.defs.len(), 1);
        assert!(a.uses.is_empty());
        assert_eq!(a.all.iter().map(|r| r.index).max(), Some(2));
    }

    #[test]
    fn conversion_mode_is_a_word_not_u32() {
        assert_eq!(
            classify("u32_to_f", 0),
            Operand::Word {
                text: "u32_to_f".into()
            }
        );
        let a = acc("convert", &["u32_to_f", "r11.cache", "r1", "rte"]);
        assert_eq!(
            a.defs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["r11"]
        );
        assert_eq!(
            a.uses.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["r1"]
        );
        assert!(matches!(classify("s32_to_f", 0), Operand::Word { .. }));
    }

    #[test]
    fn tuples_define_every_member() {
        let a = acc("stack_load", &["r26l_r26h", "i16", "xy", "0", "0"]);
        assert_eq!(a.defs.len(), 2);
        let a = acc(
            "device_load",
            &["0", "i32", "xyzw", "r0_r1_r2_r3", "u2_u3", "r5", "unsigned"],
        );
        assert_eq!(
            a.defs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["r0", "r1", "r2", "r3"]
        );
        assert_eq!(
            a.uses.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["u2", "u3", "r5"]
        );
    }

    #[test]
    fn stores_jumps_waits_and_barriers_have_no_destination() {
        for (m, ops) in [
            ("stack_store", vec!["i32", "xyzw", "r5_r6_r7_r8", "r2", "0"]),
            (
                "uniform_store",
                vec!["2", "i16", "pair", "0", "r1l_r1h", "4", "0"],
            ),
            (
                "device_store",
                vec!["0", "i32", "x", "r1", "u0_u1", "r2", "unsigned", "0"],
            ),
            ("jmp_exec_any", vec!["0x74"]),
            ("wait", vec!["0"]),
            ("threadgroup_barrier", vec![]),
            ("ret", vec!["r1"]),
        ] {
            let a = acc(m, &ops);
            assert!(a.defs.is_empty(), "{m} has no destination");
        }
        let a = acc("stack_store", &["i32", "xyzw", "r5_r6_r7_r8", "r2", "0"]);
        assert_eq!(a.uses.len(), 5);
    }

    #[test]
    fn exec_mask_counter_is_not_data() {
        let a = acc("while_icmp", &["r0l", "nueq", "r5", "u2l", "2"]);
        assert!(a.defs.is_empty());
        assert_eq!(
            a.uses.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["r5", "u2l"]
        );
        assert_eq!(a.all.len(), 3);
    }

    #[test]
    fn halves_flags_and_cryptic_form() {
        assert_eq!(
            classify("$r2", 0),
            Operand::Registers {
                regs: regs(&[(RegFile::Gpr, 2, Part::Full)]),
                flags: vec!["cache".into()]
            }
        );
        assert_eq!(
            classify("r3h.discard.neg", 0),
            Operand::Registers {
                regs: regs(&[(RegFile::Gpr, 3, Part::High)]),
                flags: vec!["discard".into(), "neg".into()]
            }
        );
        let half = Reg {
            file: RegFile::Gpr,
            index: 3,
            part: Part::High,
        };
        assert_eq!(half.half_slots().collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn immediates_targets_state_and_words() {
        assert!(matches!(classify("0b0", 0), Operand::Immediate { .. }));
        assert!(matches!(classify("0.5", 0), Operand::Immediate { .. }));
        assert!(matches!(classify("-8", 0), Operand::Immediate { .. }));
        assert!(matches!(classify("ts1", 0), Operand::State { .. }));
        assert!(matches!(classify("lsl 2", 0), Operand::Word { .. }));
        assert!(matches!(classify("rte", 0), Operand::Word { .. }));
        assert_eq!(classify("pc-8", 0x20), Operand::Target { address: 0x18 });
        assert_eq!(target_address("0xA8", 0), Some(0xa8));
        assert_eq!(target_address("pc+0x10", 0x20), Some(0x30));
        assert_eq!(target_address("r1", 0), None);
    }
}
