//! Loops from back-edges: a `jmp_exec_any` whose target lies below its own address.
//!
//! The loop is the address range [target, back-edge]; membership is by address, so it does not
//! matter what sits between the `while_*` compare and the jump (the compiler may put a
//! `mov_imm` there). Back-edges to the same target form one loop.

use serde::Serialize;

use super::listing::Instruction;
use super::operands::target_address;

/// One loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Loop {
    /// The back-edge's target (the loop header's address).
    pub start: u32,
    /// The address of the back-edge instruction itself.
    pub end: u32,
    /// 1 for an outermost loop.
    pub depth: usize,
    /// Index of the innermost enclosing loop, if any.
    pub parent: Option<usize>,
}

impl Loop {
    pub fn contains(&self, offset: u32) -> bool {
        (self.start..=self.end).contains(&offset)
    }
}

/// Finds loops, sorted by start address, outer loops before inner ones that share a start.
pub fn find_loops(instructions: &[Instruction]) -> Vec<Loop> {
    let mut edges: Vec<(u32, u32)> = Vec::new();
    for inst in instructions {
        if inst.base_mnemonic() != "jmp_exec_any" {
            continue;
        }
        let Some(target) = inst
            .operands
            .first()
            .and_then(|t| target_address(t, inst.offset))
        else {
            continue;
        };
        if target >= 0 && target < inst.offset as i64 {
            let target = target as u32;
            match edges.iter_mut().find(|(start, _)| *start == target) {
                Some(edge) => edge.1 = edge.1.max(inst.offset),
                None => edges.push((target, inst.offset)),
            }
        }
    }
    edges.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut loops: Vec<Loop> = Vec::with_capacity(edges.len());
    for (start, end) in edges {
        // The innermost earlier loop that encloses this one.
        let parent = (0..loops.len())
            .rev()
            .find(|&i| loops[i].start <= start && end <= loops[i].end);
        let depth = parent.map_or(1, |p| loops[p].depth + 1);
        loops.push(Loop {
            start,
            end,
            depth,
            parent,
        });
    }
    loops
}

/// How many loops contain `offset`.
pub fn depth_at(loops: &[Loop], offset: u32) -> usize {
    loops.iter().filter(|l| l.contains(offset)).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metal::listing::parse_listing;

    #[test]
    fn instruction_between_compare_and_jump_still_makes_a_loop() {
        let l = parse_listing(
            "  74: 1e699a5200000001     imadd            r26, r13.cache, 69, 0\n\
               ba: 529446020000         while_icmp       r0l, seq, r3, 0, 2\n\
               c0: 62120000             mov_imm          r4h, 0\n\
               c4: 00c0b0ffffff         jmp_exec_any     0x74\n",
        );
        let loops = find_loops(&l.instructions);
        assert_eq!(loops.len(), 1);
        assert_eq!(
            (loops[0].start, loops[0].end, loops[0].depth),
            (0x74, 0xc4, 1)
        );
    }

    #[test]
    fn nesting_forward_jumps_and_calls() {
        let l = parse_listing(
            "0: 00 mov_imm r1, 0\n\
             10: 00 mov_imm r2, 0\n\
             20: 00 jmp_exec_any 0x10\n\
             28: 00 jmp_exec_none 0x0\n\
             30: 00 call 0x0\n\
             38: 00 jmp_exec_any pc-56\n\
             40: 00 jmp_exec_any 0x60\n",
        );
        let loops = find_loops(&l.instructions);
        assert_eq!(loops.len(), 2, "{loops:?}");
        assert_eq!(
            (loops[0].start, loops[0].end, loops[0].depth),
            (0x0, 0x38, 1)
        );
        assert_eq!((loops[1].start, loops[1].end), (0x10, 0x20));
        assert_eq!((loops[1].depth, loops[1].parent), (2, Some(0)));
        assert_eq!(depth_at(&loops, 0x18), 2);
        assert_eq!(depth_at(&loops, 0x40), 0);
    }
}
