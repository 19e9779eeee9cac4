//! `run_ray`: the Ray backend's entry, which hands the batch to the mode asked for.

use crate::model::batch::BatchIndex;
use crate::pipeline::batch::index::Prepared;
use crate::pipeline::batch::spec::JobSpec;

use super::driver::{RayMode, RayObserver, RayRun, run_jobs};
use super::error::RayError;

/// Run the jobs `prepared.to_run` of `specs` on the Ray cluster, in `run.mode`; returns the
/// final index.
pub async fn run_ray(
    specs: &[JobSpec],
    prepared: Prepared,
    run: &RayRun,
    observer: Option<RayObserver>,
) -> Result<BatchIndex, RayError> {
    match run.mode {
        RayMode::Jobs => run_jobs(specs, prepared, run, observer).await,
        RayMode::Actors => super::actors::run_actors(specs, prepared, run, observer).await,
    }
}
