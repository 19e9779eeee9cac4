//! `run_ray`: the Ray backend's entry, which hands the batch to the mode asked for.

use crate::model::batch::BatchIndex;
use crate::pipeline::batch::index::Prepared;
use crate::pipeline::batch::spec::JobSpec;
use crate::pipeline::batch::waves::{Waves, in_waves};

use super::driver::{RayEvent, RayMode, RayObserver, RayRun, run_jobs};
use super::error::RayError;

/// Run the jobs `prepared.to_run` of `specs` on the Ray cluster, in `run.mode`, a wave of the
/// cascade at a time with `waves` (the actors' one Ray job takes every wave; in the job mode
/// each wave's jobs are submitted once the wave before has ended); returns the final index.
pub async fn run_ray(
    specs: &[JobSpec],
    prepared: Prepared,
    run: &RayRun,
    observer: Option<RayObserver>,
    waves: Option<Waves>,
) -> Result<BatchIndex, RayError> {
    match run.mode {
        RayMode::Jobs => {
            let skipped = |entry: &_| {
                if let Some(o) = &observer {
                    o(&RayEvent::Changed { entry })
                }
            };
            in_waves(
                specs,
                prepared,
                waves,
                &run.root,
                &run.cancel,
                &skipped,
                |prepared, _| run_jobs(specs, prepared, run, observer.clone()),
            )
            .await
        }
        RayMode::Actors => super::actors::run_actors(specs, prepared, run, observer, waves).await,
    }
}
