//! What a caller can tune about one supervised run.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::env::EnvPolicy;
use crate::model::plan::{EndMarker, Graces};

/// Default line limit: longer lines are cut into pieces of this size.
pub const DEFAULT_LINE_LIMIT: usize = 1 << 20;
/// Default cap of one stream's log file.
pub const DEFAULT_LOG_CAP: u64 = 256 << 20;
/// Default wait for the pipes to close after the leader exited.
pub const DEFAULT_LEAK_TIMEOUT: Duration = Duration::from_millis(250);

/// Which stream of the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKind {
    Stdout,
    Stderr,
}

impl StreamKind {
    pub fn name(self) -> &'static str {
        match self {
            StreamKind::Stdout => "stdout",
            StreamKind::Stderr => "stderr",
        }
    }
}

/// One line (or one piece of a line longer than the line limit), delivered live.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub stream: StreamKind,
    /// Lossy UTF-8, without the newline (and without a trailing `\r`).
    pub text: String,
    /// Part of a line longer than the limit.
    pub piece: bool,
    /// More pieces of the same line follow.
    pub continues: bool,
    /// Seconds since spawn.
    pub at_s: f64,
}

/// Where live lines go. A callback runs on the reading task and must be quick; a channel never
/// blocks reading: when it is full, lines are dropped from the channel (never from the logs) and
/// counted in a warning.
#[derive(Clone)]
pub enum LineSink {
    Callback(Arc<dyn Fn(&Line) + Send + Sync>),
    Channel(tokio::sync::mpsc::Sender<Line>),
}

impl fmt::Debug for LineSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineSink::Callback(_) => f.write_str("LineSink::Callback"),
            LineSink::Channel(_) => f.write_str("LineSink::Channel"),
        }
    }
}

/// How to supervise one process.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Overall wall-clock limit.
    pub timeout: Option<Duration>,
    /// Limit on the time without any output on either stream (not applied after the end marker:
    /// the marker grace bounds that part).
    pub inactivity_timeout: Option<Duration>,
    /// Checked on every line of both streams.
    pub end_marker: EndMarker,
    pub graces: Graces,
    /// After the leader exited: how long the pipes may stay open (grandchildren holding them).
    pub leak_timeout: Duration,
    /// Longer lines are cut into pieces of this many bytes.
    pub line_limit: usize,
    /// Where `<log_name>.stdout.log` and `<log_name>.stderr.log` go; `None`: no logs on disk.
    pub log_dir: Option<PathBuf>,
    pub log_name: String,
    /// Cap of each log file in bytes (head and tail kept beyond it).
    pub log_cap: u64,
    /// Also write stdout verbatim, uncapped, to this file.
    pub stdout_file: Option<PathBuf>,
    pub env_policy: EnvPolicy,
    /// Added after the policy (the command's own variables come on top of these).
    pub extra_env: BTreeMap<String, String>,
    /// Variables set for the command whose values are not UTF-8 (bytes as given); after
    /// `extra_env`, under the same policy. Local processes only: a container refuses them.
    pub extra_env_bytes: BTreeMap<String, std::ffi::OsString>,
    /// Lines kept in memory from the start and the end of each stream.
    pub head_lines: usize,
    pub tail_lines: usize,
    pub cancel: CancellationToken,
    pub line_sink: Option<LineSink>,
    /// Linux: the child gets SIGKILL if polyprof dies.
    pub parent_death_signal: bool,
    /// How the command's descendants are found and ended.
    pub tracking: Tracking,
    /// A second request to stop (a second Ctrl-C): SIGKILL at once, whatever the run is doing.
    pub kill_now: CancellationToken,
    /// Live echo of both streams (best effort, never blocks the run).
    pub echo: Option<super::echo::Echo>,
}

/// How the command's descendants are tracked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Tracking {
    /// The process group only: a descendant that calls setsid() or setpgid() escapes it.
    #[default]
    Group,
    /// A supervising process (`exe` run in its hidden mode, see [`super::supervisor`]) that is
    /// a child subreaper: every descendant is found and killed when the run ends, and the tree
    /// dies with polyprof. `exe` must call `supervisor::run_if_requested()` first in `main`
    /// (the polyprof binary does).
    Supervisor { exe: PathBuf },
    /// The supervisor, with the command in a cgroup v2 of its own where one can be created
    /// (`cgroup.kill` ends the whole tree at once, no fork outruns it, and the runner still
    /// ends it if the supervisor itself is killed); elsewhere the same as `Supervisor`. Not the
    /// default: it writes below the caller's own cgroup, which a service manager may consider
    /// its own. About 0.3 ms per run (see docs/runner.md).
    Cgroup { exe: PathBuf },
}

impl Tracking {
    /// The supervising executable, when there is one.
    pub fn supervisor_exe(&self) -> Option<&std::path::Path> {
        match self {
            Tracking::Group => None,
            Tracking::Supervisor { exe } | Tracking::Cgroup { exe } => Some(exe),
        }
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            timeout: None,
            inactivity_timeout: None,
            end_marker: EndMarker::None,
            graces: Graces::default(),
            leak_timeout: DEFAULT_LEAK_TIMEOUT,
            line_limit: DEFAULT_LINE_LIMIT,
            log_dir: None,
            log_name: "run".to_string(),
            log_cap: DEFAULT_LOG_CAP,
            stdout_file: None,
            env_policy: EnvPolicy::Inherit,
            extra_env: BTreeMap::new(),
            extra_env_bytes: BTreeMap::new(),
            head_lines: 50,
            tail_lines: 50,
            cancel: CancellationToken::new(),
            line_sink: None,
            parent_death_signal: true,
            tracking: Tracking::default(),
            kill_now: CancellationToken::new(),
            echo: None,
        }
    }
}
