//! How a run uses the profile cache: where it lives, the scope of its keys, how many times a
//! fingerprint is profiled in one run, and the share of hits the audit sample re-profiles.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The share of cache hits re-profiled and compared by default.
pub const DEFAULT_AUDIT_SHARE: f64 = 0.05;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileCacheOptions {
    /// The cache directory; `None`: [`super::store::default_dir`] (`<cache_dir>/profiles` when
    /// `cache_dir` is configured, else `$XDG_CACHE_HOME/polyprof/profiles`, else
    /// `~/.cache/polyprof/profiles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// What the kernels' inputs are (a problem id and its shapes); `None`: the target's argv.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Launches profiled per fingerprint in one run (ncu `--launch-count` per launch
    /// configuration).
    #[serde(default = "one")]
    pub per_fingerprint: u64,
    /// The share of hits re-profiled and compared with the stored profile (0 to 1).
    #[serde(default = "default_audit_share")]
    pub audit_share: f64,
}

fn one() -> u64 {
    1
}

fn default_audit_share() -> f64 {
    DEFAULT_AUDIT_SHARE
}

impl Default for ProfileCacheOptions {
    fn default() -> Self {
        ProfileCacheOptions {
            dir: None,
            scope: None,
            per_fingerprint: 1,
            audit_share: DEFAULT_AUDIT_SHARE,
        }
    }
}
