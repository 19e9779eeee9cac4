//! The supervised async process runner: spawn in a process group, drain stdout and stderr
//! separately into capped logs and bounded line captures, watch the end marker and the
//! timeouts, stop the group (SIGTERM, grace, SIGKILL), detect leaked processes.

pub mod capture;
pub mod cgroup;
#[cfg(target_os = "linux")]
pub mod clone_into;
pub mod echo;
pub mod env;
pub mod logfile;
pub mod marker;
pub mod options;
pub mod orphans;
pub mod pytest;
pub mod reader;
pub mod spawn;
pub mod spawn_exec;
pub mod splitter;
pub mod supervise;
pub mod supervisor;
pub mod tree;

pub use env::EnvPolicy;
pub use options::{Line, LineSink, RunOptions, StreamKind, Tracking};
pub use supervise::run_command;
