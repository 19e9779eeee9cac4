//! Profile once: before ncu runs, the fingerprint pass keys every launch; the profile cache
//! answers the keys it holds; ncu then profiles only the fingerprints it lacks (plus the audit
//! sample of hits), each once per launch configuration; afterwards the run's records are put
//! back together in launch order and what was profiled is stored.
//!
//! Anything that keeps the cache from being sure (no nvcc or CUPTI, a graph launch, several
//! processes launching kernels, a launch whose image is unknown, a program that launches
//! differently under ncu) bypasses or leaves the cache alone, says why in the run's
//! `profile_cache.bypassed` or warnings, and never costs the run its profile.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::model::arg::Arg;
use crate::model::profile_cache::LoggedLaunch;
use crate::model::profile_cache::{
    CacheDisagreement, CacheEntry, LaunchFingerprint, ProfileCacheSummary, ProfileContext,
    ProfileKey, RecordSource,
};
use crate::model::run::{ProfileRun, StepRun};
use crate::pipeline::calibrate::device;
use crate::pipeline::fingerprint::{self, FingerprintPass};
use crate::pipeline::injection;
use crate::pipeline::profile_cache::{ProfileCache, ProfileCacheOptions, store};
use crate::pipeline::runner::RunOptions;
use crate::profilers::capability::{Capabilities, Capability, Hit, ProfileOnceCapability};
use crate::profilers::device_tools;
use crate::profilers::registry;
use crate::profilers::{EndMarker, ProfilerSettings};
use crate::results::stats::Stats;

/// The audit judges a cached profile against a fresh one by the run's own noise: the spread of
/// the durations of one launch configuration profiled several times in the run. An audit run
/// profiles up to this many launches of each configuration to measure it (it is 5 % of runs).
pub const AUDIT_PROFILES_PER_CONFIG: u64 = 3;
/// A difference beyond this many times the run's noise disagrees.
pub const AUDIT_NOISE_MULTIPLE: f64 = 3.0;
/// Never below this share: an entry serves later runs, whose clocks and temperatures differ by
/// more than one run's replays (on the H200, a 28 µs kernel stored at 28480 ns profiled at
/// 27264–27424 ns in later runs, 4.3 % off, while those runs' own repeats spread 0.4–4.8 %).
pub const MIN_AUDIT_TOLERANCE: f64 = 0.10;
/// Nor below this many ns: a short kernel's jitter is not a share of its duration (ncu's
/// durations tick by 32 ns; on the H200 a 2.8 µs kernel profiled in two batches differed by
/// 256 ns, 9 %, where the run's repeats of a 47 µs kernel spread by 0.7 %).
pub const MIN_AUDIT_TOLERANCE_NS: f64 = 500.0;
/// Never above this share: a kernel that noisy has no profile worth serving, and a wider
/// tolerance would let almost any change through.
pub const MAX_AUDIT_TOLERANCE: f64 = 0.5;
/// When the run profiled no configuration twice (the program launched each kernel once): one
/// ncu replay of the same launch under clock control varies by a few percent; a kernel whose
/// work depends on its arguments or state can differ by far more.
pub const DEFAULT_AUDIT_TOLERANCE: f64 = 0.15;

/// What the run needs after the fingerprint pass and the lookups.
pub struct Prepared {
    /// The profiler's profile-once capability, which puts the records together afterwards.
    pub once: &'static dyn ProfileOnceCapability,
    pub cache: ProfileCache,
    pub options: ProfileCacheOptions,
    pub pass: FingerprintPass,
    pub launches: Vec<LoggedLaunch>,
    /// Each fingerprint's key and its digest.
    pub keys: BTreeMap<LaunchFingerprint, (ProfileKey, String)>,
    /// The hits served from the cache.
    pub hits: BTreeMap<LaunchFingerprint, Hit>,
    /// The hits the audit sample re-profiles and compares.
    pub audited: BTreeMap<LaunchFingerprint, Hit>,
    /// The settings that profile only what is needed; `None`: nothing is.
    pub narrowed: Option<ProfilerSettings>,
    pub expected: Vec<usize>,
    pub summary: ProfileCacheSummary,
    pub warnings: Vec<String>,
}

/// What the run profiles and how: the job's parts profile once needs.
pub struct Target<'a> {
    /// The profiler's registry name: its capabilities are asked for by it.
    pub profiler: &'a str,
    pub argv: &'a [Arg],
    pub settings: &'a ProfilerSettings,
    pub options: &'a ProfileCacheOptions,
    pub run: &'a RunOptions,
}

