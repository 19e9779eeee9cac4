//! A plan's steps, each attempt in its own container of the same [`ContainerJob`]: the
//! executor's markers, graces, retries and validators apply unchanged.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::engine::Engine;
use super::job::ContainerJob;
use super::supervise::run_in_container;
use crate::model::outcome::RunResult;
use crate::model::plan::{CommandSpec, Plan};
use crate::model::run::{ContainerInfo, StepRun};
use crate::pipeline::executor::{CommandRunner, execute_plan_with};
use crate::pipeline::runner::RunOptions;
use crate::pipeline::runner::supervise::{new_result, spawn_failed};

/// Runs each command in a fresh container; remembers which container each attempt used.
pub struct ContainerRunner {
    engine: Option<Engine>,
    /// Why there is no engine: every attempt reports it.
    engine_error: Option<String>,
    job: ContainerJob,
    output_dir: PathBuf,
    containers: Mutex<Vec<ContainerInfo>>,
}

impl ContainerRunner {
    /// Connect to the engine; a connection failure becomes each attempt's spawn error.
    pub async fn connect(job: ContainerJob, output_dir: &Path) -> ContainerRunner {
        let (engine, engine_error) = match Engine::connect().await {
            Ok(engine) => {
                reap_once(&engine).await;
                (Some(engine), None)
            }
            Err(e) => (None, Some(e.to_string())),
        };
        ContainerRunner {
            engine,
            engine_error,
            job,
            output_dir: output_dir.to_path_buf(),
            containers: Mutex::new(Vec::new()),
        }
    }

    /// The containers used, one per attempt, in the order the attempts ran.
    pub fn containers(&self) -> Vec<ContainerInfo> {
        self.containers
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default()
    }
}

/// Remove what a polyprof that died left, once per process (best effort: the run itself does
/// not depend on it; `polyprof containers prune` reports failures).
async fn reap_once(engine: &Engine) {
    static REAPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !REAPED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        let _ = super::prune::prune(engine, false, false).await;
    }
}

#[async_trait::async_trait]
impl CommandRunner for ContainerRunner {
    async fn run(&self, spec: &CommandSpec, opts: &RunOptions) -> RunResult {
        let run = match &self.engine {
            Some(engine) => run_in_container(engine, &self.job, spec, opts, &self.output_dir).await,
            None => super::supervise::ContainerRun {
                result: spawn_failed(
                    new_result(spec),
                    std::time::Instant::now(),
                    self.engine_error.clone().unwrap_or_default(),
                    None,
                ),
                container: ContainerInfo {
                    image: self.job.image.clone(),
                    id: None,
                },
            },
        };
        if let Ok(mut containers) = self.containers.lock() {
            containers.push(run.container);
        }
        run.result
    }
}

/// Execute `plan` in containers of `job`. Returns the step runs and the container of the
/// attempt at `main` (the step whose outcome is the run's), else of the last attempt.
pub async fn execute_plan_in_container(
    job: &ContainerJob,
    plan: &Plan,
    base: &RunOptions,
    output_dir: &Path,
    main: Option<usize>,
) -> (Vec<StepRun>, Option<ContainerInfo>) {
    // The plan says which capabilities its commands need; the job grants only those.
    let mut job = job.clone().with_capabilities(&plan.capabilities);
    job.copy_patterns
        .extend(plan.outputs.collect.iter().cloned());
    let runner = ContainerRunner::connect(job, output_dir).await;
    let steps = execute_plan_with(&runner, plan, base, output_dir).await;
    let containers = runner.containers();
    let chosen = main
        .filter(|&i| steps.get(i).is_some_and(|s| !s.attempts.is_empty()))
        .map(|i| steps[..=i].iter().map(|s| s.attempts.len()).sum::<usize>() - 1)
        .and_then(|n| containers.get(n).cloned())
        .or_else(|| containers.last().cloned());
    (steps, chosen)
}
