//! One CSV row as field byte ranges, and a fast tokenizer for the rows ncu writes.
//!
//! ncu quotes every field (`"ID","Process ID",…`) and its metric values never contain a quote, so
//! a row is `"f0","f1",…,"fn"`. [`Splitter::split`] finds the `","` separators with 64-byte
//! bitmasks (no per-byte state machine, no allocation once its buffers have grown) and proves the
//! row has that shape; anything else (an escaped `""` inside a field, an unquoted field, a quoted
//! newline) is refused and the caller falls back to the `csv` crate.

/// Field access shared by the fast path and `csv::ByteRecord`.
pub trait Cells {
    fn cell_bytes(&self, index: usize) -> Option<&[u8]>;
    fn cell_count(&self) -> usize;
}

impl Cells for csv::ByteRecord {
    fn cell_bytes(&self, index: usize) -> Option<&[u8]> {
        self.get(index)
    }
    fn cell_count(&self) -> usize {
        self.len()
    }
}

/// A tokenized row: the separators' positions in `data`; field i runs from after separator i-1
/// (or the opening quote) to separator i (or the closing quote).
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    data: &'a [u8],
    separators: &'a [u32],
}

/// Width of a separator (`","`): the closing quote, the comma, the opening quote.
const SEPARATOR: usize = 3;

impl<'a> Row<'a> {
    pub fn get(&self, index: usize) -> Option<&'a [u8]> {
        self.data.get(self.span(index)?)
    }

    /// Where field `index` lies in [`Row::data`].
    pub fn span(&self, index: usize) -> Option<std::ops::Range<usize>> {
        let start = match index {
            0 => 1,
            _ => *self.separators.get(index - 1)? as usize + SEPARATOR,
        };
        let end = match self.separators.get(index) {
            Some(&end) => end as usize,
            None if index == self.separators.len() => self.data.len() - 1,
            None => return None,
        };
        (start <= end && end <= self.data.len()).then_some(start..end)
    }

    /// The row's bytes (the line, for the fast path).
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    pub fn len(&self) -> usize {
        self.separators.len() + 1
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// A `csv::ByteRecord` copy, for the page parsers written against the csv crate.
    pub fn to_byte_record(&self) -> csv::ByteRecord {
        let mut record = csv::ByteRecord::with_capacity(self.data.len(), self.len());
        for field in self.iter() {
            record.push_field(field);
        }
        record
    }
}

impl Cells for Row<'_> {
    fn cell_bytes(&self, index: usize) -> Option<&[u8]> {
        self.get(index)
    }
    fn cell_count(&self) -> usize {
        self.len()
    }
}

/// Reusable buffers of the tokenizer and of the csv fallback.
#[derive(Debug, Default)]
pub struct Splitter {
    bounds: Vec<u32>,
    scratch: Vec<u8>,
}

impl Splitter {
    /// Tokenize one line (no line terminator) of the all-quoted shape, or `None`.
    pub fn split<'a>(&'a mut self, line: &'a [u8]) -> Option<Row<'a>> {
        let len = line.len();
        if len < 2 || len > u32::MAX as usize || line[0] != b'"' || line[len - 1] != b'"' {
            return None;
        }
        // A separator `","` at p: quote at p, comma at p+1, quote at p+2. Each 64-byte chunk's
        // separators need the next chunk's first two bytes, so masks run one chunk ahead.
        self.bounds.clear();
        let mut chunks = line.chunks(64);
        let [mut q, mut c] = chunk_masks(chunks.next());
        let mut quote_count = 0u64;
        let mut previous = 0u64;
        let mut base = 0u32;
        loop {
            let next = chunks.next();
            let last = next.is_none();
            let [q_next, c_next] = chunk_masks(next);
            let mut sep = q & ((c >> 1) | (c_next << 63)) & ((q >> 2) | (q_next << 62));
            // Two separators sharing a quote (`","","`) are ambiguous.
            if sep & ((sep << 2) | (previous >> 62)) != 0 {
                return None;
            }
            previous = sep;
            quote_count += u64::from(q.count_ones());
            while sep != 0 {
                self.bounds.push(base + sep.trailing_zeros());
                sep &= sep - 1;
            }
            if last {
                break;
            }
            (q, c) = (q_next, c_next);
            base += 64;
        }
        let separators = self.bounds.len();
        let positions = &self.bounds[..];
        // The first separator must come after the opening quote, the last one must leave the
        // row's closing quote alone.
        let first_ok = positions.first().is_none_or(|&p| p >= 1);
        let last_ok = positions.last().is_none_or(|&p| p as usize + 3 < len);
        // Every quote is accounted for: the row's first and last byte and two per separator.
        // Any other quote (escaped `""`, stray quote) sends the row to the csv crate.
        if !first_ok || !last_ok || quote_count != 2 + 2 * separators as u64 {
            return None;
        }
        Some(Row {
            data: line,
            separators: positions,
        })
    }

    /// A `csv::ByteRecord` as a [`Row`].
    pub fn from_record<'a>(&'a mut self, record: &'a csv::ByteRecord) -> Row<'a> {
        // Lay the fields out as the fast path sees a row, `"f0","f1"`; contents are not looked at
        // again, so quotes inside them are harmless.
        self.scratch.clear();
        self.bounds.clear();
        self.scratch.push(b'"');
        for (index, field) in record.iter().enumerate() {
            if index > 0 {
                self.bounds.push(self.scratch.len() as u32);
                self.scratch.extend_from_slice(b"\",\"");
            }
            self.scratch.extend_from_slice(field);
        }
        self.scratch.push(b'"');
        Row {
            data: &self.scratch,
            separators: &self.bounds,
        }
    }
}

