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
