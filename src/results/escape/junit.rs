//! Text for JUnit XML. The XML writer escapes markup (`<`, `&`, quotes); what it cannot write
//! is a character XML 1.0 does not allow at all (most C0 controls, U+FFFE, U+FFFF), which
//! makes the whole report unreadable to a CI server. Those (and the C1 controls, which CI logs
//! would send to a terminal) are shown as `\u{1b}`; tabs and line breaks stay.

use std::borrow::Cow;

fn allowed(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (!c.is_control() && !matches!(c, '\u{fffe}' | '\u{ffff}'))
}

/// `text` with only characters a JUnit document can hold (and no terminal escape sequence,
/// since CI logs print these messages).
pub fn text(text: &str) -> Cow<'_, str> {
    if text.chars().all(allowed) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if allowed(c) {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_xml_cannot_hold_are_shown() {
        assert_eq!(text("a\x1b[2J\u{0}b\n"), "a\\u{1b}[2J\\u{0}b\n");
        assert!(matches!(text("fine <x>"), Cow::Borrowed(_)));
    }
}
