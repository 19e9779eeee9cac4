//! The batch in one call for library users (and the CLI): open a batch root (fresh, or
//! resumed), find the pool's devices, run the pool.

use std::path::{Path, PathBuf};

use crate::model::batch::{Backend, BatchIndex};
use crate::model::error::Result;
use crate::profilers::devices::Device;

use super::devices::{DeviceChoice, pool_devices};
use super::index::{Prepared, prepare};
use super::pool::{Observer, PoolOptions, run_pool};
use super::spec::JobSpec;

/// Where and how a batch runs, beside the pool's options.
#[derive(Debug, Clone, Default)]
pub struct BatchOptions {
    /// `--devices`: the GPUs found (default), CPU slots, or given GPUs.
    pub devices: DeviceChoice,
    /// CPU slots of a CPU pool; on a GPU pool, a cap on the jobs at once.
    pub jobs: Option<usize>,
    /// Keep the jobs an earlier run of this root ran to their end.
    pub resume: bool,
    /// Recorded in the index as the job file (`job_file`).
    pub job_file: String,
}

/// A batch root ready to run: its starting index and its devices.
#[derive(Debug, Clone)]
pub struct OpenBatch {
    pub root: PathBuf,
    pub prepared: Prepared,
    pub devices: Vec<Device>,
    /// Jobs at once on a GPU pool (`None`: one per device).
    pub max_parallel: Option<usize>,
}

impl OpenBatch {
    /// Prepare `root` for `specs` (refused when it holds a batch and `resume` is off) and find
    /// the devices.
    pub async fn open(specs: &[JobSpec], root: &Path, opts: &BatchOptions) -> Result<Self> {
        let prepared = prepare(root, &opts.job_file, specs, Backend::Local, opts.resume)?;
        let devices = pool_devices(&opts.devices, opts.jobs).await;
        let gpu_pool = devices.iter().any(|d| d.vendor().is_some());
        Ok(OpenBatch {
            root: root.to_path_buf(),
            prepared,
            devices,
            max_parallel: if gpu_pool { opts.jobs } else { None },
        })
    }

    /// Run the jobs still to run; the final index (also written as `batch.json`).
    pub async fn run(
        self,
        specs: &[JobSpec],
        pool: &PoolOptions,
        observer: Option<Observer>,
    ) -> BatchIndex {
        let pool = PoolOptions {
            max_parallel: pool.max_parallel.or(self.max_parallel),
            ..pool.clone()
        };
        run_pool(
            specs,
            &self.root,
            self.prepared,
            self.devices,
            &pool,
            observer,
        )
        .await
    }
}

/// Run `specs` as a batch in `root`: [`OpenBatch::open`], then [`OpenBatch::run`].
pub async fn run_batch(
    specs: &[JobSpec],
    root: &Path,
    opts: &BatchOptions,
    pool: &PoolOptions,
) -> Result<BatchIndex> {
    let open = OpenBatch::open(specs, root, opts).await?;
    Ok(open.run(specs, pool, None).await)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::batch::EntryState;

    #[tokio::test]
    async fn a_batch_in_one_call_and_its_resume() {
        let root = tempfile::tempdir().unwrap();
        let specs: Vec<JobSpec> = (0..4)
            .map(|i| JobSpec::new(format!("j{i}"), vec!["true".into()]))
            .collect();
        let mut opts = BatchOptions {
            devices: DeviceChoice::Cpu,
            jobs: Some(2),
            job_file: "in memory".into(),
            ..Default::default()
        };
        let pool = PoolOptions::default();
        let index = run_batch(&specs, root.path(), &opts, &pool).await.unwrap();
        assert!(
            index
                .jobs
                .values()
                .all(|e| e.state == EntryState::Succeeded)
        );
        assert_eq!(index.job_file, "in memory");
        assert!(run_batch(&specs, root.path(), &opts, &pool).await.is_err());
        opts.resume = true;
        let open = OpenBatch::open(&specs, root.path(), &opts).await.unwrap();
        assert_eq!((open.prepared.kept, open.prepared.to_run.len()), (4, 0));
    }
}
