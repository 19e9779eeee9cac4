//! The string form of plans, for callers that hold a shell string. Quoting is POSIX `sh`
//! quoting via `shlex`; the round trip through a real `sh -c` is tested.
//!
//! What the string form keeps from a plan: every argv word verbatim, each step's extra
//! environment (`K='v'` prefixes), working directory, stdout file, retries (a bounded loop
//! with the validator checked in shell), and the step order with `run_after_failure`. The exit
//! status is the first failing step's. What it cannot keep: end markers and graces — those need
//! the runner, which watches output and stops processes.

use std::path::Path;

use crate::model::arg::Arg;
use crate::model::error::{Error, Result};

use super::{CommandSpec, Plan, RetryPolicy, Step, Validator};

/// Words a shell treats as syntax in command position (POSIX, plus bash's and ksh's).
const RESERVED: &[&str] = &[
    "case", "do", "done", "elif", "else", "esac", "fi", "for", "if", "in", "then", "until",
    "while", "time", "select", "function", "coproc", "]]",
];

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

/// Quote a word that stands in command position: a bare reserved word (`if`, `done`, …) would
/// be read as syntax, so it is single-quoted even though it has no special characters.
pub fn quote_command(word: &str) -> Result<String> {
    let quoted = quote(word)?;
    if RESERVED.contains(&quoted.as_str()) {
        return Ok(format!("'{quoted}'"));
    }
    Ok(quoted)
}

/// Quote an argv into one command line. The string form is text: an argument that is not
/// UTF-8 is an error (the argv JSON keeps its bytes).
pub fn join<A: AsArgText>(argv: &[A]) -> Result<String> {
    let mut words = Vec::with_capacity(argv.len());
    for (i, word) in argv.iter().enumerate() {
        let word = word.arg_text()?;
        words.push(if i == 0 {
            quote_command(word)?
        } else {
            quote(word)?
        });
    }
    Ok(words.join(" "))
}

/// An argv word as text, for quoting.
pub trait AsArgText {
    fn arg_text(&self) -> Result<&str>;
}

impl AsArgText for String {
    fn arg_text(&self) -> Result<&str> {
        Ok(self)
    }
}

impl AsArgText for &str {
    fn arg_text(&self) -> Result<&str> {
        Ok(self)
    }
}

impl AsArgText for Arg {
    fn arg_text(&self) -> Result<&str> {
        self.to_str().ok_or_else(|| {
            Error::invalid(
                "argument",
                format!(
                    "`{self}` is not UTF-8 and has no shell-string form; use the argv (JSON) form"
                ),
            )
        })
    }
}

fn quote_path(path: &Path) -> Result<String> {
    let text = path.to_str().ok_or_else(|| {
        Error::invalid("path", format!("`{}` is not valid UTF-8", path.display()))
    })?;
    quote(text)
}

