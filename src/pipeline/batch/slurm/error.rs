//! What can stop a Slurm batch before or while it runs (a task's own failure never does).

use crate::model::probe::ProbeError;

#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// A Slurm command could not run at all (not installed, not on PATH, hung).
    #[error(
        "{0}; is the Slurm client installed here (sbatch, squeue, scancel on PATH) and the controller reachable?"
    )]
    Command(#[from] ProbeError),
    /// sbatch refused the array.
    #[error(
        "sbatch refused the job array ({status}): {stderr}; check --partition, --gres/--gpus-per-task and --time against `sinfo`"
    )]
    Refused { status: String, stderr: String },
    /// sbatch succeeded but printed no job id (a wrapper's banner, another tool): its output.
    #[error(
        "sbatch exited 0 but printed no job id, so the array cannot be followed; its stdout: \
         {stdout:?}; its stderr: {stderr:?}; is `sbatch` on PATH the real one (`type sbatch`)?"
    )]
    NoJobId { stdout: String, stderr: String },
    /// The batch's earlier array still has tasks in Slurm (its driver was killed).
    #[error(
        "array {job_id} of this batch still has {tasks} tasks pending or running in Slurm; wait for them or `scancel {job_id}`, then --resume"
    )]
    StillRunning { job_id: String, tasks: usize },
    /// The array needs indices past the cluster's MaxArraySize.
    #[error(
        "the job file has {jobs} jobs but this cluster's MaxArraySize is {max} (array indices 0..{max}); split the job file or raise MaxArraySize"
    )]
    TooManyJobs { jobs: usize, max: u32 },
    /// Anything the library's common error covers (a parse, an index write, a file operation).
    #[error(transparent)]
    Other(#[from] crate::model::error::Error),
}