/// Run the fingerprint pass and look every fingerprint up. `Err`: why the cache is bypassed
/// (the run then profiles as it would without a cache).
pub async fn prepare(
    job: &Target<'_>,
    run_dir: &Path,
    tool_version: Option<&str>,
    end_marker: EndMarker,
) -> Result<Prepared, (String, Option<StepRun>)> {
    let options = job.options.clone();
    let bypass = |why: String| (why, None);
    let fingerprinter =
        ask(job.profiler, Capability::Fingerprint, |c| c.fingerprint).map_err(bypass)?;
    let once = ask(job.profiler, Capability::ProfileOnce, |c| c.profile_once).map_err(bypass)?;
    let dir = match &options.dir {
        Some(dir) => dir.clone(),
        None => store::default_dir().map_err(|e| bypass(e.to_string()))?,
    };
    let cache = ProfileCache::open(&dir).map_err(|e| bypass(e.to_string()))?;
    let library_root = injection::default_root(run_dir);
    let library = injection::build(fingerprinter.library(), &library_root, &job.run.cancel)
        .await
        .map_err(|e| bypass(e.to_string()))?;
    let started = Instant::now();
    let pass = fingerprint::run_fingerprint_pass(
        fingerprinter,
        &library,
        job.argv,
        run_dir,
        job.run,
        end_marker,
    )
    .await
    .map_err(|e| bypass(e.to_string()))?;
    let fingerprint_s = started.elapsed().as_secs_f64();
    let step = Some(pass.step.clone());
    let with_step = |why: String| (why, step.clone());
    let launching: Vec<_> = pass
        .processes
        .iter()
        .filter(|(_, p)| !p.launches.is_empty() || p.graphs > 0)
        .collect();
    if let Some((name, p)) = pass.processes.iter().find(|(_, p)| !p.failures.is_empty()) {
        return Err(with_step(format!(
            "the fingerprint library failed in {name}: {}",
            p.failures.join("; ")
        )));
    }
    let launches = match launching.as_slice() {
        [] => Vec::new(),
        [(_, p)] if p.graphs > 0 => {
            return Err(with_step(format!(
                "the target launched {} CUDA graph(s), whose kernels the fingerprint pass cannot see",
                p.graphs
            )));
        }
        [(_, p)] => p.launches.clone(),
        many => {
            return Err(with_step(format!(
                "{} processes launched kernels; the profile cache keys one process's launches",
                many.len()
            )));
        }
    };
    let context = context(job, once, tool_version).await;
    let mut keys = BTreeMap::new();
    for launch in &launches {
        if let Ok(fingerprint) = &launch.fingerprint {
            keys.entry(fingerprint.clone()).or_insert_with(|| {
                let key = ProfileKey::new(fingerprint.clone(), context.clone());
                let digest = key.digest();
                (key, digest)
            });
        }
    }
    let mut warnings = Vec::new();
    let mut hits = BTreeMap::new();
    for (fingerprint, (key, digest)) in &keys {
        match cache.lookup(key) {
            Ok(found) => {
                warnings.extend(found.warning);
                if let Some(entry) = found.entry {
                    let hit = Hit {
                        record: entry.record,
                        key: digest.clone(),
                        origin_run: entry.origin_run,
                        profile_s: entry.profile_s,
                    };
                    hits.insert(fingerprint.clone(), hit);
                }
            }
            Err(e) => warnings.push(format!("profile cache lookup: {e}")),
        }
    }
    // The audit sample is drawn by run, not by hit: a run drawn re-profiles all its hits in its
    // one ncu run. The share of hits audited is the same, and it costs `share` × runs ncu runs
    // instead of nearly one per audited hit (ncu's start is most of a run's cost: on the H200,
    // 2.5 s of ncu against 0.35 s of fingerprint pass for a small program).
    let salt = format!(
        "{}:{}",
        run_dir.display(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let audited = if sampled(&salt, options.audit_share) {
        std::mem::take(&mut hits)
    } else {
        BTreeMap::new()
    };
    // ncu profiles, by name, every symbol that has a launch without a usable answer.
    let symbols: BTreeSet<String> = launches
        .iter()
        .filter(|l| match &l.fingerprint {
            Ok(f) => !hits.contains_key(f),
            Err(_) => true,
        })
        .map(|l| l.symbol.clone())
        .collect();
    let per_config = if audited.is_empty() {
        options.per_fingerprint.max(1)
    } else {
        options.per_fingerprint.max(AUDIT_PROFILES_PER_CONFIG)
    };
    let expected = once.expected_profiled(&launches, &symbols, per_config);
    let narrowed = if symbols.is_empty() {
        None
    } else {
        Some(
            once.narrowed(job.settings, &symbols, per_config)
                .map_err(with_step)?,
        )
    };
    for launch in &launches {
        if let Err(why) = &launch.fingerprint {
            warnings.push(format!(
                "launch {} (`{}`) is profiled and not cached: {why}",
                launch.index, launch.symbol
            ));
        }
    }
    let summary = ProfileCacheSummary {
        dir: cache.dir().display().to_string(),
        launches: launches.len() as u64,
        fingerprints: keys.len() as u64,
        hits: hits.len() as u64,
        audited: audited.len() as u64,
        fingerprint_s,
        ..ProfileCacheSummary::default()
    };
    Ok(Prepared {
        once,
        cache,
        options,
        pass,
        launches,
        keys,
        hits,
        audited,
        narrowed,
        expected,
        summary,
        warnings,
    })
}

/// The capability `pick` picks of `profiler`, or why it has none.
fn ask<T: ?Sized + 'static>(
    profiler: &str,
    which: Capability,
    pick: fn(&Capabilities) -> Option<&'static T>,
) -> Result<&'static T, String> {
    match registry::capability(profiler, which, pick) {
        Ok(Ok(found)) => Ok(found),
        Ok(Err(missing)) => Err(missing.to_string()),
        Err(unknown) => Err(unknown.to_string()),
    }
}

