//! What one container job is: the image, the mounts, the GPU request, the limits. Plain data;
//! nothing here talks to the engine or names a vendor.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::ContainerError;
use crate::model::plan::FilePattern;

/// GPUs handed to the container, as `docker --gpus` sends them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuRequest {
    /// `--gpus all`.
    All,
    /// `--gpus N`: any N devices.
    Count(u32),
    /// `--gpus device=0,1` (indices or UUIDs).
    Ids(Vec<String>),
}

impl FromStr for GpuRequest {
    type Err = ContainerError;

    /// `all`, a count, or device ids separated by commas (an optional `device=` prefix is
    /// accepted, as docker's own flag takes it).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || ContainerError::BadGpuRequest {
            value: text.to_string(),
        };
        let text = text.trim();
        if text.eq_ignore_ascii_case("all") {
            return Ok(GpuRequest::All);
        }
        let ids = text.strip_prefix("device=").unwrap_or(text);
        if !text.starts_with("device=")
            && let Ok(count) = ids.parse::<u32>()
        {
            return if count == 0 {
                Err(bad())
            } else {
                Ok(GpuRequest::Count(count))
            };
        }
        let ids: Vec<String> = ids.split(',').map(|s| s.trim().to_string()).collect();
        if ids
            .iter()
            .any(|id| id.is_empty() || id.contains(char::is_whitespace))
        {
            return Err(bad());
        }
        // A single bare number was a count above; `0,1` or `GPU-…` are device ids.
        Ok(GpuRequest::Ids(ids))
    }
}

impl fmt::Display for GpuRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuRequest::All => f.write_str("all"),
            GpuRequest::Count(n) => write!(f, "{n}"),
            GpuRequest::Ids(ids) => write!(f, "device={}", ids.join(",")),
        }
    }
}

/// A host path bound into the container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindMount {
    /// Host path (made absolute before the container is created).
    pub source: PathBuf,
    /// Path inside the container (absolute).
    pub target: PathBuf,
    pub read_only: bool,
}

impl FromStr for BindMount {
    type Err = ContainerError;

    /// `SRC:DST`, `SRC:DST:ro` or `SRC:DST:rw`, as `docker -v` takes them. Any other mode
    /// (`RO`, `xyz`, an empty one) is refused: read as part of `DST`, it would mount
    /// read-write what the caller meant to protect.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| ContainerError::BadMount {
            value: text.to_string(),
            why: why.to_string(),
        };
        let parts: Vec<&str> = text.split(':').collect();
        let (source, target, read_only) = match parts.as_slice() {
            [source, target] => (*source, *target, false),
            [source, target, "ro"] => (*source, *target, true),
            [source, target, "rw"] => (*source, *target, false),
            [_, _, ""] => {
                return Err(bad(
                    "the mode after the last `:` is empty; use ro or rw, or leave out the `:`",
                ));
            }
            [_, _, mode] => {
                return Err(bad(&format!(
                    "unknown mode `{mode}`; the mode is `ro` or `rw` (lower case), or left out for read-write"
                )));
            }
            [_] => return Err(bad("expected SRC:DST, SRC:DST:ro or SRC:DST:rw")),
            _ => {
                return Err(bad(
                    "too many `:`; expected SRC:DST[:ro|:rw] (paths with `:` cannot be mounted)",
                ));
            }
        };
        if source.is_empty() || target.is_empty() {
            return Err(bad("SRC and DST must not be empty"));
        }
        if !target.starts_with('/') {
            return Err(bad("DST must be an absolute path inside the container"));
        }
        Ok(BindMount {
            source: PathBuf::from(source),
            target: PathBuf::from(target),
            read_only,
        })
    }
}

/// Resource limits of the container. `None` leaves the engine's default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerLimits {
    /// Most processes and threads at once (a fork bomb stops here).
    pub pids: Option<i64>,
    /// Memory limit in bytes.
    pub memory_bytes: Option<i64>,
    /// Size of `/dev/shm` in bytes (the engine's default is 64 MiB, too small for many ML
    /// frameworks).
    pub shm_bytes: Option<i64>,
}

impl Default for ContainerLimits {
    fn default() -> Self {
        ContainerLimits {
            pids: Some(4096),
            memory_bytes: None,
            shm_bytes: Some(1 << 30),
        }
    }
}

/// Everything about running a plan's commands in a container except the commands themselves:
/// those come from the same [`Plan`](crate::profilers::Plan) as local runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerJob {
    /// Image reference, already on the engine (polyprof never pulls).
    pub image: String,
    /// Working directory inside the container; default: the job's output directory, which is
    /// bound at the same path as on the host so the plan's paths mean the same inside.
    pub workdir: Option<PathBuf>,
    /// Extra bind mounts (inputs, usually read-only). The output directory is always bound
    /// read-write.
    pub mounts: Vec<BindMount>,
    pub gpus: Option<GpuRequest>,
    /// Device nodes passed through as they are (`/dev/dri` for Intel GPUs).
    pub devices: Vec<PathBuf>,
    /// Linux capabilities the plan asks for (e.g. `SYS_ADMIN`); every other one is dropped.
    pub capabilities: Vec<String>,
    /// Network mode; `None`: no network at all.
    pub network: Option<String>,
    /// `UID[:GID]` inside the container, so output files belong to the caller; `None`: the
    /// image's user.
    pub user: Option<String>,
    pub limits: ContainerLimits,
    /// How output files reach this host.
    #[serde(default)]
    pub output: OutputTransfer,
    /// With [`OutputTransfer::Copy`]: the files to copy out (the plan's declared outputs);
    /// none: every file of the output directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copy_patterns: Vec<FilePattern>,
    /// The executable started as the watchdog that removes this process's containers when it
    /// dies (see [`super::watchdog`]); it must call `watchdog::run_if_requested()` first in
    /// `main` (`polyprof` and `polyprof-supervise` do). `None`: the run options' supervisor
    /// executable, else no watchdog (a polyprof killed with SIGKILL then leaves its container
    /// until the next reaping). Never read from a job file.
    #[serde(skip)]
    pub watchdog: Option<PathBuf>,
}

