//! The container flags of `polyprof run`: with `--container IMAGE` the plan's commands run in
//! containers of that image through the Docker Engine API instead of on this machine.

use std::path::PathBuf;

use polyprof::pipeline::ExecutionTarget;
use polyprof::pipeline::container::{
    BindMount, ContainerJob, ContainerLimits, Engine, GpuRequest, OutputTransfer, prune,
};

#[derive(Debug, Clone, clap::Args)]
pub struct ContainerArgs {
    /// Run the command in a container of this image (already on the engine; never pulled).
    #[arg(long, value_name = "IMAGE")]
    pub container: Option<String>,
    /// GPUs for the container, as `docker --gpus`: all, a count, or device ids (0,1).
    #[arg(long, value_name = "all|N|ID,ID", requires = "container")]
    pub gpus: Option<GpuRequest>,
    /// Bind a host path into the container (repeatable): read-write, or read-only with `:ro`
    /// (the mode is `ro` or `rw`; any other is refused). The output directory is always bound
    /// read-write at its own path.
    #[arg(
        long = "mount",
        value_name = "SRC:DST[:ro|:rw]",
        requires = "container"
    )]
    pub mounts: Vec<BindMount>,
    /// Give the container a network (`--network` alone: bridge) [default: none].
    #[arg(long, value_name = "MODE", num_args = 0..=1, default_missing_value = "bridge", requires = "container")]
    pub network: Option<String>,
    /// User inside the container, UID[:GID] [default: yours, so output files are yours].
    #[arg(long, value_name = "UID[:GID]", requires = "container")]
    pub user: Option<String>,
    /// A Linux capability the command needs (repeatable); all others are dropped.
    #[arg(long = "cap-add", value_name = "CAP", requires = "container")]
    pub capabilities: Vec<String>,
    /// Pass a device node through (repeatable), e.g. /dev/dri for Intel GPUs.
    #[arg(long = "device", value_name = "PATH", requires = "container")]
    pub devices: Vec<PathBuf>,
    /// Working directory inside the container [default: the output directory].
    #[arg(long, value_name = "PATH", requires = "container")]
    pub workdir: Option<PathBuf>,
    /// Do not bind the output directory: copy the output files out of the container when it
    /// ends (an engine that cannot see this machine's paths). The user defaults to the image's.
    #[arg(long, requires = "container")]
    pub copy_output: bool,
    /// Most processes and threads in the container.
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub pids_limit: i64,
    /// Memory limit of the container, MiB [default: none].
    #[arg(long, value_name = "MIB")]
    pub memory_mib: Option<i64>,
    /// Size of the container's /dev/shm, MiB.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub shm_mib: i64,
}

impl ContainerArgs {
    /// The execution target; for a container, first reaps containers an earlier polyprof left
    /// when it died (best effort: a prune failure only warns, the run's own error is clearer).
    /// `watchdog`: the executable that removes the containers if polyprof is killed.
    pub async fn target(&self, watchdog: Option<PathBuf>) -> anyhow::Result<ExecutionTarget> {
        let Some(image) = &self.container else {
            return Ok(ExecutionTarget::Local);
        };
        let mut job = ContainerJob::new(image.clone());
        job.gpus = self.gpus.clone();
        job.mounts = self.mounts.clone();
        job.network = self.network.clone();
        // Copied-out files become the caller's anyway; the unbound directory the engine
        // creates belongs to the image's user, so only that user can write it.
        job.user = match (&self.user, self.copy_output) {
            (Some(user), _) => Some(user.clone()),
            (None, true) => None,
            (None, false) => Some(polyprof::pipeline::container::job::caller_user()),
        };
        if self.copy_output {
            job.output = OutputTransfer::Copy;
        }
        job.capabilities = self.capabilities.clone();
        job.devices = self.devices.clone();
        job.workdir = self.workdir.clone();
        job.watchdog = watchdog;
        job.limits = ContainerLimits {
            pids: Some(self.pids_limit),
            memory_bytes: self.memory_mib.map(|m| m.saturating_mul(1 << 20)),
            shm_bytes: Some(self.shm_mib.saturating_mul(1 << 20)),
        };
        if let Ok(engine) = Engine::connect().await {
            match prune(&engine, false, false).await {
                Ok(report) if !report.removed.is_empty() => eprintln!(
                    "polyprof: removed {} container(s) left by a polyprof that died: {}",
                    report.removed.len(),
                    report.removed.join(", ")
                ),
                Ok(_) => {}
                Err(e) => eprintln!("polyprof: warning: could not reap old containers: {e}"),
            }
        }
        Ok(ExecutionTarget::Container(Box::new(job)))
    }
}
