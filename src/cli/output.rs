//! Writing machine-readable output to stdout. A reader that stops early (`| head`) closes the
//! pipe; that ends the output quietly instead of panicking like `println!`.

use std::io::{ErrorKind, Write};

/// Write `text` to stdout and flush; a closed pipe is not an error.
pub fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// [`print`] with a trailing newline.
pub fn println(text: &str) -> anyhow::Result<()> {
    print(&format!("{text}\n"))
}
