//! The profile-once capability: profile only the launches the profile cache cannot answer
//! (the backend narrows its own settings to them and says which launches it will profile), then
//! put the run's records back together in launch order.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::profile_cache::{LaunchFingerprint, LoggedLaunch};
use crate::model::record::KernelRecord;
use crate::profilers::ProfilerSettings;

/// A stored profile the run may use for a fingerprint, and where it came from.
#[derive(Debug, Clone)]
pub struct Hit {
    pub record: KernelRecord,
    pub key: String,
    pub origin_run: String,
    /// What profiling the launch cost when it was profiled (what serving it saves).
    pub profile_s: f64,
}

/// The run's records in launch order and what was profiled.
#[derive(Debug, Clone, Default)]
pub struct Assembly {
    pub records: Vec<KernelRecord>,
    /// Each fingerprint's first record profiled in this run.
    pub profiled: BTreeMap<LaunchFingerprint, KernelRecord>,
    /// The durations (ns) of every launch of each fingerprint profiled in this run: more than
    /// one where the run profiled repeats, which measures the run's noise.
    pub samples: BTreeMap<LaunchFingerprint, Vec<f64>>,
    /// Launches served by a repeat of a launch profiled in this run, or by the cache.
    pub repeats: u64,
    pub from_cache: u64,
}

pub trait ProfileOnceCapability: Send + Sync {
    /// The settings that profile, of `symbols`, the first `per_config` launches of each launch
    /// configuration. `Err`: the user's own settings fight the cache's narrowing (saying which).
    fn narrowed(
        &self,
        settings: &ProfilerSettings,
        symbols: &BTreeSet<String>,
        per_config: u64,
    ) -> Result<ProfilerSettings, String>;

    /// The launches (indices into `launches`) the narrowed settings will profile, in order.
    fn expected_profiled(
        &self,
        launches: &[LoggedLaunch],
        symbols: &BTreeSet<String>,
        per_config: u64,
    ) -> Vec<usize>;

    /// The run's records in launch order from what was profiled (`profiled`, which must be the
    /// `expected` launches), repeats of those and the cache's `hits`; `keys`: each keyed
    /// launch's key digest. `Err`: where the profiled run launched differently.
    fn assemble(
        &self,
        launches: &[LoggedLaunch],
        profiled: &[KernelRecord],
        expected: &[usize],
        hits: &BTreeMap<LaunchFingerprint, Hit>,
        keys: &BTreeMap<LaunchFingerprint, String>,
    ) -> Result<Assembly, String>;

    /// The clock policy of `settings`, as a cache key keeps it.
    fn clock_control(&self, settings: &ProfilerSettings) -> String;

    /// The metric set of `settings`, as a cache key keeps it (a named set, or a digest of the
    /// sorted metric names).
    fn metric_set(&self, settings: &ProfilerSettings) -> String;
}
