//! Parser for applegpu disassembly text (dougallj/applegpu's `disassemble.py` and
//! `compiler_explorer.py` output): `offset: hex  mnemonic operands`, with section headers.
//!
//! Tolerant by design: applegpu's output drifts between versions (extra operands, renamed
//! mnemonics, the older `$r2` cryptic form), so unknown mnemonics and any operand count are
//! accepted; lines that are neither instructions nor headers become warnings, never errors.

use serde::Serialize;

/// One decoded instruction as the listing prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Instruction {
    /// Byte offset (the listing's hex pc).
    pub offset: u32,
    /// Instruction bytes as printed (lowercase hex).
    pub bytes: String,
    /// Mnemonic including dotted modifiers, e.g. `iadd.sat`.
    pub mnemonic: String,
    /// Operands as printed, split at top-level commas and trimmed.
    pub operands: Vec<String>,
    /// Index of the section (into [`Listing::sections`]) the instruction belongs to.
    pub section: usize,
    /// 1-based line number in the input.
    pub line: usize,
}

impl Instruction {
    /// The mnemonic without dotted modifiers (`iadd.sat` → `iadd`).
    pub fn base_mnemonic(&self) -> &str {
        self.mnemonic.split('.').next().unwrap_or(&self.mnemonic)
    }

    /// Size in bytes, from the printed hex.
    pub fn size(&self) -> u32 {
        (self.bytes.len() / 2) as u32
    }
}

/// A shader section (`compute shader:`, `compute <symbol>:`, `shader prolog:`…).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    /// The header without its trailing colon; `(no header)` for instructions before any header.
    pub name: String,
    /// Indices into [`Listing::instructions`], half-open.
    pub start: usize,
    pub end: usize,
}

/// A line that was kept out of the instruction list, with the reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineWarning {
    pub line: usize,
    pub text: String,
    pub reason: String,
}

/// A parsed listing.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Listing {
    pub sections: Vec<Section>,
    pub instructions: Vec<Instruction>,
    /// `<disassembly failed>` lines and lines that could not be read.
    pub warnings: Vec<LineWarning>,
}

/// The name given to instructions that appear before any header.
pub const NO_HEADER: &str = "(no header)";

/// Parses a whole listing. Never fails: unreadable lines are reported in `warnings`.
pub fn parse_listing(text: &str) -> Listing {
    let mut listing = Listing::default();
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        match classify(line) {
            Line::Header(name) => {
                close_section(&mut listing);
                let start = listing.instructions.len();
                listing.sections.push(Section {
                    name: name.to_string(),
                    start,
                    end: start,
                });
            }
            Line::Instruction {
                offset,
                bytes,
                rest,
            } => {
                if rest.starts_with('<') {
                    listing.warnings.push(LineWarning {
                        line: line_no,
                        text: line.to_string(),
                        reason: format!(
                            "the disassembler could not decode the bytes at {offset:#x}"
                        ),
                    });
                    continue;
                }
                if listing.sections.is_empty() {
                    listing.sections.push(Section {
                        name: NO_HEADER.to_string(),
                        start: 0,
                        end: 0,
                    });
                }
                let (mnemonic, operand_text) = match rest.split_once(char::is_whitespace) {
                    Some((m, o)) => (m, o.trim()),
                    None => (rest, ""),
                };
                listing.instructions.push(Instruction {
                    offset,
                    bytes: bytes.to_ascii_lowercase(),
                    mnemonic: mnemonic.to_string(),
                    operands: split_operands(operand_text),
                    section: listing.sections.len() - 1,
                    line: line_no,
                });
            }
            Line::Other => listing.warnings.push(LineWarning {
                line: line_no,
                text: line.chars().take(200).collect(),
                reason: "neither an instruction (`offset: hex mnemonic …`) nor a section header"
                    .to_string(),
            }),
        }
    }
    close_section(&mut listing);
    listing
}

fn close_section(listing: &mut Listing) {
    let count = listing.instructions.len();
    if let Some(last) = listing.sections.last_mut() {
        last.end = count;
    }
}

enum Line<'a> {
    Header(&'a str),
    Instruction {
        offset: u32,
        bytes: &'a str,
        rest: &'a str,
    },
    Other,
}

fn classify(line: &str) -> Line<'_> {
    if let Some((head, tail)) = line.split_once(':') {
        let head = head.trim();
        if !head.is_empty()
            && head.len() <= 8
            && head.bytes().all(|b| b.is_ascii_hexdigit())
            && let Ok(offset) = u32::from_str_radix(head, 16)
        {
            let tail = tail.trim_start();
            let (bytes, rest) = match tail.split_once(char::is_whitespace) {
                Some((b, r)) => (b, r.trim()),
                None => (tail, ""),
            };
            let hex_ok = !bytes.is_empty()
                && bytes.len() % 2 == 0
                && bytes.bytes().all(|b| b.is_ascii_hexdigit());
            if hex_ok && !rest.is_empty() {
                return Line::Instruction {
                    offset,
                    bytes,
                    rest,
                };
            }
            return Line::Other;
        }
    }
    // Headers are short lines ending in a colon with no instruction shape.
    match line.strip_suffix(':') {
        Some(name) if !name.is_empty() && !name.contains(':') => Line::Header(name.trim()),
        _ => Line::Other,
    }
}

/// Splits at commas outside parentheses (`sr80 (thread_position_in_grid.x)` stays whole).
fn split_operands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(text[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = text[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last.to_string());
    }
    out.retain(|o| !o.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_real_lines_and_headers() {
        let text = "compute shader:\n\
             194: 72091004             get_sr           r2, sr80 (thread_position_in_grid.x)\n\
              1ca: 8800                 stop             \n\n";
        let l = parse_listing(text);
        assert_eq!(l.sections.len(), 1);
        assert_eq!(l.sections[0].name, "compute shader");
        assert_eq!((l.sections[0].start, l.sections[0].end), (0, 2));
        let i = &l.instructions[0];
        assert_eq!(
            (i.offset, i.bytes.as_str(), i.mnemonic.as_str()),
            (0x194, "72091004", "get_sr")
        );
        assert_eq!(i.operands, ["r2", "sr80 (thread_position_in_grid.x)"]);
        assert_eq!(l.instructions[1].mnemonic, "stop");
        assert!(l.instructions[1].operands.is_empty());
        assert!(l.warnings.is_empty());
    }

    #[test]
    fn tolerates_failed_blank_and_garbage_lines() {
        let text = "  10: 0000 <disassembly failed>\n\n\u{0}\u{0}garbage\n  12: 3800  wait 0\n";
        let l = parse_listing(text);
        assert_eq!(l.instructions.len(), 1);
        assert_eq!(l.sections[0].name, NO_HEADER);
        assert_eq!(l.warnings.len(), 2);
        assert!(l.warnings[0].reason.contains("0x10"));
    }

    #[test]
    fn base_mnemonic_drops_modifiers() {
        let l = parse_listing("0: ce09860201000000 iadd.sat r2.cache, r3.cache, 16");
        assert_eq!(l.instructions[0].base_mnemonic(), "iadd");
        assert_eq!(l.instructions[0].size(), 8);
    }
}
