//! Kernel names that fit a table: full names stay in JSON and CSV; tables shorten them.

/// `name` shortened to at most `width` characters by cutting its middle (`…` marks the cut):
/// the start says what the kernel is and the end tells instances of one template apart.
pub fn truncate_middle(name: &str, width: usize) -> String {
    let count = name.chars().count();
    if count <= width {
        return name.to_string();
    }
    if width <= 1 {
        return "…".chars().take(width).collect();
    }
    let keep = width - 1;
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let start: String = name.chars().take(head).collect();
    let end: String = name.chars().skip(count - tail).collect();
    format!("{start}…{end}")
}

/// The width a table may use: the terminal's when known, else `COLUMNS`, else 120.
pub fn table_width(terminal: Option<usize>, columns_env: Option<&str>) -> usize {
    terminal
        .filter(|w| *w > 0)
        .or_else(|| {
            columns_env
                .and_then(|c| c.trim().parse().ok())
                .filter(|w| *w > 0)
        })
        .unwrap_or(DEFAULT_TABLE_WIDTH)
}

/// Table width when neither the terminal nor `COLUMNS` says.
pub const DEFAULT_TABLE_WIDTH: usize = 120;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_lose_their_middle_and_short_ones_nothing() {
        assert_eq!(truncate_middle("vector_add", 20), "vector_add");
        let lambda = format!("void at::native::elementwise_kernel<{}>", "x".repeat(1000));
        let short = truncate_middle(&lambda, 40);
        assert_eq!(short.chars().count(), 40);
        assert!(short.starts_with("void at::native::ele"), "{short}");
        assert!(short.ends_with("xxx>"), "{short}");
        assert!(short.contains('…'));
        assert_eq!(truncate_middle("abcdef", 1), "…");
        assert_eq!(truncate_middle("abcdef", 0), "");
        // Multi-byte characters are cut on character boundaries.
        assert_eq!(truncate_middle("µµµµµµ", 4), "µµ…µ");
    }

    #[test]
    fn width_comes_from_the_terminal_then_columns_then_120() {
        assert_eq!(table_width(Some(90), Some("200")), 90);
        assert_eq!(table_width(None, Some("200")), 200);
        assert_eq!(table_width(None, Some("wide")), 120);
        assert_eq!(table_width(Some(0), None), 120);
    }
}
