//! The Slurm backend of `polyprof batch`: the job file becomes one job array whose tasks each
//! run `polyprof batch JOBS --output-dir ROOT --task-index $SLURM_ARRAY_TASK_ID` on their node;
//! the driver here submits, polls, cancels and collects through the Slurm CLI.

pub mod report;
pub mod squeue;
pub mod submit;
pub mod text;
