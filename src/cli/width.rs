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
