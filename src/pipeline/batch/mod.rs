//! `polyprof batch`: many jobs over a device pool. A job file (JSON Lines or TOML) lists the
//! jobs; each runs through [`task::run_task`] into `<root>/runs/<id>/`, and the driver keeps
//! `<root>/batch.json` (the index) up to date atomically so a killed batch resumes.
//!
//! - `spec`: one job as the file describes it; `jobfile`: reading and checking the file.
//! - `task`: one job, its passes and retries, its `entry.json`.
//! - `eval_table`: a job's `eval` table; `eval_job`: running it, its verdict in the entry.
//! - `problem`: a job file's `problem` (one reference, many candidates, their stages) and the
//!   jobs it expands to; `stage`: the stages and the profile rule; `cascade`: which stage of
//!   which candidate runs, waits or is skipped, and the summary per stage.
//! - `cache_setting`: a job's `profile_cache` key and the batch's `--profile-cache` combined;
//!   `cache_summary`: the finished runs' profile cache figures, summed for `batch.json`.
//! - `health`: the check of a device after an eval job's device fault or hang.
//! - `devices`: the pool's devices (discovery, `--devices`, CPU slots).
//! - `index`: building, resuming and updating the index.
//! - `pool`: the local scheduler (one job per device, quarantine, cancellation).
//! - `warm_evals`: the warm evaluators a process keeps for the eval jobs it runs in turn.
//! - `api`: all of it in one call (`run_batch`), or in two (`OpenBatch::open`, `run`).
//! - `slurm`: the Slurm backend (a job array; submit, poll, cancel, collect).
//! - `ray`: the Ray backend (long-lived actors in one Ray job, or one Ray job per job).
//! - `remote_index`: what the Slurm and Ray drivers share around their polls (index writes,
//!   the wait, the last write).
//! - `waves`: the cascade on Slurm and Ray: the stages the cascade lets run, one submission
//!   per wave.

pub mod api;
pub mod cache_setting;
pub mod cache_summary;
pub mod cascade;
pub mod devices;
pub mod eval_job;
pub mod eval_table;
pub mod health;
pub mod index;
pub mod jobfile;
pub mod pool;
pub mod problem;
pub mod ray;
pub mod remote_index;
pub mod slurm;
pub mod spec;
pub mod stage;
pub mod task;
pub mod warm_evals;
pub mod waves;

pub use api::{BatchOptions, OpenBatch, run_batch};
pub use jobfile::{JobFileError, load};
pub use spec::JobSpec;
pub use task::{TaskOptions, run_task};
