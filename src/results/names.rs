//! Kernel names that fit a table: full names stay in JSON and CSV; tables shorten them.

/// `name` shortened to at most `width` characters by cutting its middle (`…` marks the cut):
/// the start (two thirds) says what the kernel is and its first template arguments, the end
/// tells instances of one template apart.
pub fn truncate_middle(name: &str, width: usize) -> String {
    let count = name.chars().count();
    if count <= width {
        return name.to_string();
    }
    if width <= 1 {
        return "…".chars().take(width).collect();
    }
    let keep = width - 1;
    let head = (2 * keep).div_ceil(3);
    let tail = keep - head;
    let start: String = name.chars().take(head).collect();
    let end: String = name.chars().skip(count - tail).collect();
    format!("{start}…{end}")
}

/// A call path (`job / pass / process / kernel`) shortened to `width` characters from the
/// left: the kernel at its end is what tells rows apart.
pub fn truncate_left(path: &str, width: usize) -> String {
    let count = path.chars().count();
    if count <= width {
        return path.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let tail: String = path.chars().skip(count - (width - 1)).collect();
    format!("…{tail}")
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

/// The narrowest name column a fitted table gets while other columns can still be left out or
/// wrapped (`results::fit`).
pub const MIN_NAME_WIDTH: usize = 24;

/// Characters left for column 0 of a comfy-table (UTF8_FULL_CONDENSED: one border character
/// and two padding spaces per column, one closing border) when the other columns take what
/// their widest cell or header needs.
pub fn name_column_width(width: usize, header: &[&str], rows: &[Vec<String>]) -> usize {
    let others: usize = (1..header.len())
        .map(|column| {
            let cells = rows
                .iter()
                .filter_map(|r| r.get(column))
                .map(|c| c.chars().count());
            cells
                .chain([header[column].chars().count()])
                .max()
                .unwrap_or(0)
                + 3
        })
        .sum();
    width.saturating_sub(others + 4).max(MIN_NAME_WIDTH)
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
    fn call_paths_keep_their_end() {
        assert_eq!(
            truncate_left("app 1 / ncu.000 / app [1579] / matmul_naive", 20),
            "…579] / matmul_naive"
        );
        assert_eq!(truncate_left("a / b", 10), "a / b");
        assert_eq!(truncate_left("a / b", 0), "");
    }

    #[test]
    fn the_name_column_gets_what_the_others_leave() {
        let header = ["Name", "Calls"];
        let rows = vec![vec!["x".repeat(300), "12345".to_string()]];
        // "Calls"/"12345": 5 + 3; borders 4.
        assert_eq!(name_column_width(100, &header, &rows), 100 - 8 - 4);
        assert_eq!(name_column_width(10, &header, &rows), MIN_NAME_WIDTH);
    }

    #[test]
    fn width_comes_from_the_terminal_then_columns_then_120() {
        assert_eq!(table_width(Some(90), Some("200")), 90);
        assert_eq!(table_width(None, Some("200")), 200);
        assert_eq!(table_width(None, Some("wide")), 120);
        assert_eq!(table_width(Some(0), None), 120);
    }
}
