//! Inline Markdown that shows as written (a table cell of a CI summary, a pull-request
//! comment): HTML's special characters as entities, Markdown's punctuation and a table's `|`
//! escaped, line breaks as spaces, other control characters shown as the terminal shows them.

/// `text` as inline Markdown.
pub fn text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c => {
                let mut buffer = [0; 4];
                let one = c.encode_utf8(&mut buffer);
                // Shown as `\x1b`, whose backslash Markdown must keep.
                out.push_str(&super::terminal::line(one).replace('\\', "\\\\"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_links_and_controls_show_as_written() {
        assert_eq!(
            text("a|b <c> *d* [e](f)"),
            "a\\|b &lt;c&gt; \\*d\\* \\[e\\](f)"
        );
        assert_eq!(text("x\x1b[2Jy\nz"), "x\\\\x1b\\[2Jy z");
    }
}
