//! The Slurm backend of `polyprof batch`: the job file becomes one job array whose tasks each
//! run `polyprof batch JOBS --output-dir ROOT --task-index $SLURM_ARRAY_TASK_ID` on their node;
//! the driver here submits, polls, cancels and collects through the Slurm CLI.

pub mod driver;
pub mod error;
pub mod report;
pub mod squeue;
pub mod submit;
pub mod text;

pub use driver::{SLURM_DIR, SlurmEvent, SlurmObserver, SlurmRun, run_slurm};
pub use error::SlurmError;
pub use submit::SubmitOptions;