/// Whether the audit sample takes the run `salt`: a share `share` of runs, drawn from the
/// salt's SHA-256.
fn sampled(salt: &str, share: f64) -> bool {
    if share <= 0.0 {
        return false;
    }
    if share >= 1.0 {
        return true;
    }
    let bytes = Sha256::digest(salt.as_bytes());
    let draw = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    f64::from(draw) / f64::from(u32::MAX) < share
}

/// Where and how the profiles are measured: the GPU (the vendor's device tool: name
/// and compute capability), the driver, the profiler and its version, the clock policy, the
/// metric set and the inputs' scope.
async fn context(
    job: &Target<'_>,
    once: &dyn ProfileOnceCapability,
    tool_version: Option<&str>,
) -> ProfileContext {
    let unknown = || ("unknown".to_string(), "unknown".to_string());
    let identity = device_tools::for_profiler(job.profiler);
    let tool = identity.and_then(|i| Some((i, which::which(i.tool().program).ok()?)));
    let (device, driver) = match tool {
        Some((identity, tool)) => {
            let visible = device::visible_device();
            match device::identify(identity, &tool, visible.as_deref(), &job.run.cancel).await {
                Ok(gpu) => (
                    format!(
                        "{} (sm_{})",
                        gpu.name,
                        gpu.compute_capability
                            .map_or_else(String::new, |(a, b)| format!("{a}{b}"))
                    ),
                    gpu.driver.unwrap_or_default(),
                ),
                Err(_) => unknown(),
            }
        }
        None => unknown(),
    };
    let scope = job.options.scope.clone();
    ProfileContext {
        device,
        driver,
        tool: format!("{} {}", job.profiler, tool_version.unwrap_or("unknown")),
        clock_control: once.clock_control(job.settings),
        metric_set: once.metric_set(job.settings),
        scope: scope.unwrap_or_else(|| {
            job.argv
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        }),
    }
}

