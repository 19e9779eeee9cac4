//! What a supervised process run ended with. Typed, serializable, vendor-free.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// The process exited by itself with this status.
    Exited { code: i32 },
    /// The process was ended by a signal polyprof did not send.
    Signalled { signal: i32 },
    /// The supervising process (`polyprof run`'s default tracking) was ended by a signal
    /// polyprof did not send, e.g. a command that ran `kill -9 $PPID`, or the OOM killer. The
    /// command's own status is unknown; what was left of its tree was killed (`killed`).
    SupervisorKilled { signal: i32 },
    /// The overall wall-clock timeout fired; the group was stopped.
    TimedOut { after_s: f64 },
    /// No output for the inactivity timeout; the group was stopped.
    Inactive { after_s: f64 },
    /// The end marker was seen, the process did not exit within the marker grace, and the group
    /// was stopped. `passed` tells what the marker said (pytest: no failures or errors).
    HungAfterMarker { marker_line: String, passed: bool },
    /// The caller cancelled the run (token or Ctrl-C); the group was stopped.
    Cancelled,
    /// The process could not be started.
    SpawnFailed {
        error: String,
        /// The OS error number of the failed exec, when there was one (ENOENT: not found,
        /// EACCES/ENOEXEC: not executable).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        errno: Option<i32>,
    },
}

impl Outcome {
    /// True when the work itself succeeded: exit 0, or a passing marker followed by a hang.
    pub fn is_success(&self) -> bool {
        matches!(
            self,
            Outcome::Exited { code: 0 } | Outcome::HungAfterMarker { passed: true, .. }
        )
    }
}

/// What the end-marker detector saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MarkerSeen {
    pub line: String,
    /// pytest: no failed tests and no errors; other markers: always true.
    pub passed: bool,
    /// Seconds since spawn.
    pub at_s: f64,
}

/// Moments of a run, in seconds since the spawn call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Timings {
    /// How long spawning took.
    pub spawn_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_output_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker_s: Option<f64>,
    /// When the leader process was reaped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_s: Option<f64>,
    /// When the runner returned.
    pub end_s: f64,
}

/// What was captured of one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamCapture {
    /// Raw log of the stream on disk (every byte, up to the log cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_path: Option<PathBuf>,
    /// Bytes the child wrote to the stream.
    pub total_bytes: u64,
    pub lines: u64,
    /// First lines (lossy UTF-8), bounded.
    pub head: Vec<String>,
    /// Last lines (lossy UTF-8), bounded; does not repeat lines that are in `head`.
    pub tail: Vec<String>,
    /// Lines longer than the line limit were cut into pieces.
    pub long_lines_split: bool,
    /// The log file hit its cap; head and tail of the stream were kept, the middle dropped.
    pub log_truncated: bool,
    /// Lines dropped between `head` and `tail`.
    pub lines_omitted: u64,
}

/// The full result of one supervised run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunResult {
    pub argv: Vec<crate::model::arg::Arg>,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<MarkerSeen>,
    pub timings: Timings,
    /// Processes of the group still held the pipes (or were alive) after the leader exited; they
    /// were killed.
    pub leaked: bool,
    /// Processes the command left behind that polyprof had to kill, and how each escaped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub killed: Vec<KilledProcess>,
    pub stdout: StreamCapture,
    pub stderr: StreamCapture,
    /// Things the caller should see: "passed, then hung; stopped after 10 s grace", …
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Exited { code } => write!(f, "exited with code {code}"),
            Outcome::Signalled { signal } => write!(f, "killed by signal {signal}"),
            Outcome::SupervisorKilled { signal } => {
                write!(f, "its supervising process was killed by signal {signal}")
            }
            Outcome::TimedOut { after_s } => write!(f, "timed out after {after_s:.3} s"),
            Outcome::Inactive { after_s } => write!(f, "no output for {after_s:.3} s"),
            Outcome::HungAfterMarker { passed: true, .. } => {
                write!(f, "passed, then hung after the end marker")
            }
            Outcome::HungAfterMarker { passed: false, .. } => {
                write!(f, "failed, then hung after the end marker")
            }
            Outcome::Cancelled => write!(f, "cancelled"),
            Outcome::SpawnFailed { error, .. } => write!(f, "failed to start: {error}"),
        }
    }
}

/// How a process left behind got out of reach of a signal to the command's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Escape {
    /// It called setsid(): a new session (a daemon).
    NewSession,
    /// It moved to a process group of its own (setpgid).
    NewProcessGroup,
    /// Its parent exited (a double fork); the supervisor adopted it as subreaper.
    Reparented,
    /// It stayed in the command's group and outlived the command.
    InGroup,
}

impl std::fmt::Display for Escape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Escape::NewSession => "left the session (setsid)",
            Escape::NewProcessGroup => "left the process group",
            Escape::Reparented => "orphaned by its parent (double fork)",
            Escape::InGroup => "stayed in the group after the command exited",
        })
    }
}

/// A process polyprof killed at the end of a run because the command left it behind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KilledProcess {
    pub pid: i32,
    /// Its command line (lossy, cut at 1 KiB; empty if it could not be read).
    pub argv: Vec<String>,
    pub escaped: Escape,
}
