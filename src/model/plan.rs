//! What a profiler asks the runner to do: argv vectors, environment, end markers, steps, retries.
//! A plan is data; profilers build it and never run processes themselves.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::arg::Arg;
use crate::model::error::{Error, Result};

/// What tells the runner that the profiled work is done even if the process then hangs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum EndMarker {
    /// pytest's final summary line (`2 passed in 8.10s`, `=== 1 failed, 1 warning in 0.1s ===`).
    #[default]
    Pytest,
    /// A literal substring of a line.
    Literal(String),
    /// A regular expression matched against each line.
    Regex(String),
    /// No marker: wait for the process to exit (or a timeout).
    None,
}

impl FromStr for EndMarker {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "pytest" => Ok(EndMarker::Pytest),
            "none" => Ok(EndMarker::None),
            _ => {
                if let Some(literal) = text.strip_prefix("literal:") {
                    if literal.is_empty() {
                        return Err(Error::invalid(
                            "end marker",
                            "`literal:` needs text after the colon",
                        ));
                    }
                    Ok(EndMarker::Literal(literal.to_string()))
                } else if let Some(pattern) = text.strip_prefix("regex:") {
                    regex::Regex::new(pattern).map_err(|e| {
                        Error::invalid(
                            "end marker",
                            format!("`{pattern}` is not a valid regex: {e}"),
                        )
                    })?;
                    Ok(EndMarker::Regex(pattern.to_string()))
                } else {
                    Err(Error::UnknownValue {
                        what: "end marker",
                        value: text.to_string(),
                        valid: "pytest, none, literal:TEXT, regex:RE".to_string(),
                    })
                }
            }
        }
    }
}

impl fmt::Display for EndMarker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndMarker::Pytest => f.write_str("pytest"),
            EndMarker::None => f.write_str("none"),
            EndMarker::Literal(text) => write!(f, "literal:{text}"),
            EndMarker::Regex(pattern) => write!(f, "regex:{pattern}"),
        }
    }
}

/// One process to start: an argv vector (never a shell string), extra environment, working dir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandSpec {
    /// Argv words as bytes, not necessarily UTF-8 (a string, or `{"bytes_hex": …}`).
    pub argv: Vec<Arg>,
    /// Variables added on top of the job's environment policy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
}

impl CommandSpec {
    /// From text: `CommandSpec::new(vec!["sh".into(), "-c".into()])`; any words with
    /// [`crate::model::arg::args`].
    pub fn new(argv: Vec<Arg>) -> Self {
        CommandSpec {
            argv,
            env: BTreeMap::new(),
            cwd: None,
        }
    }
}

/// How long to wait around the end marker and when stopping a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Graces {
    /// After the end marker: how long the process may take to exit by itself.
    #[serde(with = "duration_secs")]
    #[schemars(with = "f64")]
    pub marker_grace: Duration,
    /// After SIGTERM: how long before SIGKILL.
    #[serde(with = "duration_secs")]
    #[schemars(with = "f64")]
    pub kill_grace: Duration,
}

impl Default for Graces {
    fn default() -> Self {
        Graces {
            marker_grace: Duration::from_secs(10),
            kill_grace: Duration::from_secs(2),
        }
    }
}

/// Accepts a step's attempt, or asks for another one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Validator {
    /// The attempt exited with status 0.
    ExitZero,
    /// Exit 0 and the newest file (by modification time) in `dir` whose name starts with
    /// `prefix` has at least `min_lines` lines.
    FileMinLines {
        dir: PathBuf,
        prefix: String,
        min_lines: usize,
    },
}

/// Run a step again until its validator accepts the output, up to `max_attempts` times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub validator: Validator,
    /// Files in the output directory, by name prefix, removed before each attempt so a stale
    /// attempt's output is never mistaken for the current one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clean_prefixes: Vec<String>,
}

/// One process of a plan, with its own end condition and failure handling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Step {
    /// Short label: `profile`, `collect`, `report`, …
    pub name: String,
    pub command: CommandSpec,
    pub end_marker: EndMarker,
    pub graces: Graces,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// Where the step's stdout must also be written verbatim (e.g. VTune's report CSV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_file: Option<PathBuf>,
    /// Run this step even when the previous one failed (a report after a failed collect still
    /// salvages what was collected).
    #[serde(default)]
    pub run_after_failure: bool,
}

