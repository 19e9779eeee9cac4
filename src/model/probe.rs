//! What a backend may ask about the machine before a run, and the answers it gets back.
//! Backends judge availability from these answers; only the pipeline's probe runner
//! ([`Probe`] implemented there) starts processes or reads the host's files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A short command a backend wants the answer of (`ncu --version`, `nvidia-smi -L`,
/// `ncu --query-metrics --chip gh100`). Argv, never a shell string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeRequest {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The probe is stopped (its whole process group) when it runs longer.
    pub timeout: Duration,
    /// Set on top of the inherited environment (`LC_ALL=C` is always set).
    pub env: BTreeMap<String, String>,
}

impl ProbeRequest {
    pub fn new(program: impl Into<PathBuf>, args: &[&str], timeout: Duration) -> Self {
        ProbeRequest {
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            timeout,
            env: BTreeMap::new(),
        }
    }

    /// `program arg…` as shown in messages.
    pub fn shown(&self) -> String {
        let mut shown = self.program.display().to_string();
        for arg in &self.args {
            shown.push(' ');
            shown.push_str(arg);
        }
        shown
    }
}

/// What a probe command printed and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeOutput {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl ProbeOutput {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// How it ended, as a shell would say it (`exit status: 3`, `signal`).
    pub fn status_text(&self) -> String {
        match self.code {
            Some(code) => format!("exit status: {code}"),
            None => "a signal".to_string(),
        }
    }
}

/// Why a probe command gave no output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot start `{command}`: {message}")]
    Spawn { command: String, message: String },
    #[error("`{command}` did not answer within {}s", timeout.as_secs())]
    TimedOut { command: String, timeout: Duration },
    #[error("`{command}` was cancelled")]
    Cancelled { command: String },
    #[error("`{command}` failed: {message}")]
    Wait { command: String, message: String },
}

/// Whether a device node can be opened for reading and writing (what the ROCm runtime needs
/// of `/dev/kfd` and the render nodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeAccess {
    Missing,
    Denied,
    ReadWrite,
    /// The probe cannot tell.
    Unknown,
}

/// The questions a backend may ask. The pipeline answers them on the host; a backend never
/// asks the operating system itself, so its judgement is a pure function of these answers.
pub trait Probe: Send + Sync {
    /// The full path of `name` on `PATH` (or `name` itself when it is a path that exists).
    fn find_binary(&self, name: &str) -> Option<PathBuf>;
    /// Run a short command to completion or its timeout, output drained while it runs.
    fn run(&self, command: &ProbeRequest) -> Result<ProbeOutput, ProbeError>;
    /// The content of a small text file (sysctl, driver parameters, a cache entry).
    fn read_text(&self, path: &Path) -> Option<String>;
    /// Write a small text file atomically (a cache entry); false when it could not be written.
    fn write_text(&self, path: &Path, text: &str) -> bool;
    /// The names of the entries of a directory, sorted; empty when it cannot be listed.
    fn list_dir(&self, path: &Path) -> Vec<String>;
    /// Where a symbolic link points (sysfs `device/driver` → `…/drivers/xe`); `None` when
    /// `path` is no link or cannot be read.
    fn read_link(&self, _path: &Path) -> Option<PathBuf> {
        None
    }
    /// A variable of polyprof's own environment.
    fn env_var(&self, name: &str) -> Option<String>;
    /// Whether polyprof runs as root.
    fn is_root(&self) -> bool;
    /// Whether polyprof may open `path` (a device node) for reading and writing.
    fn node_access(&self, _path: &Path) -> NodeAccess {
        NodeAccess::Unknown
    }
    /// The operating system (`linux`, `macos`, …).
    fn host_os(&self) -> &str;
}
