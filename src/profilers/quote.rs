//! The string form of plans, for callers that hold a shell string. Quoting is POSIX `sh`
//! quoting via `shlex`; the round trip through a real `sh -c` is tested.

use crate::error::{Error, Result};

use super::Plan;

/// Split a POSIX shell command line into argv.
pub fn split(command: &str) -> Result<Vec<String>> {
    let argv = shlex::split(command).ok_or_else(|| {
        Error::invalid(
            "command",
            format!("`{command}` has an unterminated quote or escape"),
        )
    })?;
    if argv.is_empty() {
        return Err(Error::invalid("command", "the command is empty"));
    }
    Ok(argv)
}

/// Quote one word so `sh` reads it back verbatim.
pub fn quote(word: &str) -> Result<String> {
    shlex::try_quote(word).map(|q| q.into_owned()).map_err(|_| {
        Error::invalid(
            "argument",
            format!("{word:?} contains a NUL byte, which no shell can pass"),
        )
    })
}

/// Quote an argv into one command line.
pub fn join(argv: &[String]) -> Result<String> {
    argv.iter()
        .map(|w| quote(w))
        .collect::<Result<Vec<_>>>()
        .map(|w| w.join(" "))
}

/// Render a plan as one POSIX shell string (placeholder until the quoting issue lands).
pub fn plan_to_shell(plan: &Plan) -> Result<String> {
    let parts = plan
        .steps
        .iter()
        .map(|step| join(&step.command.argv))
        .collect::<Result<Vec<_>>>()?;
    Ok(parts.join(" && "))
}
