//! The width tables are fitted to: the terminal's, else `COLUMNS`, else 120.

use polyprof::results::names::table_width;

/// Columns of the terminal on standard output, when it is one.
fn terminal_columns() -> Option<usize> {
    // SAFETY: `isatty` and `ioctl(TIOCGWINSZ)` only read the descriptor's state into `size`,
    // a plain struct owned here.
    unsafe {
        if libc::isatty(libc::STDOUT_FILENO) != 1 {
            return None;
        }
        let mut size: libc::winsize = std::mem::zeroed();
        if libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) != 0 {
            return None;
        }
        (size.ws_col > 0).then_some(usize::from(size.ws_col))
    }
}

/// The table width, or `None` with `--wide` (full names).
pub fn table_width_for(wide: bool) -> Option<usize> {
    (!wide).then(|| table_width(terminal_columns(), std::env::var("COLUMNS").ok().as_deref()))
}

/// A table in the one style of every command's tables (that of `report` and `diff`), fitted
/// to the width (the terminal's, else `COLUMNS`, else 120): cells wrap at word boundaries.
pub fn table() -> comfy_table::Table {
    let mut table = comfy_table::Table::new();
    table
        .load_style(polyprof::results::fit::TABLE_STYLE)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    if let Some(width) = table_width_for(false) {
        table.set_width(u16::try_from(width).unwrap_or(u16::MAX));
    }
    table
}

/// Words never split: each column is at least as wide as its longest word, and `column`
/// (job ids, candidates, profilers) as its longest cell, so long cells wrap at spaces. When
/// that cannot fit, [`render`] prints the rows as blocks instead of splitting a word.
pub fn keep_whole(table: &mut comfy_table::Table, column: usize) {
    let count = table.column_count();
    let mut words = vec![0usize; count];
    let mut cells = vec![0usize; count];
    let rows = table.header().into_iter().chain(table.row_iter());
    for row in rows {
        for (i, cell) in row.cell_iter().enumerate().take(count) {
            for line in cell.content().lines() {
                cells[i] = cells[i].max(line.chars().count());
                let word = line
                    .split(' ')
                    .map(|w| w.chars().count())
                    .max()
                    .unwrap_or(0);
                words[i] = words[i].max(word);
            }
        }
    }
    let mut floors = words;
    if let Some(id) = floors.get_mut(column) {
        *id = cells[column];
    }
    for (i, floor) in floors.into_iter().enumerate() {
        if let Some(target) = table.column_mut(i) {
            // comfy-table's widths count the cell's padding (a space either side).
            let floor = u16::try_from(floor + 2).unwrap_or(u16::MAX);
            target.set_constraint(comfy_table::ColumnConstraint::LowerBoundary(
                comfy_table::Width::Fixed(floor),
            ));
        }
    }
}

/// Text printed around a table (or a whole summary, tables and all), each line wrapped to the
/// table width at spaces; a word longer than the width (a path, a kernel name) stays whole.
pub fn prose(text: &str) -> String {
    let width = table_width_for(false).unwrap_or(usize::MAX).max(1);
    text.split('\n')
        .map(|line| {
            if line.chars().count() <= width {
                return line.to_string();
            }
            let options = textwrap::Options::new(width)
                .break_words(false)
                .word_separator(textwrap::WordSeparator::AsciiSpace);
            textwrap::wrap(line, options).join("\n")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Write what `print` writes to `out`, each line fitted by [`prose`].
pub fn fitted<W: std::io::Write>(
    out: &mut W,
    print: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    print(&mut buffer)?;
    out.write_all(prose(&String::from_utf8_lossy(&buffer)).as_bytes())
}

/// The table as text, fitted: when even whole words cannot fit the width (`doctor` at 60
/// columns: a 38-character path in a cell), one block per row instead of a table, its first
/// cell as a heading and each other cell as `header: text` wrapped under it at spaces.
pub fn render(table: &comfy_table::Table) -> String {
    let text = table.to_string();
    let Some(width) = table.width().map(usize::from) else {
        return text;
    };
    if text.lines().all(|line| line.chars().count() <= width) {
        return text;
    }
    stacked(table, width)
}

/// [`render`]'s layout for a width no table fits.
fn stacked(table: &comfy_table::Table, width: usize) -> String {
    let headers: Vec<String> = table
        .header()
        .map(|row| row.cell_iter().map(|c| c.content()).collect())
        .unwrap_or_default();
    let wrap = |text: &str, first: &str, rest: &str| {
        let options = textwrap::Options::new(width.max(1))
            .break_words(false)
            .word_separator(textwrap::WordSeparator::AsciiSpace)
            .initial_indent(first)
            .subsequent_indent(rest);
        textwrap::wrap(text, options).join("\n")
    };
    let mut blocks = Vec::new();
    for row in table.row_iter() {
        let mut lines = Vec::new();
        for (i, cell) in row.cell_iter().enumerate() {
            let content = cell.content();
            if i == 0 {
                lines.push(wrap(&content.replace('\n', " "), "", "  "));
                continue;
            }
            let label = headers.get(i).map_or(String::new(), |h| format!("{h}: "));
            // The label is text, not indent: a name too long for its line goes under it.
            for (j, line) in content.lines().enumerate() {
                match j {
                    0 => lines.push(wrap(&format!("{label}{line}"), "  ", "    ")),
                    _ => lines.push(wrap(line, "    ", "    ")),
                }
            }
        }
        blocks.push(lines.join("\n"));
    }
    blocks.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_that_cannot_fit_becomes_blocks_with_words_whole() {
        let mut table = comfy_table::Table::new();
        table
            .load_style(polyprof::results::fit::TABLE_STYLE)
            .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
            .set_width(44)
            .set_header(["profiler", "available", "details"])
            .add_row([
                "ncu",
                "no",
                "install it, e.g. `/opt/nvidia/nsight-compute/<version>`\nwarning: none",
            ]);
        keep_whole(&mut table, 0);
        let text = render(&table);
        assert!(text.lines().all(|l| l.chars().count() <= 44), "{text}");
        assert!(
            text.starts_with("ncu\n  available: no\n  details: install it, e.g.\n"),
            "{text}"
        );
        assert!(
            text.contains("\n    `/opt/nvidia/nsight-compute/<version>`\n"),
            "{text}"
        );
        assert!(text.ends_with("\n    warning: none"), "{text}");
    }

    #[test]
    fn a_table_that_fits_stays_a_table() {
        let mut table = comfy_table::Table::new();
        table
            .set_width(80)
            .set_header(["a", "b"])
            .add_row(["1", "2"]);
        assert_eq!(render(&table), table.to_string());
    }
}