/// After ncu: put the run's records together, store what was profiled, judge the audit sample
/// and fill in the run's `profile_cache`. `profile_wall_s`: ncu's profiling step's wall time.
pub fn finish(mut prepared: Prepared, run: &mut ProfileRun, profile_wall_s: f64) {
    let mut summary = std::mem::take(&mut prepared.summary);
    run.warnings.append(&mut prepared.warnings);
    let digests: BTreeMap<LaunchFingerprint, String> = prepared
        .keys
        .iter()
        .map(|(f, (_, digest))| (f.clone(), digest.clone()))
        .collect();
    let profiled = std::mem::take(&mut run.kernels);
    let assembled = match prepared.once.assemble(
        &prepared.launches,
        &profiled,
        &prepared.expected,
        &prepared.hits,
        &digests,
    ) {
        Ok(assembled) => assembled,
        Err(why) => {
            run.kernels = profiled;
            run.warnings
                .push(format!("profile cache: nothing stored or served: {why}"));
            summary.bypassed = Some(why);
            summary.hits = 0;
            run.profile_cache = Some(summary);
            return;
        }
    };
    // What profiling one launch cost: ncu's wall time beyond the program's own.
    let per_launch_s = if profiled.is_empty() {
        0.0
    } else {
        (profile_wall_s - prepared.pass.wall_s).max(0.0) / profiled.len() as f64
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    summary.audit_noise = run_noise(assembled.samples.values());
    for (fingerprint, record) in &assembled.profiled {
        // A served hit profiled only because ncu selects by name keeps its entry.
        let Some((key, digest)) = prepared.keys.get(fingerprint) else {
            continue;
        };
        if prepared.hits.contains_key(fingerprint) {
            continue;
        }
        if let Some(cached) = prepared.audited.get(fingerprint) {
            let durations = assembled
                .samples
                .get(fingerprint)
                .map_or(&[][..], Vec::as_slice);
            let Some(disagreement) =
                disagreement(cached, &record.short_name, durations, summary.audit_noise)
            else {
                continue;
            };
            run.warnings.push(format!(
                "profile cache: the audit sample re-profiled `{}` at {:.0} ns against {:.0} ns cached (beyond {:.1} %, {}): the entry is replaced",
                disagreement.kernel,
                disagreement.measured_ns,
                disagreement.cached_ns,
                disagreement.tolerance * 100.0,
                summary.audit_noise.map_or_else(
                    || "no repeated profile in the run to measure its noise by".to_string(),
                    |noise| format!(
                        "{AUDIT_NOISE_MULTIPLE} times the run's noise of {:.1} %, or {MIN_AUDIT_TOLERANCE_NS:.0} ns",
                        noise * 100.0
                    )
                )
            ));
            summary.disagreements.push(disagreement);
            if let Err(e) = prepared.cache.invalidate(digest) {
                run.warnings.push(format!("profile cache: {e}"));
            }
        }
        let mut stored = record.clone();
        stored.cache = None;
        stored.call_path.clear();
        stored.launch_id = 0;
        stored.start_ns = None;
        stored.process_id = None;
        let entry = CacheEntry {
            key: key.clone(),
            record: stored,
            origin_run: run.output_dir.display().to_string(),
            profiled_unix_s: now,
            profile_s: per_launch_s,
        };
        if let Err(e) = prepared.cache.put(&entry) {
            run.warnings.push(format!("profile cache: {e}"));
        }
    }
    summary.profiled = assembled.profiled.len() as u64;
    summary.repeats = assembled.repeats;
    // Saved: each launch not profiled, at what profiling it cost when it was.
    summary.saved_s = prepared
        .launches
        .iter()
        .zip(&assembled.records)
        .filter_map(|(launch, record)| Some((launch, record.cache.as_ref()?.source)))
        .map(|(launch, source)| match source {
            RecordSource::Cache => launch
                .fingerprint
                .as_ref()
                .ok()
                .and_then(|f| prepared.hits.get(f))
                .map_or(0.0, |hit| hit.profile_s),
            RecordSource::Repeat => per_launch_s,
            RecordSource::Profiled => 0.0,
        })
        .sum();
    run.kernels = assembled.records;
    run.profile_cache = Some(summary);
}

/// The run's noise: over the fingerprints profiled more than once in the run, the median of
/// each one's relative spread ((max − min) / median of its durations). `None`: none was.
pub fn run_noise<'a>(samples: impl IntoIterator<Item = &'a Vec<f64>>) -> Option<f64> {
    let spreads: Vec<f64> = samples
        .into_iter()
        .filter(|durations| durations.len() > 1)
        .filter_map(|durations| Stats::from_samples(durations).ok())
        .filter(|stats| stats.median > 0.0)
        .map(|stats| (stats.max - stats.min) / stats.median)
        .collect();
    Stats::from_samples(&spreads).ok().map(|stats| stats.median)
}

/// The difference (ns) the audit allows for a kernel cached at `cached_ns` in a run of noise
/// `noise`: a share of its duration (see the constants), and never under
/// [`MIN_AUDIT_TOLERANCE_NS`].
pub fn audit_tolerance_ns(noise: Option<f64>, cached_ns: f64) -> f64 {
    let share = noise.map_or(DEFAULT_AUDIT_TOLERANCE, |noise| {
        (AUDIT_NOISE_MULTIPLE * noise).clamp(MIN_AUDIT_TOLERANCE, MAX_AUDIT_TOLERANCE)
    });
    (share * cached_ns.abs()).max(MIN_AUDIT_TOLERANCE_NS)
}

