//! The profile cache's vocabulary: what identifies a kernel launch's profile (its fingerprint and
//! the context it was measured in), a stored entry, where a run's record came from, and a run's
//! cache figures. A kernel's name is never a key: a regenerated kernel can keep its name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::record::KernelRecord;
pub use super::record_origin::{RecordOrigin, RecordSource};

/// The version of the key's layout; a change makes every older entry a miss.
pub const KEY_VERSION: u32 = 1;

/// One kernel launch as the fingerprint pass saw it: the binary it runs and how it was launched.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct LaunchFingerprint {
    /// SHA-256 of the module image (cubin) the kernel was loaded from, hex: a change anywhere
    /// in the module's code or data is a new fingerprint (conservative, never stale).
    pub module_sha256: String,
    /// The kernel's symbol as linked (mangled for C++).
    pub function: String,
    pub grid: [u64; 3],
    pub block: [u64; 3],
    /// Dynamic shared memory per block, bytes.
    pub dynamic_shared_bytes: u64,
}

/// Where and how a profile was measured; an entry is never served across a change of any field.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProfileContext {
    /// The device's model and class (`NVIDIA H200`, compute capability, memory, SM count).
    pub device: String,
    pub driver: String,
    /// The profiler and its version (`ncu 2025.3.1.0`).
    pub tool: String,
    /// The clock policy the profile ran under (`base`, `none`).
    pub clock_control: String,
    /// The metric set: the preset or the sorted metric names, hashed when long.
    pub metric_set: String,
    /// What the kernel's inputs were: the problem and its shapes and dtypes (a batch problem's
    /// id and reference), else the target's argv. Kernel arguments are not in the fingerprint,
    /// so a kernel launched alike on other data shares a key only within one scope.
    pub scope: String,
}

/// A full key: the launch's fingerprint in its context.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct ProfileKey {
    pub version: u32,
    pub fingerprint: LaunchFingerprint,
    pub context: ProfileContext,
}

impl ProfileKey {
    pub fn new(fingerprint: LaunchFingerprint, context: ProfileContext) -> Self {
        ProfileKey {
            version: KEY_VERSION,
            fingerprint,
            context,
        }
    }

    /// The key's digest (SHA-256 of its canonical JSON, hex): the entry's file name.
    pub fn digest(&self) -> String {
        // Struct fields serialize in declaration order, so the JSON is canonical.
        let json = serde_json::to_vec(self).unwrap_or_default();
        hex(&Sha256::digest(&json))
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// A stored profile: the key (checked in full on every read), the record, and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheEntry {
    pub key: ProfileKey,
    pub record: KernelRecord,
    /// The run directory that profiled it.
    pub origin_run: String,
    pub profiled_unix_s: f64,
    /// What profiling this launch cost, seconds of the profiler's wall time (its share of the
    /// profiling step): what a hit saves.
    pub profile_s: f64,
}

/// A cache hit re-profiled by the audit sample whose profile disagreed with the stored one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheDisagreement {
    pub key: String,
    pub kernel: String,
    pub cached_ns: f64,
    pub measured_ns: f64,
    /// The relative difference allowed (the run's noise).
    pub tolerance: f64,
}

/// A run's use of the profile cache (`run.json` → `profile_cache`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProfileCacheSummary {
    /// The cache directory.
    pub dir: String,
    /// Launches the fingerprint pass saw, and their distinct fingerprints.
    pub launches: u64,
    pub fingerprints: u64,
    /// Fingerprints profiled in this run (misses), and served from the cache (hits).
    pub profiled: u64,
    pub hits: u64,
    /// Launches not profiled because their fingerprint was profiled in this run or cached.
    pub repeats: u64,
    /// Hits re-profiled by the audit sample, and those that disagreed (invalidated).
    pub audited: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disagreements: Vec<CacheDisagreement>,
    /// The run's noise, which the audit's tolerance is three times of: the median relative
    /// spread ((max − min) / median) of the launch configurations the run profiled more than
    /// once (an audited run profiles up to three of each). Absent when it profiled none twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_noise: Option<f64>,
    /// Profiler seconds the hits and the repeats saved (each at its entry's `profile_s`).
    pub saved_s: f64,
    /// Seconds the fingerprint pass took.
    pub fingerprint_s: f64,
    /// Why the cache was not used for this run (a graph launch, no fingerprint support), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bypassed: Option<String>,
}

impl ProfileCacheSummary {
    /// Hits over the fingerprints looked up (0 when none were).
    pub fn hit_rate(&self) -> f64 {
        if self.fingerprints == 0 {
            0.0
        } else {
            self.hits as f64 / self.fingerprints as f64
        }
    }
}

/// `base` with each field of the key changed in turn (one key per field): what a test of
/// "any change is a miss" walks.
/// A launch a fingerprint pass logged, with its fingerprint, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedLaunch {
    /// Its position among the process's launches (0 for the first).
    pub index: usize,
    pub symbol: String,
    pub grid: [u64; 3],
    pub block: [u64; 3],
    pub dynamic_shared_bytes: u64,
    pub fingerprint: Result<LaunchFingerprint, String>,
}

/// One process's launches, and what keeps the cache from trusting them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessLaunches {
    pub launches: Vec<LoggedLaunch>,
    /// Graph launches seen (their kernels are not in `launches`).
    pub graphs: usize,
    pub failures: Vec<String>,
}

#[cfg(test)]
pub(crate) fn each_field_changed(base: &ProfileKey) -> Vec<ProfileKey> {
    let mut changed = Vec::new();
    let mut push = |change: &dyn Fn(&mut ProfileKey)| {
        let mut k = base.clone();
        change(&mut k);
        changed.push(k);
    };
    push(&|k| k.version += 1);
    push(&|k| k.fingerprint.module_sha256.push('0'));
    push(&|k| k.fingerprint.function.push('x'));
    push(&|k| k.fingerprint.grid[0] += 1);
    push(&|k| k.fingerprint.block[1] += 1);
    push(&|k| k.fingerprint.dynamic_shared_bytes += 1024);
    push(&|k| k.context.device.push_str(" (changed)"));
    push(&|k| k.context.driver.push_str(" (changed)"));
    push(&|k| k.context.tool.push_str(" (changed)"));
    push(&|k| k.context.clock_control.push_str(" (changed)"));
    push(&|k| k.context.metric_set.push_str(" (changed)"));
    push(&|k| k.context.scope.push_str(" (changed)"));
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint() -> LaunchFingerprint {
        LaunchFingerprint {
            module_sha256: "ab".repeat(32),
            function: "_Z6matmulPKfS0_Pfi".to_string(),
            grid: [64, 64, 1],
            block: [16, 16, 1],
            dynamic_shared_bytes: 0,
        }
    }

    #[test]
    fn every_field_of_the_key_changes_its_digest() {
        let base = ProfileKey::new(fingerprint(), ProfileContext::default());
        let digest = base.digest();
        assert_eq!(digest.len(), 64);
        assert_eq!(digest, base.clone().digest(), "the digest is stable");
        let changed = each_field_changed(&base);
        assert_eq!(changed.len(), 12);
        for k in changed {
            assert_ne!(k.digest(), digest, "{k:?}");
        }
    }
}