/// How the output directory gets from the container to this host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputTransfer {
    /// Bound read-write at its own path: the engine sees this host's files.
    #[default]
    Bind,
    /// Not bound (a remote engine, Docker in Docker): after the command, the output files are
    /// copied out of the container before it is removed.
    Copy,
}

impl ContainerJob {
    pub fn new(image: impl Into<String>) -> Self {
        ContainerJob {
            image: image.into(),
            workdir: None,
            mounts: Vec::new(),
            gpus: None,
            devices: Vec::new(),
            capabilities: Vec::new(),
            network: None,
            user: None,
            limits: ContainerLimits::default(),
            output: OutputTransfer::Bind,
            copy_patterns: Vec::new(),
            watchdog: None,
        }
    }
}

impl ContainerJob {
    /// This job with the capabilities a plan asks for added (once each; `CAP_` prefix and case
    /// as Docker takes them, so `cap_sys_admin` and `SYS_ADMIN` are one).
    pub fn with_capabilities(mut self, wanted: &[String]) -> Self {
        for cap in wanted {
            let cap = cap.trim().to_ascii_uppercase();
            let cap = cap.strip_prefix("CAP_").unwrap_or(&cap).to_string();
            if !cap.is_empty() && !self.capabilities.contains(&cap) {
                self.capabilities.push(cap);
            }
        }
        self
    }
}

/// `UID:GID` of this process: run a container as it and the files it writes are the caller's.
pub fn caller_user() -> String {
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    format!("{uid}:{gid}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_requests_parse_like_docker_flags() {
        assert_eq!("all".parse::<GpuRequest>().unwrap(), GpuRequest::All);
        assert_eq!("2".parse::<GpuRequest>().unwrap(), GpuRequest::Count(2));
        assert_eq!(
            "0,1".parse::<GpuRequest>().unwrap(),
            GpuRequest::Ids(vec!["0".into(), "1".into()])
        );
        assert_eq!(
            "device=3".parse::<GpuRequest>().unwrap(),
            GpuRequest::Ids(vec!["3".into()])
        );
        for bad in ["0", "", "1,,2", "a b"] {
            let err = bad.parse::<GpuRequest>().unwrap_err().to_string();
            assert!(err.contains("all, a count"), "{bad}: {err}");
        }
    }

    #[test]
    fn plan_capabilities_are_added_once_in_dockers_spelling() {
        let mut job = ContainerJob::new("img");
        job.capabilities = vec!["SYS_PTRACE".into()];
        let job = job.with_capabilities(&[
            "cap_sys_admin".into(),
            "SYS_ADMIN".into(),
            "SYS_PTRACE".into(),
            " ".into(),
        ]);
        assert_eq!(job.capabilities, ["SYS_PTRACE", "SYS_ADMIN"]);
    }

    #[test]
    fn mounts_parse_with_optional_mode() {
        let m: BindMount = "/data:/in:ro".parse().unwrap();
        assert_eq!(
            (m.source.to_str(), m.target.to_str()),
            (Some("/data"), Some("/in"))
        );
        assert!(m.read_only);
        let m: BindMount = "rel/dir:/out".parse().unwrap();
        assert!(!m.read_only);
        let m: BindMount = "/data:/in:rw".parse().unwrap();
        assert!(!m.read_only);
        assert_eq!(m.target.to_str(), Some("/in"));
        assert!("/data".parse::<BindMount>().is_err());
        assert!("/data:rel".parse::<BindMount>().is_err());
        assert!(":/x:ro".parse::<BindMount>().is_err());
    }

    #[test]
    fn an_unknown_or_empty_mode_is_refused_not_read_as_part_of_dst() {
        for (text, says) in [
            ("/data:/in:RO", "unknown mode `RO`"),
            ("/data:/in:xyz", "unknown mode `xyz`"),
            ("/data:/in:", "mode after the last `:` is empty"),
            ("/data:/in:ro:rw", "too many `:`"),
            ("/data::ro", "must not be empty"),
            (":/in", "must not be empty"),
            ("/data:", "must not be empty"),
            ("::", "empty"),
            ("", "expected SRC:DST"),
        ] {
            let err = text.parse::<BindMount>().unwrap_err().to_string();
            assert!(err.contains(says), "{text:?}: {err}");
            assert!(err.contains(&format!("`{text}`")), "{text:?}: {err}");
        }
    }
}