/// The audit's finding when the fresh profiles of a cached launch (`durations`, ns: the run's
/// profiles of `kernel`, judged by their median) differ from the cached record by more than
/// [`audit_tolerance_ns`]; `None` when they agree or a duration is missing. Its `tolerance` is
/// relative to the cached duration.
pub fn disagreement(
    cached: &Hit,
    kernel: &str,
    durations: &[f64],
    noise: Option<f64>,
) -> Option<CacheDisagreement> {
    let old = cached.record.duration_ns?;
    let new = Stats::from_samples(durations).ok()?.median;
    let allowed = audit_tolerance_ns(noise, old);
    ((new - old).abs() > allowed).then(|| CacheDisagreement {
        key: cached.key.clone(),
        kernel: kernel.to_string(),
        cached_ns: old,
        measured_ns: new,
        tolerance: allowed / old.abs().max(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::KernelRecord;

    #[test]
    fn the_audit_sample_takes_about_its_share_of_runs() {
        let drawn = (0..10_000)
            .filter(|i| sampled(&format!("run/{i}"), 0.05))
            .count();
        assert!((400..600).contains(&drawn), "{drawn} of 10000");
        assert!(!sampled("run/0", 0.0));
        assert!((0..100).all(|i| sampled(&format!("run/{i}"), 1.0)));
    }

    fn fingerprint(function: &str) -> LaunchFingerprint {
        LaunchFingerprint {
            module_sha256: "m".to_string(),
            function: function.to_string(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_shared_bytes: 0,
        }
    }

    #[test]
    fn the_audit_tolerance_is_three_times_the_runs_noise_within_bounds() {
        // Launches profiled once measure nothing: the default share.
        let once = BTreeMap::from([(fingerprint("a"), vec![100_000.0])]);
        assert_eq!(run_noise(once.values()), None);
        assert_eq!(audit_tolerance_ns(None, 100_000.0), 15_000.0);
        // Spreads 4 % and 10/210, a single sample ignored: their median.
        let run = BTreeMap::from([
            (fingerprint("a"), vec![100_000.0, 102_000.0, 98_000.0]),
            (fingerprint("b"), vec![200_000.0, 220_000.0]),
            (fingerprint("c"), vec![50_000.0]),
        ]);
        let noise = run_noise(run.values()).unwrap();
        assert!(
            (noise - (0.04 + 20.0 / 210.0) / 2.0).abs() < 1e-9,
            "{noise}"
        );
        let allowed = audit_tolerance_ns(Some(noise), 1_000_000.0);
        assert!((allowed - 3.0 * noise * 1_000_000.0).abs() < 1e-6);
        // Between 10 % and 50 % of the duration.
        assert_eq!(audit_tolerance_ns(Some(0.001), 1_000_000.0), 100_000.0);
        assert_eq!(audit_tolerance_ns(Some(0.4), 1_000_000.0), 500_000.0);
        // Never under 500 ns: a short kernel's jitter.
        assert_eq!(
            audit_tolerance_ns(Some(0.007), 2_816.0),
            MIN_AUDIT_TOLERANCE_NS
        );
        assert_eq!(audit_tolerance_ns(None, 2_816.0), MIN_AUDIT_TOLERANCE_NS);
    }

    #[test]
    fn a_fresh_profile_beyond_the_tolerance_disagrees_and_one_within_it_does_not() {
        let cached = Hit {
            record: KernelRecord {
                duration_ns: Some(100_000.0),
                ..KernelRecord::default()
            },
            key: "k".to_string(),
            origin_run: "earlier".to_string(),
            profile_s: 0.2,
        };
        // The median of the run's durations is judged, not the first record's.
        let repeated = [130_000.0, 108_000.0, 100_000.0];
        assert!(disagreement(&cached, "scale", &repeated, Some(0.002)).is_none());
        let found = disagreement(&cached, "scale", &[130_000.0], Some(0.002)).unwrap();
        assert_eq!((found.cached_ns, found.measured_ns), (100_000.0, 130_000.0));
        assert_eq!(found.kernel, "scale");
        assert!((found.tolerance - 0.10).abs() < 1e-12);
        assert!(disagreement(&cached, "scale", &[130_000.0], Some(0.2)).is_none());
        assert!(disagreement(&cached, "scale", &[], Some(0.2)).is_none());
    }
}