/// `K=v` words must be shell names, or the shell would run them as the command.
fn is_name(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// One command: `K='v' … argv…`, inside `( cd DIR && … )` when it has a working directory.
pub fn command_to_shell(command: &CommandSpec) -> Result<String> {
    if command.argv.is_empty() {
        return Err(Error::invalid("command", "a plan step has an empty argv"));
    }
    let mut words = Vec::new();
    for (key, value) in &command.env {
        if !is_name(key) {
            return Err(Error::invalid(
                "environment",
                format!("`{key}` is not a valid variable name (letters, digits, `_`)"),
            ));
        }
        words.push(format!("{key}={}", quote(value)?));
    }
    words.push(join(&command.argv)?);
    let line = words.join(" ");
    Ok(match &command.cwd {
        Some(dir) => format!("( cd -- {} && {line} )", quote_path(dir)?),
        None => line,
    })
}

/// The shell test for a validator, run after an attempt exited 0.
fn validator_to_shell(validator: &Validator) -> Result<Option<String>> {
    Ok(match validator {
        Validator::ExitZero => None,
        Validator::FileMinLines {
            dir,
            prefix,
            min_lines,
        } => Some(format!(
            "polyprof_f=$(ls -td -- {}/{}* 2>/dev/null | head -n 1) && [ -n \"$polyprof_f\" ] \
             && [ \"$(($(wc -l < \"$polyprof_f\")))\" -ge {min_lines} ]",
            quote_path(dir)?,
            quote(prefix)?
        )),
    })
}

/// The directory a retry's `clean_prefixes` apply to: the validator's, else the step's cwd.
fn clean_dir<'a>(retry: &'a RetryPolicy, command: &'a CommandSpec) -> Option<&'a Path> {
    match &retry.validator {
        Validator::FileMinLines { dir, .. } => Some(dir),
        Validator::ExitZero => command.cwd.as_deref(),
    }
}

/// A step: its command with stdout redirection, wrapped in a bounded retry loop if it has one.
pub fn step_to_shell(step: &Step) -> Result<String> {
    let mut command = command_to_shell(&step.command)?;
    if let Some(file) = &step.stdout_file {
        command = format!("{command} > {}", quote_path(file)?);
    }
    let Some(retry) = &step.retry else {
        return Ok(command);
    };
    if retry.max_attempts == 0 {
        return Err(Error::invalid(
            "retry policy",
            format!("step `{}` allows 0 attempts", step.name),
        ));
    }
    let mut body = Vec::new();
    body.push("polyprof_try=$((polyprof_try + 1))".to_string());
    if !retry.clean_prefixes.is_empty() {
        let dir = clean_dir(retry, &step.command).ok_or_else(|| {
            Error::invalid(
                "retry policy",
                format!(
                    "step `{}` cleans files by prefix but names no directory (no FileMinLines \
                     validator, no cwd)",
                    step.name
                ),
            )
        })?;
        let dir = quote_path(dir)?;
        let globs = retry
            .clean_prefixes
            .iter()
            .map(|p| quote(p).map(|p| format!("{dir}/{p}*")))
            .collect::<Result<Vec<_>>>()?;
        body.push(format!("rm -f -- {}", globs.join(" ")));
    }
    let accept = match validator_to_shell(&retry.validator)? {
        Some(check) => format!("{command} && {check} && break"),
        None => format!("{command} && break"),
    };
    body.push(accept);
    // After the last failed attempt the loop's status is that attempt's (non-zero); `break`
    // after an accepted attempt makes it 0.
    Ok(format!(
        "polyprof_try=0; while [ \"$polyprof_try\" -lt {} ]; do {}; done",
        retry.max_attempts,
        body.join("; ")
    ))
}

/// Render a plan as one POSIX shell string. One plain step is just its command line; several
/// steps run in order, a step after a failure only when it has `run_after_failure`, and the
/// string's exit status is the first failing step's.
pub fn plan_to_shell(plan: &Plan) -> Result<String> {
    match plan.steps.as_slice() {
        [] => Err(Error::invalid(
            "plan",
            format!("the {} plan has no steps", plan.profiler),
        )),
        [only] => step_to_shell(only),
        steps => {
            let mut parts = vec!["polyprof_rc=0".to_string()];
            for (i, step) in steps.iter().enumerate() {
                let unit = step_to_shell(step)?;
                parts.push(if i == 0 {
                    format!("{unit} || polyprof_rc=$?")
                } else if step.run_after_failure {
                    format!(
                        "{unit} || {{ polyprof_s=$?; [ \"$polyprof_rc\" -ne 0 ] || \
                         polyprof_rc=$polyprof_s; }}"
                    )
                } else {
                    format!("[ \"$polyprof_rc\" -ne 0 ] || {unit} || polyprof_rc=$?")
                });
            }
            parts.push("(exit \"$polyprof_rc\")".to_string());
            Ok(parts.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    //! What a shell makes of the scripts is checked by running them: `tests/seam_quote_shell.rs`.
    use super::*;

    #[test]
    fn nul_and_bad_env_names_are_errors() {
        assert!(quote("a\0b").is_err());
        let mut c = CommandSpec::new(vec!["true".into()]);
        c.env.insert("1BAD".into(), "x".into());
        assert!(command_to_shell(&c).is_err());
        let empty = Plan {
            profiler: "test".into(),
            target: vec![],
            steps: vec![],
            outputs: Default::default(),
            capabilities: Vec::new(),
        };
        assert!(plan_to_shell(&empty).is_err());
    }
}