/// Quote and comma masks of one chunk of up to 64 bytes (none: no bits).
#[inline]
fn chunk_masks(chunk: Option<&[u8]>) -> [u64; 2] {
    match chunk {
        None => [0, 0],
        Some(chunk) => match <&[u8; 64]>::try_from(chunk) {
            Ok(full) => eq_masks(full, [b'"', b',']),
            Err(_) => {
                let mut padded = [0u8; 64];
                padded[..chunk.len()].copy_from_slice(chunk);
                eq_masks(&padded, [b'"', b','])
            }
        },
    }
}

/// Bit i set where `chunk[i] == byte`.
#[inline]
pub fn eq_mask(chunk: &[u8; 64], byte: u8) -> u64 {
    eq_masks(chunk, [byte])[0]
}

/// One mask per needle, from a single pass over the chunk: SSE2 compares on x86-64 (part of
/// its baseline, so always present), a plain loop elsewhere.
#[inline]
pub fn eq_masks<const N: usize>(chunk: &[u8; 64], needles: [u8; N]) -> [u64; N] {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        let mut masks = [0u64; N];
        for k in 0..4 {
            // SAFETY: SSE2 is part of the x86-64 baseline, so the instructions exist on every
            // x86-64 CPU; the unaligned load reads bytes 16k..16k+16 of a 64-byte array.
            unsafe {
                let vector = _mm_loadu_si128(chunk.as_ptr().add(16 * k).cast::<__m128i>());
                for (mask, &needle) in masks.iter_mut().zip(needles.iter()) {
                    let equal = _mm_cmpeq_epi8(vector, _mm_set1_epi8(needle as i8));
                    let bits = u64::from(_mm_movemask_epi8(equal) as u16);
                    *mask |= bits << (16 * k);
                }
            }
        }
        masks
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut masks = [0u64; N];
        for (mask, &needle) in masks.iter_mut().zip(needles.iter()) {
            for (i, &b) in chunk.iter().enumerate() {
                *mask |= u64::from(b == needle) << i;
            }
        }
        masks
    }
}

/// Position of the first `byte` in `haystack`.
pub fn find_byte(haystack: &[u8], byte: u8) -> Option<usize> {
    let mut offset = 0;
    let mut chunks = haystack.chunks_exact(64);
    for chunk in &mut chunks {
        if let Ok(full) = <&[u8; 64]>::try_from(chunk) {
            let mask = eq_mask(full, byte);
            if mask != 0 {
                return Some(offset + mask.trailing_zeros() as usize);
            }
        }
        offset += 64;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == byte)
        .map(|i| offset + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(line: &[u8]) -> Option<Vec<String>> {
        let mut splitter = Splitter::default();
        let row = splitter.split(line)?;
        Some(
            row.iter()
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect(),
        )
    }

    fn csv_fields(line: &[u8]) -> Vec<String> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(line);
        let mut record = csv::ByteRecord::new();
        assert!(reader.read_byte_record(&mut record).unwrap());
        record
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect()
    }

    #[test]
    fn quoted_rows_split_like_the_csv_crate() {
        let long = format!("\"{}\",\"x\"", "a,b".repeat(100));
        for line in [
            &b"\"ID\",\"Process ID\",\"59,744\""[..],
            b"\"\"",
            b"\"\",\"\",\"\"",
            b"\"a\",\"\",\"b\"",
            b"\"(256, 1, 1)\",\"n/a\"",
            long.as_bytes(),
        ] {
            assert_eq!(fields(line), Some(csv_fields(line)), "{line:?}");
        }
    }

    #[test]
    fn separators_across_chunk_boundaries() {
        // Put a `","` separator on every offset around the 64-byte boundary.
        for pad in 55..70 {
            let line = format!("\"{}\",\"b\",\"{}\"", "x".repeat(pad), "y".repeat(pad));
            assert_eq!(
                fields(line.as_bytes()),
                Some(csv_fields(line.as_bytes())),
                "{pad}"
            );
        }
    }

    #[test]
    fn unusual_rows_are_refused() {
        for line in [
            &b"\"a\"\"b\",\"c\""[..], // escaped quote
            b"\"a\",b",               // unquoted field
            b"a,\"b\"",               // unquoted first field
            b"\",\",\"b\"",           // a field that is just a comma
            b"\"a\",\"",              // ends inside a field
            b"\"",
            b"\"a\",\"b\"x\"",
            b"\"a\",\",\",\"b\"",
        ] {
            assert_eq!(fields(line), None, "{line:?}");
        }
    }

    #[test]
    fn find_byte_matches_position() {
        let mut text = vec![b'a'; 300];
        for at in [0, 1, 63, 64, 65, 127, 128, 200, 299] {
            text[at] = b'\n';
            assert_eq!(find_byte(&text, b'\n'), Some(at));
            text[at] = b'a';
        }
        assert_eq!(find_byte(&text, b'\n'), None);
        assert_eq!(find_byte(b"", b'\n'), None);
    }
}
