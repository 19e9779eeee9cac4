//! `--profile-cache` and its companions: profile each kernel fingerprint once and serve repeats
//! from the profile cache (ncu).

use std::path::PathBuf;

use polyprof::pipeline::profile_cache::ProfileCacheOptions;

#[derive(Debug, Clone, clap::Args)]
pub struct ProfileCacheArgs {
    /// Profile each kernel fingerprint (module image, symbol, launch configuration) once and
    /// serve repeats from the profile cache (`--profile-cache=DIR`, or the flag alone for
    /// ~/.cache/polyprof/profiles).
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true)]
    pub profile_cache: Option<Option<PathBuf>>,
    /// What the kernels' inputs are (a problem and its shapes): keys are shared only within a
    /// scope [default: the command line].
    #[arg(long, value_name = "TEXT", requires = "profile_cache")]
    pub profile_cache_scope: Option<String>,
    /// Launches profiled per fingerprint and launch configuration in one run.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        requires = "profile_cache"
    )]
    pub profiles_per_fingerprint: u64,
    /// The share of cache hits re-profiled and compared with the stored profile (0 to 1).
    #[arg(long, value_name = "SHARE", default_value_t = polyprof::pipeline::profile_cache::options::DEFAULT_AUDIT_SHARE, requires = "profile_cache")]
    pub profile_cache_audit: f64,
}

impl ProfileCacheArgs {
    /// The options, when `--profile-cache` was given.
    pub fn options(&self) -> anyhow::Result<Option<ProfileCacheOptions>> {
        let Some(dir) = &self.profile_cache else {
            return Ok(None);
        };
        if !(0.0..=1.0).contains(&self.profile_cache_audit) {
            anyhow::bail!(
                "--profile-cache-audit {} is not a share: give a number from 0 to 1",
                self.profile_cache_audit
            );
        }
        Ok(Some(ProfileCacheOptions {
            dir: dir.clone(),
            scope: self.profile_cache_scope.clone(),
            per_fingerprint: self.profiles_per_fingerprint.max(1),
            audit_share: self.profile_cache_audit,
        }))
    }
}