impl Step {
    /// A single step with the default end marker handling of its profiler.
    pub fn new(name: &str, command: CommandSpec, end_marker: EndMarker, graces: Graces) -> Self {
        Step {
            name: name.to_string(),
            command,
            end_marker,
            graces,
            retry: None,
            stdout_file: None,
            run_after_failure: false,
        }
    }
}

/// Everything a profiler wants run for one pass over a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    /// The profiler's stable name (`ncu`, `unitrace`, …, or `none`).
    pub profiler: String,
    /// The target argv, exactly as given.
    pub target: Vec<Arg>,
    pub steps: Vec<Step>,
    /// The files the profiler writes and the ones staged before it runs.
    #[serde(default, skip_serializing_if = "DeclaredOutputs::is_empty")]
    pub outputs: DeclaredOutputs,
    /// Linux capabilities the commands need beyond an unprivileged process's (`SYS_ADMIN` for
    /// admin-only GPU counters). Local runs cannot grant them; a container target adds them
    /// and drops every other one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

/// A file name in the output directory, matched by exact name, prefix or regular expression.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum FilePattern {
    Name(String),
    Prefix(String),
    Regex(String),
}

impl FilePattern {
    /// Whether `name` matches. An invalid regular expression matches nothing.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            FilePattern::Name(exact) => name == exact,
            FilePattern::Prefix(prefix) => name.starts_with(prefix.as_str()),
            FilePattern::Regex(pattern) => {
                regex::Regex::new(pattern).is_ok_and(|re| re.is_match(name))
            }
        }
    }
}

/// A small file written into the output directory before the run (a config, a script).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StagedFile {
    /// File name relative to the output directory.
    pub name: String,
    pub content: String,
}

/// What a backend declares about its output directory; the pipeline acts on it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeclaredOutputs {
    /// Files collected after the run, in this order (within one pattern by name). Each is read
    /// (capped) into a raw artifact and handed to the backend's parser.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collect: Vec<FilePattern>,
    /// Entries that must not exist before the run: a previous run's output would be read (or
    /// reported on) as this run's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fresh: Vec<FilePattern>,
    /// Files written before the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stage: Vec<StagedFile>,
    /// Folders directly in the output directory whose files are offered to `collect` too, as
    /// `folder/file` (rocprofv3 writes each counter pass into `pass_1/`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collect_in: Vec<FilePattern>,
}

impl DeclaredOutputs {
    pub fn is_empty(&self) -> bool {
        self.collect.is_empty()
            && self.fresh.is_empty()
            && self.stage.is_empty()
            && self.collect_in.is_empty()
    }

    /// The index of the first collect pattern `name` matches.
    pub fn collect_rank(&self, name: &str) -> Option<usize> {
        self.collect.iter().position(|p| p.matches(name))
    }

    /// Whether an existing entry `name` is a previous run's output.
    pub fn is_stale(&self, name: &str) -> bool {
        self.fresh.iter().any(|p| p.matches(name))
    }
}

/// serde helper: durations as fractional seconds.
pub mod duration_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(value.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_marker_round_trips_through_text() {
        for text in [
            "pytest",
            "none",
            "literal:VTUNE_DONE",
            "regex:^done \\d+$",
            "literal:a:b",
        ] {
            let marker: EndMarker = text.parse().unwrap();
            assert_eq!(marker.to_string(), text);
        }
    }

    #[test]
    fn end_marker_rejects_unknown_and_bad_regex() {
        let err = "pyest".parse::<EndMarker>().unwrap_err().to_string();
        assert!(
            err.contains("pytest, none, literal:TEXT, regex:RE"),
            "{err}"
        );
        let err = "regex:(".parse::<EndMarker>().unwrap_err().to_string();
        assert!(err.contains("not a valid regex"), "{err}");
        assert!("literal:".parse::<EndMarker>().is_err());
    }
}
