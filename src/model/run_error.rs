//! A run's errors, typed: who failed (`kind`) and what to do (`message`). Schema version 2 of
//! the run document writes them as `{"kind", "message"}` objects; version 1 wrote plain strings,
//! which still load, as kind `unknown`.

use serde::{Deserialize, Serialize};

use crate::model::error::Error;

/// Who or what failed, so a caller can decide without reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The job asked for something polyprof does not know or accept (profiler name, settings).
    Usage,
    /// A configuration file could not be read.
    Config,
    /// The profiler cannot run on this machine (preflight); the message names the fix.
    ProfilerUnavailable,
    /// The profiler's pre-run step (metric query, staged files) failed.
    Prepare,
    /// A command of the plan could not be started.
    Spawn,
    /// A step other than the main one ran past its overall or inactivity timeout.
    Timeout,
    /// A step other than the main one was cancelled.
    Cancelled,
    /// A step ran but its exit status or its validator rejected it.
    StepRejected,
    /// The container engine failed a step (unreachable engine, missing image, GPU runtime).
    Container,
    /// The profiler's output could not be read or parsed, or held no data.
    ProfilerOutput,
    /// The profiler reported an error (an error-severity diagnostic, e.g. `application_error`).
    Diagnostic,
    /// A file or directory polyprof itself needed (output directory, run.json) failed.
    Io,
    /// A bug in polyprof (a panic in a backend); the logs are kept.
    Internal,
    /// Read from a schema_version 1 document, which did not say, or a kind newer than this
    /// polyprof.
    #[serde(other)]
    Unknown,
}

impl ErrorKind {
    /// The kind a library error stands for when it ends a pass.
    pub fn of(error: &Error) -> Self {
        match error {
            Error::ProfilerUnavailable { .. } => ErrorKind::ProfilerUnavailable,
            Error::UnknownValue { .. }
            | Error::InvalidArgument { .. }
            | Error::NoProfiler { .. } => ErrorKind::Usage,
            Error::Config { .. } => ErrorKind::Config,
            Error::Io { .. } | Error::Busy { .. } => ErrorKind::Io,
            Error::Parse { .. } | Error::NoData { .. } => ErrorKind::ProfilerOutput,
            Error::Spawn { .. } => ErrorKind::Spawn,
            Error::ProfilerFailed { .. } => ErrorKind::Diagnostic,
            Error::Json { .. } => ErrorKind::Internal,
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The serde name, so logs and JSON say the same word.
        let text = serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        f.write_str(&text)
    }
}

/// One error of a run. Displays as its message, so code that printed the v1 strings prints the
/// same text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(from = "RunErrorWire")]
pub struct RunError {
    pub kind: ErrorKind,
    /// What failed and what to do about it.
    pub message: String,
}

impl RunError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        RunError {
            kind,
            message: message.into(),
        }
    }
}

impl From<&Error> for RunError {
    fn from(error: &Error) -> Self {
        RunError::new(ErrorKind::of(error), error.to_string())
    }
}

impl From<Error> for RunError {
    fn from(error: Error) -> Self {
        RunError::from(&error)
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What a run document's `errors` entry may be: a v2 object or a v1 string.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum RunErrorWire {
    Typed { kind: ErrorKind, message: String },
    Legacy(String),
}

impl From<RunErrorWire> for RunError {
    fn from(wire: RunErrorWire) -> Self {
        match wire {
            RunErrorWire::Typed { kind, message } => RunError { kind, message },
            RunErrorWire::Legacy(message) => RunError {
                kind: ErrorKind::Unknown,
                message,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_objects_and_v1_strings_both_load() {
        let errors: Vec<RunError> = serde_json::from_str(
            r#"[{"kind": "profiler_unavailable", "message": "no ncu"}, "step `x` was not accepted"]"#,
        )
        .unwrap();
        assert_eq!(
            errors,
            [
                RunError::new(ErrorKind::ProfilerUnavailable, "no ncu"),
                RunError::new(ErrorKind::Unknown, "step `x` was not accepted"),
            ]
        );
        // A kind from a newer polyprof reads as unknown rather than failing the document.
        let newer: RunError =
            serde_json::from_str(r#"{"kind": "quantum_decoherence", "message": "m"}"#).unwrap();
        assert_eq!(newer.kind, ErrorKind::Unknown);
    }

    #[test]
    fn written_as_kind_and_message_and_displayed_as_the_message() {
        let error = RunError::new(ErrorKind::Io, "cannot write run.json");
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            serde_json::json!({"kind": "io", "message": "cannot write run.json"})
        );
        assert_eq!(error.to_string(), "cannot write run.json");
        assert_eq!(ErrorKind::ProfilerOutput.to_string(), "profiler_output");
    }

    #[test]
    fn library_errors_carry_their_kind() {
        let error = Error::ProfilerUnavailable {
            profiler: "ncu".into(),
            reason: "not on PATH".into(),
        };
        let run_error = RunError::from(&error);
        assert_eq!(run_error.kind, ErrorKind::ProfilerUnavailable);
        assert_eq!(run_error.message, error.to_string());
        assert_eq!(
            ErrorKind::of(&Error::invalid("settings", "bad")),
            ErrorKind::Usage
        );
    }
}
