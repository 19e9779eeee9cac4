//! Split ncu's mixed output into CSV blocks, ncu's own messages and everything else.
//!
//! ncu's stdout (and its `--log-file`) is never pure CSV: `==PROF==`, `==WARNING==` and
//! `==ERROR==` lines, the program's own output and one or more CSV blocks share the stream, and
//! ncu's lines do not always start a line (`[100%]==PROF== Disconnected…` under pytest-xdist).
//! A CSV line starts with `"`; a quoted field may span lines, so a block continues while the
//! quotes seen so far are unbalanced.

use std::ops::Range;

/// Severity of an ncu message line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Prof,
    Warning,
    Error,
}

/// One `==PROF==`/`==WARNING==`/`==ERROR==` message, without its tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub level: Level,
    pub text: String,
}

/// A piece of the output, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Consecutive CSV lines: a byte range of the input, ready for a CSV reader.
    Csv(Range<usize>),
    /// An ncu message.
    Message(Message),
    /// Any other non-empty line (program output, table titles of `--page session`).
    Text(Range<usize>),
}

const TAGS: [(&[u8], Level); 3] = [
    (b"==PROF==", Level::Prof),
    (b"==WARNING==", Level::Warning),
    (b"==ERROR==", Level::Error),
];

/// Split `input` into segments. Never fails: every byte ends up in some segment or is a line end.
pub fn scan(input: &[u8]) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut block: Option<Range<usize>> = None;
    let mut pos = content_start(input);
    while pos < input.len() {
        let end = line_end(input, pos);
        let line = trim_cr(&input[pos..end]);
        if is_csv_line(line) {
            let (next, _) = csv_extent(input, pos, end);
            match block.as_mut() {
                Some(range) => range.end = next,
                None => block = Some(pos..next),
            }
            pos = next;
            continue;
        }
        if let Some(range) = block.take() {
            segments.push(Segment::Csv(range));
        }
        classify_line(pos, line, &mut segments);
        pos = (end + 1).min(input.len());
    }
    if let Some(range) = block.take() {
        segments.push(Segment::Csv(range));
    }
    segments
}

/// Where content starts: a UTF-8 byte-order mark before the first line is not content.
pub fn content_start(input: &[u8]) -> usize {
    if input.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    }
}

/// A CSV line starts with a quote; ncu's tags never sit inside one of its own CSV lines.
pub fn is_csv_line(line: &[u8]) -> bool {
    line.first() == Some(&b'"') && !line.starts_with(b"\"==")
}

/// The end (after its line end) of the CSV record whose first line is `start..end`: a quoted
/// field may span lines, so the record continues while the quotes seen so far are unbalanced.
/// The flag is false when the input ended with a quote still open.
pub fn csv_extent(input: &[u8], start: usize, end: usize) -> (usize, bool) {
    let mut open_quote = odd_quotes(&input[start..end]);
    let mut next = (end + 1).min(input.len());
    while open_quote && next < input.len() {
        let end = line_end(input, next);
        open_quote ^= odd_quotes(&input[next..end]);
        next = (end + 1).min(input.len());
    }
    (next, !open_quote)
}

/// One non-CSV line: zero or more ncu messages, with any program output before the first one.
pub fn classify_line(start: usize, line: &[u8], segments: &mut Vec<Segment>) {
    let mut rest = line;
    let mut offset = start;
    loop {
        match find_tag(rest) {
            None => {
                if !is_blank(rest) {
                    segments.push(Segment::Text(offset..offset + rest.len()));
                }
                return;
            }
            Some((at, tag_len, level)) => {
                if !is_blank(&rest[..at]) {
                    segments.push(Segment::Text(offset..offset + at));
                }
                let body = &rest[at + tag_len..];
                // A second tag on the same line starts a new message.
                let body_end = find_tag(body).map_or(body.len(), |(i, _, _)| i);
                let text = String::from_utf8_lossy(&body[..body_end])
                    .trim()
                    .to_string();
                segments.push(Segment::Message(Message { level, text }));
                let consumed = at + tag_len + body_end;
                rest = &rest[consumed..];
                offset += consumed;
                if rest.is_empty() {
                    return;
                }
            }
        }
    }
}

fn find_tag(line: &[u8]) -> Option<(usize, usize, Level)> {
    // Cheap pre-check: every tag starts with `==`.
    let mut best: Option<(usize, usize, Level)> = None;
    let mut from = 0;
    while let Some(i) = line[from..].windows(2).position(|w| w == b"==") {
        let at = from + i;
        for (tag, level) in TAGS {
            if line[at..].starts_with(tag) {
                best = Some((at, tag.len(), level));
                break;
            }
        }
        if best.is_some() {
            return best;
        }
        from = at + 1;
        if from >= line.len() {
            break;
        }
    }
    best
}

/// Index of the `\n` ending the line that starts at `from`, or the input's length.
pub fn line_end(input: &[u8], from: usize) -> usize {
    super::row::find_byte(&input[from..], b'\n').map_or(input.len(), |i| from + i)
}

pub fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn odd_quotes(line: &[u8]) -> bool {
    line.iter().filter(|&&b| b == b'"').count() % 2 == 1
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(input: &[u8], segments: &[Segment]) -> Vec<String> {
        segments
            .iter()
            .map(|s| match s {
                Segment::Csv(r) => format!("csv:{}", String::from_utf8_lossy(&input[r.clone()])),
                Segment::Text(r) => format!("text:{}", String::from_utf8_lossy(&input[r.clone()])),
                Segment::Message(m) => format!("{:?}:{}", m.level, m.text),
            })
            .collect()
    }

    #[test]
    fn glued_messages_and_program_output_are_separated() {
        let input = b"..   [100%]==PROF== Disconnected from process 2752\n\"ID\",\"x\"\n\"1\",\"a\nb\"\n2 passed\n==ERROR== bad==WARNING== worse\n";
        let segments = scan(input);
        assert_eq!(
            texts(input, &segments),
            vec![
                "text:..   [100%]",
                "Prof:Disconnected from process 2752",
                "csv:\"ID\",\"x\"\n\"1\",\"a\nb\"\n",
                "text:2 passed",
                "Error:bad",
                "Warning:worse",
            ]
        );
    }

    #[test]
    fn bom_crlf_and_missing_final_newline() {
        let input = b"\xEF\xBB\xBF\"ID\"\r\n\"0\"";
        let segments = scan(input);
        assert_eq!(segments, vec![Segment::Csv(3..input.len())]);
    }
}
