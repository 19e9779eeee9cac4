//! Text for a terminal (or a plain-text file someone will `cat`): a name, label, path or a
//! candidate's message never sends a control character or an escape sequence — clear-screen,
//! window title, clipboard write (OSC 52), cursor moves — and never reorders what follows it
//! (bidirectional overrides). Each such character is shown instead as `\x1b` (C0 and DEL) or
//! `\u{9b}` (C1, bidirectional controls), so a reviewer sees that it was there.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as itself.
fn is_hidden(c: char) -> bool {
    c.is_control()
        // Bidirectional embeddings, overrides and isolates ("Trojan Source").
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

fn escape_with(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| is_hidden(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !is_hidden(c) || keep(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

/// One line of text (a table cell, a name in a sentence): every control character shown,
/// line breaks and tabs included.
pub fn line(text: &str) -> Cow<'_, str> {
    escape_with(text, |_| false)
}

/// Text of several lines (a rendered table, a message with its traceback): line breaks and
/// tabs kept, every other control character shown.
pub fn text(text: &str) -> Cow<'_, str> {
    escape_with(text, |c| c == '\n' || c == '\t')
}

/// [`line()`], cut to at most `max` characters (the cut marked `…`): a cell of a table holds a
/// name of any length in time linear in what it shows.
pub fn clipped(text: &str, max: usize) -> String {
    let max = max.max(2);
    let mut chars = text.chars().peekable();
    let mut shown = String::new();
    let mut count = 0;
    while let Some(c) = chars.next() {
        count += 1;
        if count == max && chars.peek().is_some() {
            shown.push('…');
            break;
        }
        shown.push(c);
    }
    line(&shown).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_shown_not_sent() {
        let clipboard = "k\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2J\u{9b}31m\u{202e}x";
        let shown = line(clipboard);
        assert!(!shown.chars().any(is_hidden), "{shown}");
        assert_eq!(
            shown,
            "k\\x1b]52;c;ZWNobyBoaQ==\\x07\\x1b[2J\\u{9b}31m\\u{202e}x"
        );
        assert_eq!(line("a\nb\tc"), "a\\x0ab\\x09c");
        assert_eq!(text("a\nb\tc\r"), "a\nb\tc\\x0d");
        assert!(matches!(line("matmul<32>"), Cow::Borrowed(_)));
    }

    #[test]
    fn clipped_cells_keep_at_most_max_characters() {
        assert_eq!(clipped("abcdef", 4), "abc…");
        assert_eq!(clipped("abcd", 4), "abcd");
        assert_eq!(clipped("ab\x1b", 8), "ab\\x1b");
    }
}
