//! The string form of plans, for callers that hold a shell string. Quoting is POSIX `sh`
//! quoting via `shlex`; the round trip through a real `sh -c` is tested.
//!
//! What the string form keeps from a plan: every argv word verbatim, each step's extra
//! environment (`K='v'` prefixes), working directory, stdout file, retries (a bounded loop
//! with the validator checked in shell), and the step order with `run_after_failure`. The exit
//! status is the first failing step's. What it cannot keep: end markers and graces — those need
//! the runner, which watches output and stops processes.

use std::path::Path;

use crate::error::{Error, Result};

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

/// Quote an argv into one command line.
pub fn join(argv: &[String]) -> Result<String> {
    let mut words = Vec::with_capacity(argv.len());
    for (i, word) in argv.iter().enumerate() {
        words.push(if i == 0 {
            quote_command(word)?
        } else {
            quote(word)?
        });
    }
    Ok(words.join(" "))
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
    use super::*;
    use crate::model::plan::{EndMarker, Graces};
    use std::path::PathBuf;
    use std::process::Command;

    fn sh(script: &str) -> std::process::Output {
        Command::new("sh").arg("-c").arg(script).output().unwrap()
    }

    fn step(argv: &[&str]) -> Step {
        Step::new(
            "s",
            CommandSpec::new(argv.iter().map(|s| s.to_string()).collect()),
            EndMarker::None,
            Graces::default(),
        )
    }

    fn plan(steps: Vec<Step>) -> Plan {
        Plan {
            profiler: "test".into(),
            target: vec![],
            steps,
            outputs: Default::default(),
        }
    }

    #[test]
    fn reserved_words_in_command_position_are_quoted() {
        assert_eq!(quote_command("if").unwrap(), "'if'");
        assert_eq!(quote_command("unitrace").unwrap(), "unitrace");
        assert_eq!(join(&["done".into(), "if".into()]).unwrap(), "'done' if");
        // `A=1` as argv[0] must stay a command name, not become an assignment.
        let out = sh(&join(&["A=1".into()]).unwrap());
        assert!(!out.status.success());
    }

    #[test]
    fn nul_and_bad_env_names_are_errors() {
        assert!(quote("a\0b").is_err());
        let mut c = CommandSpec::new(vec!["true".into()]);
        c.env.insert("1BAD".into(), "x".into());
        assert!(command_to_shell(&c).is_err());
        assert!(plan_to_shell(&plan(vec![])).is_err());
    }

    #[test]
    fn env_cwd_and_stdout_file_reach_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let out_file = dir.path().join("out put.txt");
        let mut s = step(&["sh", "-c", "printf '%s|%s' \"$V\" \"$(pwd)\""]);
        s.command.env.insert("V".into(), "it's $(x) \"q\"".into());
        s.command.cwd = Some(dir.path().to_path_buf());
        s.stdout_file = Some(out_file.clone());
        let script = plan_to_shell(&plan(vec![s])).unwrap();
        assert!(sh(&script).status.success(), "{script}");
        let got = std::fs::read_to_string(out_file).unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        assert_eq!(got, format!("it's $(x) \"q\"|{}", cwd.display()));
    }

    #[test]
    fn steps_honour_run_after_failure_and_keep_first_failure() {
        let dir = tempfile::tempdir().unwrap();
        let mark = |name: &str| {
            let path = dir.path().join(name);
            step(&["touch", path.to_str().unwrap()])
        };
        let fail = step(&["sh", "-c", "exit 3"]);
        let mut report = mark("report");
        report.run_after_failure = true;
        let script = plan_to_shell(&plan(vec![fail, mark("skipped"), report])).unwrap();
        let out = sh(&script);
        assert_eq!(out.status.code(), Some(3), "{script}");
        assert!(dir.path().join("report").exists());
        assert!(!dir.path().join("skipped").exists());

        let script = plan_to_shell(&plan(vec![mark("a"), mark("b")])).unwrap();
        assert_eq!(sh(&script).status.code(), Some(0));
        assert!(dir.path().join("b").exists());
    }

    #[test]
    fn retry_loop_is_bounded_and_cleans_between_attempts() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap().to_string();
        // Each attempt appends to a counter and writes a metrics file of N lines, where N is
        // the attempt number: only the third attempt reaches 3 lines.
        let script = format!(
            "n=$(cat '{d}/count' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{d}/count'; \
             i=0; while [ $i -lt $n ]; do echo row; i=$((i+1)); done > '{d}/trace.metrics.'$n"
        );
        let mut s = step(&["sh", "-c", &script]);
        s.retry = Some(RetryPolicy {
            max_attempts: 5,
            validator: Validator::FileMinLines {
                dir: PathBuf::from(&d),
                prefix: "trace.metrics.".into(),
                min_lines: 3,
            },
            clean_prefixes: vec!["trace.".into()],
        });
        let text = plan_to_shell(&plan(vec![s.clone()])).unwrap();
        let out = sh(&text);
        assert!(out.status.success(), "{text}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("count")).unwrap(),
            "3\n"
        );
        // Earlier attempts' files were removed before each new attempt.
        assert!(!dir.path().join("trace.metrics.2").exists());
        assert!(dir.path().join("trace.metrics.3").exists());

        // Never valid: stops after max_attempts with a failing status.
        std::fs::remove_file(dir.path().join("count")).unwrap();
        if let Some(r) = s.retry.as_mut()
            && let Validator::FileMinLines { min_lines, .. } = &mut r.validator
        {
            *min_lines = 100;
        }
        let text = plan_to_shell(&plan(vec![s])).unwrap();
        assert!(!sh(&text).status.success());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("count")).unwrap(),
            "5\n"
        );
    }

    #[test]
    fn exit_zero_retry_stops_at_first_success() {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("c");
        let c = count.to_str().unwrap();
        let script = format!("echo x >> '{c}'; [ $(wc -l < '{c}') -ge 2 ]");
        let mut s = step(&["sh", "-c", &script]);
        s.retry = Some(RetryPolicy {
            max_attempts: 4,
            validator: Validator::ExitZero,
            clean_prefixes: vec![],
        });
        let text = plan_to_shell(&plan(vec![s])).unwrap();
        assert!(sh(&text).status.success(), "{text}");
        assert_eq!(std::fs::read_to_string(&count).unwrap(), "x\nx\n");
    }
}
