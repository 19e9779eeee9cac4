//! What the Slurm and Ray drivers share around their polls: the index written whole at most
//! once per [`index_interval`] (and always at the end), the wait for the next poll that a
//! Ctrl-C cuts short, and the last write with the runs' profile cache figures and the
//! cascade's summary.

use std::path::Path;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::cache_summary;
use super::pool::index_interval;
use super::spec::JobSpec;
use crate::model::batch::BatchIndex;
use crate::pipeline::profile_cache::ProfileCacheOptions;

/// Write `index` to `root`; a failure is a warning (the entries are on disk already).
pub fn write_index(index: &mut BatchIndex, root: &Path, warn: &impl Fn(&str)) {
    if let Err(e) = index.write_atomic(root) {
        warn(&format!("cannot write batch.json: {e}"));
    }
}

/// The index's writes during the polls: marked changed, written once the interval has passed.
pub struct IndexWrites {
    written: Instant,
    dirty: bool,
    interval: Duration,
}

impl IndexWrites {
    pub fn new(jobs: usize) -> Self {
        IndexWrites {
            written: Instant::now(),
            dirty: false,
            interval: index_interval(jobs),
        }
    }

    pub fn changed(&mut self) {
        self.dirty = true;
    }

    /// Write when something changed and the last write is an interval old.
    pub fn write_if_due(&mut self, index: &mut BatchIndex, root: &Path, warn: &impl Fn(&str)) {
        if self.dirty && self.written.elapsed() >= self.interval {
            write_index(index, root, warn);
            self.written = Instant::now();
            self.dirty = false;
        }
    }
}

/// Sleep one `poll`, or less: until the first Ctrl-C (`cancel`) before the stop was sent, or
/// the second (`give_up`) after it.
pub async fn next_poll(
    poll: Duration,
    cancel: &CancellationToken,
    give_up: &CancellationToken,
    stop_sent: bool,
) {
    tokio::select! {
        _ = tokio::time::sleep(poll) => {}
        _ = cancel.cancelled(), if !stop_sent => {}
        _ = give_up.cancelled(), if stop_sent && !give_up.is_cancelled() => {}
    }
}

/// The last write: the runs' profile cache figures, from the run directories the tasks wrote.
pub fn finish(
    index: &mut BatchIndex,
    root: &Path,
    specs: &[JobSpec],
    profile_cache: Option<&ProfileCacheOptions>,
    warn: &impl Fn(&str),
) {
    index.profile_cache = cache_summary::summary(root, specs, index, profile_cache);
    super::cascade::summarize(specs, index);
    write_index(index, root, warn);
}
