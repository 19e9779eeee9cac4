//! The library's error type. Every message says what failed and what to do about it.

use std::path::PathBuf;

/// Errors returned by the polyprof library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller tried to use a profiler that cannot run on this machine.
    #[error("profiler `{profiler}` is unavailable: {reason}")]
    ProfilerUnavailable { profiler: String, reason: String },

    /// A name (language, arch, profiler, preset, format, …) is not one polyprof knows.
    #[error("unknown {what} `{value}`; valid values: {valid}")]
    UnknownValue {
        what: &'static str,
        value: String,
        valid: String,
    },

    /// A user-supplied argument is malformed.
    #[error("invalid {what}: {message}")]
    InvalidArgument { what: String, message: String },

    /// A configuration file (embedded default or user override) could not be read.
    #[error("invalid configuration `{origin}`: {message}")]
    Config { origin: String, message: String },

    /// Another live polyprof process holds the lock of a directory (a batch root, a run
    /// directory, a batch job); the lock is released when that process ends, however it ends.
    #[error("{what} `{}` is in use by {holder}; wait for it to end (or stop it), or choose another directory", path.display())]
    Busy {
        what: &'static str,
        path: PathBuf,
        holder: String,
    },

    /// A file or directory operation failed.
    #[error("{action} `{}`: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// Profiler output could not be parsed. `context` names the file or stream.
    #[error("cannot parse {context}: {message}")]
    Parse { context: String, message: String },

    /// A profiler ran but produced nothing usable; everything captured stays in the run directory.
    #[error("{profiler} produced no data: {reason}")]
    NoData { profiler: String, reason: String },

    /// A process could not be started.
    #[error("cannot start `{program}`: {source}; check that it exists and is executable")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },

    /// A profiler reported an error of a known kind (see `profilers::ProfilerDiagnostic`).
    #[error("{profiler}: {message}")]
    ProfilerFailed { profiler: String, message: String },

    /// JSON (de)serialization of a polyprof document failed.
    #[error("invalid JSON in {context}: {source}")]
    Json {
        context: String,
        #[source]
        source: serde_json::Error,
    },

    /// Selection found no profiler for a language on an arch's vendor (e.g. HIP, or `ncu`
    /// asked for an Intel arch). `reason` says why and what would fit.
    #[error("no profiler for language `{language}` on arch `{arch}`: {reason}")]
    NoProfiler {
        language: String,
        arch: String,
        reason: String,
    },
}

impl Error {
    /// Shorthand for [`Error::Io`].
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(what: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            what: what.into(),
            message: message.into(),
        }
    }
}

/// Result alias used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;
