//! Writing machine-readable output to stdout. A reader that stops early (`| head`) closes the
//! pipe; the write fails with `BrokenPipe` (polyprof ignores SIGPIPE, as Rust programs do),
//! the error goes up to `main`, and `main` ends quietly with 141 (`cli::is_broken_pipe`), the
//! status a shell gives a program that SIGPIPE ended. `println!` would panic instead.

use std::io::Write;

/// Write `text` to stdout and flush. A closed pipe is an error that `main` turns into a quiet
/// exit with 141.
pub fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush())?;
    Ok(())
}

/// [`print`] with a trailing newline.
pub fn println(text: &str) -> anyhow::Result<()> {
    print(&format!("{text}\n"))
}

/// Text for people (a table, a summary, a listing) on stdout: names, paths and tools' or
/// workloads' text in it show their control characters, never send them
/// (`results::escape::terminal`); line breaks and tabs stay.
pub fn print_text(text: &str) -> anyhow::Result<()> {
    print(&polyprof::results::escape::terminal::text(text))
}

/// [`print_text`] with a trailing newline.
pub fn println_text(text: &str) -> anyhow::Result<()> {
    print_text(&format!("{text}\n"))
}

/// A line for people on stderr, shown as [`print_text`] shows it. A closed stderr is ignored.
pub fn eprintln_text(text: &str) {
    let text = polyprof::results::escape::terminal::text(text);
    let _ = writeln!(std::io::stderr(), "{text}");
}
