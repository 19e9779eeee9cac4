//! Batches of jobs.

pub mod slurm;
