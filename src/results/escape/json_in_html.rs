//! JSON inside an HTML `<script>` element. The HTML parser ends a script at `</script`, and
//! `<!--` followed by `<script` puts it in a state where the real `</script>` no longer ends
//! it (one kernel named `<!--<script>` stopped a page's script). So no `<` may reach the
//! page: `<`, `>` and `&` are written as `\u003c`, `\u003e`, `\u0026`, and U+2028/U+2029
//! (line breaks to older JavaScript) as `\u2028`, `\u2029`. JSON's syntax has none of these
//! outside strings, so the replacement only ever touches string contents, and `JSON.parse`
//! reads back the same value.

use serde::Serialize;

/// `value` as JSON that is safe inside `<script type="application/json">`.
pub fn to_string(value: &impl Serialize) -> serde_json::Result<String> {
    Ok(escape(&serde_json::to_string(value)?))
}

/// JSON text made safe inside a script element (see the module's comment).
pub fn escape(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_markup_and_the_same_value_read_back() {
        let names = vec!["<!--<script>", "</script><b>&amp;", "a\u{2028}b"];
        let text = to_string(&names).unwrap();
        assert!(!text.contains(['<', '>', '&', '\u{2028}']), "{text}");
        let back: Vec<String> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, names);
    }
}
