//! The connection to the container engine: connect, negotiate the API version, and tell each
//! container who owns it so a later polyprof can reap what a dead one left.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use bollard::Docker;

use super::error::{ContainerError, classify};
use super::spec::JOB_LABEL;

/// Labels naming the polyprof process that created a container.
pub const HOST_LABEL: &str = "polyprof.host";
pub const PID_LABEL: &str = "polyprof.pid";
/// The owner's start time (clock ticks since boot, Linux): a reused pid is not the owner.
pub const PID_START_LABEL: &str = "polyprof.pid_start";

/// A connected engine. Cheap to clone (one shared HTTP client).
#[derive(Debug, Clone)]
pub struct Engine {
    docker: Docker,
}

impl Engine {
    /// Connect as the docker CLI does (`DOCKER_HOST`, else the local socket) and negotiate the
    /// API version down to what the engine speaks (Docker 20.10 stops at 1.41).
    pub async fn connect() -> Result<Engine, ContainerError> {
        let no_engine = |e: bollard::errors::Error| ContainerError::NoEngine {
            detail: e.to_string(),
        };
        let docker = Docker::connect_with_defaults().map_err(no_engine)?;
        let docker = docker.negotiate_version().await.map_err(no_engine)?;
        Ok(Engine { docker })
    }

    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    /// The API version in use after negotiation.
    pub fn api_version(&self) -> String {
        self.docker.client_version().to_string()
    }

    /// Whether the image is on the engine (the clear error when it is not).
    pub async fn require_image(&self, image: &str) -> Result<(), ContainerError> {
        self.docker
            .inspect_image(image)
            .await
            .map(|_| ())
            .map_err(|e| match e {
                bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                } => ContainerError::ImageMissing {
                    image: image.to_string(),
                },
                e => classify("inspect the image", image, e),
            })
    }
}

/// A fresh job id, unique on this host: pid, a counter, and the time.
pub fn new_job_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{n}-{nanos:09}", std::process::id())
}

/// Labels for a container of job `id` owned by this process.
pub fn owner_labels(id: &str) -> HashMap<String, String> {
    let pid = std::process::id();
    let mut labels = HashMap::from([
        (JOB_LABEL.to_string(), id.to_string()),
        (HOST_LABEL.to_string(), hostname()),
        (PID_LABEL.to_string(), pid.to_string()),
    ]);
    if let Some(start) = process_start(pid) {
        labels.insert(PID_START_LABEL.to_string(), start);
    }
    labels
}

/// This host's name as container labels record it (`unknown` when there is none).
pub fn hostname() -> String {
    crate::pipeline::host::hostname().unwrap_or_else(|| "unknown".to_string())
}

/// Field 22 of `/proc/<pid>/stat` (after the parenthesised command name, which may hold
/// spaces). `None` where there is no procfs.
pub fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19).map(str::to_string)
}

/// Whether the polyprof that labelled a container is still running (on this host).
pub fn owner_alive(labels: &HashMap<String, String>) -> bool {
    let Some(pid) = labels.get(PID_LABEL).and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    let exists =
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok_or_eperm();
    if !exists {
        return false;
    }
    match (labels.get(PID_START_LABEL), process_start(pid)) {
        (Some(recorded), Some(now)) => *recorded == now,
        _ => true,
    }
}

trait OkOrEperm {
    fn is_ok_or_eperm(&self) -> bool;
}

impl OkOrEperm for nix::Result<()> {
    /// EPERM: the process exists but belongs to someone else.
    fn is_ok_or_eperm(&self) -> bool {
        matches!(self, Ok(()) | Err(nix::errno::Errno::EPERM))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_owns_its_labels_and_a_dead_pid_does_not() {
        let labels = owner_labels("t");
        assert!(owner_alive(&labels));
        let mut reused = labels.clone();
        if reused.contains_key(PID_START_LABEL) {
            reused.insert(PID_START_LABEL.to_string(), "1".to_string());
            assert!(!owner_alive(&reused), "a reused pid is not the owner");
        }
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let dead = HashMap::from([(PID_LABEL.to_string(), pid.to_string())]);
        assert!(!owner_alive(&dead));
        assert!(!owner_alive(&HashMap::new()));
    }

    #[test]
    fn job_ids_are_distinct() {
        assert_ne!(new_job_id(), new_job_id());
    }
}
