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

/// Text printed around a table (or a whole summary, tables and all), each line wrapped to the
/// table width at spaces; a word longer than the width (a path, a kernel name) stays whole.
pub fn prose(text: &str) -> String {
    let width = table_width_for(false).unwrap_or(usize::MAX).max(1);
    text.split('\n')
        .map(|line| {
            if line.chars().count() <= width {
                return line.to_string();
            }
            let options = textwrap::Options::new(width).break_words(false);
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
