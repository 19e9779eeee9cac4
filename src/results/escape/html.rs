//! Text for HTML and SVG element content and attribute values (quoted with `"` or `'`), and
//! the links a page may hold.

/// `text` with HTML's five special characters as entities.
pub fn text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A name (kernel, job id) as element content: [`text`], with each word that holds anything
/// but letters, digits and `_` kept on one line (`<span class="nw">`, `white-space: nowrap`).
/// Browsers break lines after a hyphen, between `)` and `(` and elsewhere in punctuation, so
/// `softmax-fused-v3` read `softmax-` / `fused-v3` in a narrow column although it fits a line
/// of its own; the table now makes the column as wide as the word. Words longer than
/// [`NOWRAP_MAX_CHARS`] may break anywhere (`<span class="long">`, `overflow-wrap: anywhere`):
/// a 115-character cuBLAS name would otherwise make the table wider than the window.
pub fn name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 16);
    for (index, word) in name.split(' ').enumerate() {
        if index > 0 {
            out.push(' ');
        }
        let breaks = word.chars().any(|c| !(c.is_alphanumeric() || c == '_'));
        let class = match word.chars().count() {
            n if n > NOWRAP_MAX_CHARS => Some("long"),
            _ if breaks => Some("nw"),
            _ => None,
        };
        match class {
            Some(class) => {
                out.push_str(&format!("<span class=\"{class}\">"));
                out.push_str(&text(word));
                out.push_str("</span>");
            }
            None => out.push_str(&text(word)),
        }
    }
    out
}

/// The longest word [`name`] keeps on one line.
pub const NOWRAP_MAX_CHARS: usize = 48;

/// `path` as a link target (`href`), escaped, when it is a relative path: no scheme
/// (`javascript:`, `file:`, `data:`), no absolute or protocol-relative path, no backslash or
/// control character. (Where it may lead is the caller's to check: model/under_root.rs.)
/// `None`: the page shows the text without a link.
pub fn relative_link(path: &str) -> Option<String> {
    let safe = !path.is_empty()
        && !path.starts_with('/')
        && !path.contains(':')
        && !path.contains('\\')
        && !path.chars().any(char::is_control);
    // Percent-escaping what a URL would read otherwise (a `#` or `?` in a folder's name).
    safe.then(|| {
        let mut url = String::with_capacity(path.len());
        for c in path.chars() {
            match c {
                '%' => url.push_str("%25"),
                '#' => url.push_str("%23"),
                '?' => url.push_str("%3F"),
                ' ' => url.push_str("%20"),
                c => url.push(c),
            }
        }
        self::text(&url)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_words_with_punctuation_on_one_line() {
        assert_eq!(
            name("softmax-fused-v3 plain <b>"),
            "<span class=\"nw\">softmax-fused-v3</span> plain <span class=\"nw\">&lt;b&gt;</span>"
        );
        assert_eq!(
            name("void f<32>(int)"),
            "void <span class=\"nw\">f&lt;32&gt;(int)</span>"
        );
        let long = "a-".repeat(30);
        assert_eq!(name(&long), format!("<span class=\"long\">{long}</span>"));
    }

    #[test]
    fn markup_becomes_entities() {
        assert_eq!(
            text("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn only_relative_paths_below_the_page_are_links() {
        assert_eq!(
            relative_link("j1/report.html").as_deref(),
            Some("j1/report.html")
        );
        assert_eq!(
            relative_link("a b#c/r.html").as_deref(),
            Some("a%20b%23c/r.html")
        );
        assert_eq!(relative_link("../b/r.html").as_deref(), Some("../b/r.html"));
        for bad in [
            "javascript:alert(1)",
            "/etc/passwd",
            "//host/x",
            "a\\b",
            "",
            "x\n/y",
        ] {
            assert_eq!(relative_link(bad), None, "{bad}");
        }
    }
}
