//! The Ray backend of `polyprof batch`: each job of the file becomes one Ray job, submitted
//! through the dashboard's Job Submission REST API, whose entrypoint runs `polyprof batch JOBS
//! --output-dir ROOT --task-index N` on a node holding the resources it asks (one GPU by
//! default); results come back through the shared batch root, as with Slurm.
//!
//! - `api`: the wire types, submission ids, metadata and states (pure).
//! - `client`: the HTTP calls.
//! - `run`: `run_ray`, which hands the batch to the mode's driver.
//! - `driver`: the job mode: submit (a window at a time), poll, stop, collect.
//! - `judge`: one job's state from its entry.json and Ray's answer.
//! - `actors` (`--ray-mode actors`): one Ray job for the whole batch, whose Python driver
//!   (`polyprof_ray_actors.py`, embedded) sends the jobs to one long-lived actor per slot;
//!   `actor_plan` is what the two drivers say to each other and how a job is judged from it.

mod actor_plan;
mod actors;
pub mod api;
pub mod client;
pub mod driver;
pub mod error;
mod judge;
mod run;

pub use api::Resources;
pub use client::RayClient;
pub use driver::{RAY_DIR, RayEvent, RayMode, RayObserver, RayRun};
pub use error::RayError;
pub use run::run_ray;
