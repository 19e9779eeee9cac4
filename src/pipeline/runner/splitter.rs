//! A bounded line splitter. Memory is bounded by the line limit whatever the input: a line longer
//! than the limit is delivered in pieces of `limit` bytes, flagged. Bytes are never decoded here,
//! so invalid UTF-8 and NUL bytes pass through untouched.

/// How a delivered piece relates to the line it came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Piece {
    /// Part of a line longer than the limit.
    pub split: bool,
    /// More pieces of the same line follow.
    pub continues: bool,
}

/// Receives what the splitter cuts.
pub trait LineVisitor {
    /// One line (or one piece of a long line), without its newline.
    fn line(&mut self, bytes: &[u8], piece: Piece);
    /// A block of complete lines, each ending with `\n` and none longer than the limit. The fast
    /// path: visitors that do not need every line one by one can handle a block in bulk.
    /// `lines` is the number of lines in the block.
    fn block(&mut self, block: &[u8], lines: u64);
}

const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// High bit of each byte set exactly where that byte of `word` is a newline.
#[inline]
fn newline_bits(word: [u8; 8]) -> u64 {
    let x = u64::from_le_bytes(word) ^ (ONES * u64::from(b'\n'));
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// Index of the first newline, eight bytes at a time.
pub fn find_newline(bytes: &[u8]) -> Option<usize> {
    let (words, rest) = bytes.as_chunks::<8>();
    for (i, word) in words.iter().enumerate() {
        let bits = newline_bits(*word);
        if bits != 0 {
            return Some(i * 8 + bits.trailing_zeros() as usize / 8);
        }
    }
    rest.iter()
        .position(|&b| b == b'\n')
        .map(|p| words.len() * 8 + p)
}

/// Index of the last newline, eight bytes at a time.
pub fn rfind_newline(bytes: &[u8]) -> Option<usize> {
    let (rest, words) = bytes.as_rchunks::<8>();
    for (i, word) in words.iter().enumerate().rev() {
        let bits = newline_bits(*word);
        if bits != 0 {
            return Some(rest.len() + i * 8 + (63 - bits.leading_zeros() as usize) / 8);
        }
    }
    rest.iter().rposition(|&b| b == b'\n')
}

/// Visit every line of a block (as produced by [`LineVisitor::block`]), without newlines.
pub fn block_lines(block: &[u8]) -> impl Iterator<Item = &[u8]> {
    block
        .strip_suffix(b"\n")
        .unwrap_or(block)
        .split(|&b| b == b'\n')
}

/// Count newlines, eight bytes at a time (SWAR): a plain `filter().count()` compiles to slow
/// byte-by-byte code here, and this runs on every byte the child prints.
pub fn count_newlines(bytes: &[u8]) -> u64 {
    let mut total = 0u64;
    // 255 words at most per block, so each byte lane of the accumulator stays below 256.
    for block in bytes.chunks(8 * 255) {
        let (words, rest) = block.as_chunks::<8>();
        let mut lanes = 0u64;
        for word in words {
            lanes += newline_bits(*word) >> 7;
        }
        let pairs = (lanes & 0x00ff_00ff_00ff_00ff) + ((lanes >> 8) & 0x00ff_00ff_00ff_00ff);
        total += pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48;
        total += rest.iter().filter(|&&b| b == b'\n').count() as u64;
    }
    total
}

#[derive(Debug)]
pub struct LineSplitter {
    limit: usize,
    partial: Vec<u8>,
    in_long_line: bool,
    lines: u64,
    split_any: bool,
}

impl LineSplitter {
    pub fn new(limit: usize) -> Self {
        LineSplitter {
            limit: limit.max(1),
            partial: Vec::new(),
            in_long_line: false,
            lines: 0,
            split_any: false,
        }
    }

    /// Lines seen so far (newline-terminated, plus the last one after `finish`).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The bytes of the line not yet ended by a newline.
    pub fn partial(&self) -> &[u8] {
        &self.partial
    }

    /// Some line was longer than the limit and was cut into pieces.
    pub fn split_any(&self) -> bool {
        self.split_any
    }

    pub fn feed(&mut self, chunk: &[u8], visitor: &mut impl LineVisitor) {
        let Some(first) = find_newline(chunk) else {
            self.extend_partial(chunk, visitor);
            return;
        };
        self.extend_partial(&chunk[..first], visitor);
        self.end_line(visitor);
        let rest = &chunk[first + 1..];
        let last = rfind_newline(rest);
        let tail = match last {
            Some(last) => {
                let block = &rest[..=last];
                if block.len() <= self.limit {
                    let lines = count_newlines(block);
                    self.lines += lines;
                    visitor.block(block, lines);
                } else {
                    // Only when chunks are larger than the limit: lines may need cutting.
                    for line in block_lines(block) {
                        self.extend_partial(line, visitor);
                        self.end_line(visitor);
                    }
                }
                &rest[last + 1..]
            }
            None => rest,
        };
        self.extend_partial(tail, visitor);
    }

    /// Deliver the last line when the stream did not end with a newline.
    pub fn finish(&mut self, visitor: &mut impl LineVisitor) {
        if !self.partial.is_empty() || self.in_long_line {
            self.end_line(visitor);
        }
    }

    fn extend_partial(&mut self, mut bytes: &[u8], visitor: &mut impl LineVisitor) {
        while self.partial.len() + bytes.len() > self.limit {
            let take = self.limit - self.partial.len();
            let piece = Piece {
                split: true,
                continues: true,
            };
            if self.partial.is_empty() {
                visitor.line(&bytes[..take], piece);
            } else {
                self.partial.extend_from_slice(&bytes[..take]);
                visitor.line(&self.partial, piece);
                self.partial.clear();
            }
            self.in_long_line = true;
            self.split_any = true;
            bytes = &bytes[take..];
        }
        self.partial.extend_from_slice(bytes);
    }

    fn end_line(&mut self, visitor: &mut impl LineVisitor) {
        visitor.line(
            &self.partial,
            Piece {
                split: self.in_long_line,
                continues: false,
            },
        );
        self.partial.clear();
        self.in_long_line = false;
        self.lines += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Default)]
    struct Collect(Vec<(Vec<u8>, Piece)>);

    impl LineVisitor for Collect {
        fn line(&mut self, bytes: &[u8], piece: Piece) {
            self.0.push((bytes.to_vec(), piece));
        }
        fn block(&mut self, block: &[u8], _lines: u64) {
            for line in block_lines(block) {
                self.line(line, Piece::default());
            }
        }
    }

    fn split(input: &[u8], limit: usize, chunk: usize) -> (Vec<(Vec<u8>, Piece)>, u64) {
        let mut splitter = LineSplitter::new(limit);
        let mut out = Collect::default();
        for c in input.chunks(chunk.max(1)) {
            splitter.feed(c, &mut out);
        }
        splitter.finish(&mut out);
        (out.0, splitter.lines())
    }

    #[test]
    fn long_lines_come_in_flagged_pieces() {
        let (lines, count) = split(b"ab\nabcdefg\nx", 3, 2);
        let texts: Vec<&[u8]> = lines.iter().map(|(l, _)| l.as_slice()).collect();
        assert_eq!(texts, [&b"ab"[..], b"abc", b"def", b"g", b"x"]);
        assert_eq!(
            lines[1].1,
            Piece {
                split: true,
                continues: true
            }
        );
        assert_eq!(
            lines[3].1,
            Piece {
                split: true,
                continues: false
            }
        );
        assert_eq!(count, 3);
    }

    #[test]
    fn newline_count_matches_a_plain_count() {
        let mut bytes: Vec<u8> = (0..100_000u32)
            .map(|i| if i % 7 == 0 { b'\n' } else { i as u8 })
            .collect();
        // A run of newlines fills the byte lanes to their limit.
        bytes[50_000..60_000].fill(b'\n');
        for len in [0, 1, 7, 8, 9, 2039, 2040, 2041, 100_000] {
            let plain = bytes[..len].iter().filter(|&&b| b == b'\n').count() as u64;
            assert_eq!(count_newlines(&bytes[..len]), plain, "{len}");
            for start in [0, 1, 3, 8, 13] {
                let part = &bytes[start.min(len)..len];
                assert_eq!(find_newline(part), part.iter().position(|&b| b == b'\n'));
                assert_eq!(rfind_newline(part), part.iter().rposition(|&b| b == b'\n'));
            }
        }
    }

    #[test]
    fn nul_and_invalid_utf8_pass_through() {
        let (lines, _) = split(b"a\0b\n\xff\xfe\n", 100, 3);
        assert_eq!(lines[0].0, b"a\0b");
        assert_eq!(lines[1].0, b"\xff\xfe");
    }

    proptest! {
        // Whatever the chunking, joining the pieces of each line gives back the input's lines,
        // and no piece is longer than the limit.
        #[test]
        fn any_chunking_gives_the_same_lines(
            input in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'a'), Just(0u8), Just(0xffu8)], 0..300),
            limit in 1usize..20,
            chunk in 1usize..40,
        ) {
            let (pieces, count) = split(&input, limit, chunk);
            let mut lines: Vec<Vec<u8>> = Vec::new();
            let mut current = Vec::new();
            for (bytes, piece) in &pieces {
                prop_assert!(bytes.len() <= limit);
                current.extend_from_slice(bytes);
                if !piece.continues {
                    lines.push(std::mem::take(&mut current));
                }
            }
            let mut expected: Vec<Vec<u8>> = input.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
            if input.last().is_none_or(|&b| b == b'\n') {
                expected.pop();
            }
            prop_assert_eq!(count as usize, expected.len());
            prop_assert_eq!(lines, expected);
        }
    }
}
