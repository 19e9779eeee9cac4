//! Builds ahead of the GPU (docs/eval-harness.md, "The build stage"): candidates of a run of
//! many are prepared (their eval directory claimed, their build stage run) on the CPU, `jobs`
//! at a time, as soon as they are known, while earlier candidates are judged; each judged turn
//! then takes its candidate's finished build.

use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::eval::evidence::CONFINED;
use crate::model::error::{Error, Result};
use crate::pipeline::eval::session::{self, Prepared};
use crate::pipeline::eval::spec::{EvalSpec, SandboxSetting};
use crate::pipeline::sandbox::{Confinement, landlock_abi};

/// Builds run at most this many at a time by default: the CPUs there are.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Whether builds of `spec`'s kind may run beside other candidates' work: only where the
/// sandbox confines everything (files, network, signals). An unconfined build worker could
/// reach the files or processes of the candidate being judged meanwhile; it builds right
/// before its own judged turn instead.
pub fn may_run_ahead(spec: &EvalSpec) -> bool {
    if !matches!(spec.sandbox, SandboxSetting::On { .. }) {
        return false;
    }
    let Some(abi) = landlock_abi() else {
        return false;
    };
    let probe = Confinement {
        abi,
        read: Vec::new(),
        write: Vec::new(),
        limits: Default::default(),
        profiler_ipc: false,
        own_proc: false,
    };
    let confines = probe.confines();
    CONFINED.iter().all(|c| confines.contains(c))
}

/// Starts candidates' preparations, `jobs` builds at a time, in the order they are given.
pub struct BuildQueue {
    slots: Arc<Semaphore>,
}

/// One candidate's preparation under way.
pub struct Pending {
    task: JoinHandle<Result<Prepared>>,
}

impl BuildQueue {
    /// A queue running up to `jobs` builds at once (at least one).
    pub fn new(jobs: usize) -> BuildQueue {
        BuildQueue {
            slots: Arc::new(Semaphore::new(jobs.max(1))),
        }
    }

    /// Prepare `spec` as soon as a build slot is free.
    pub fn submit(&self, spec: EvalSpec) -> Pending {
        let slots = Arc::clone(&self.slots);
        let task = tokio::spawn(async move {
            let _slot = slots.acquire_owned().await.map_err(|_| {
                Error::invalid("build queue", "it was closed before this candidate's build")
            })?;
            if spec.cancel.is_cancelled() {
                return Err(Error::invalid(
                    "eval",
                    "cancelled before this candidate's build began",
                ));
            }
            session::prepare(&spec, true).await
        });
        Pending { task }
    }
}

impl Pending {
    /// This preparation, then its scored worker's start ([`session::prestart`]) at once: the
    /// worker joins `spec.bystanders`, held stopped while the candidates judged before it time
    /// the device.
    pub fn then_prestart(self, spec: EvalSpec) -> Pending {
        let task = tokio::spawn(async move {
            let mut prepared = self.ready().await?;
            // Cancelled meanwhile: the eval ends at its first step; nothing to start.
            if !spec.cancel.is_cancelled() {
                session::prestart(&spec, &mut prepared).await;
            }
            Ok(prepared)
        });
        Pending { task }
    }

    /// Whether the preparation (and the start it was chained to) has finished: its turn would
    /// not wait for it.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// The finished preparation (its build stage run, failed or not); `Err` when the eval
    /// could not begin.
    pub async fn ready(self) -> Result<Prepared> {
        match self.task.await {
            Ok(prepared) => prepared,
            Err(e) => Err(Error::invalid(
                "build",
                format!("the candidate's build task failed: {e}"),
            )),
        }
    }
}
