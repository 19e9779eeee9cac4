//! The batch's profile cache figures: after the batch, each finished run of a job that could
//! use the cache is read back (`run.json` → `profile_cache`) and the figures summed into
//! `batch.json` → `profile_cache`, with the disagreements the audit sample found named by job.

use std::path::Path;

use serde::Deserialize;

use crate::model::batch::{BatchCacheDisagreement, BatchIndex, BatchProfileCache, EntryState};
use crate::model::profile_cache::ProfileCacheSummary;
use crate::model::run::RUN_FILE;
use crate::pipeline::profile_cache::ProfileCacheOptions;

use super::cache_setting::ProfileCacheSetting;
use super::spec::JobSpec;

/// Only the part of a run document this reads (the rest is skipped unparsed into types).
#[derive(Deserialize)]
struct CachePart {
    #[serde(default)]
    profile_cache: Option<ProfileCacheSummary>,
}

/// Whether a pass of `spec` may have used the cache (so its run documents are worth reading):
/// its own setting, or the batch's `default` for a job under a profiler.
fn may_use_cache(spec: &JobSpec, default: Option<&ProfileCacheOptions>) -> bool {
    if spec.eval.is_some() {
        return false;
    }
    match &spec.profile_cache {
        Some(ProfileCacheSetting::On(false)) => false,
        Some(_) => true,
        None => {
            default.is_some()
                && (spec.language.is_some()
                    || spec
                        .profiler
                        .as_deref()
                        .is_some_and(|p| !p.trim().eq_ignore_ascii_case("none")))
        }
    }
}

/// The run's cache figures from `dir/run.json`; `None` when it used no cache or cannot be
/// read (a run cut off before it wrote one has no figures to add).
pub fn read_run_cache(dir: &Path) -> Option<ProfileCacheSummary> {
    let bytes = crate::model::input::read_regular(&dir.join(RUN_FILE)).ok()?;
    serde_json::from_slice::<CachePart>(&bytes)
        .ok()?
        .profile_cache
}

/// Add one run's figures to the batch's; `job` names it in the disagreements.
pub fn add_run(total: &mut BatchProfileCache, job: &str, run: &ProfileCacheSummary) {
    total.runs += 1;
    total.bypassed += u64::from(run.bypassed.is_some());
    total.launches += run.launches;
    total.fingerprints += run.fingerprints;
    total.profiled += run.profiled;
    total.hits += run.hits;
    total.repeats += run.repeats;
    total.audited += run.audited;
    total.disagreements += run.disagreements.len() as u64;
    total
        .disagreed
        .extend(run.disagreements.iter().map(|d| BatchCacheDisagreement {
            job: job.to_string(),
            key: d.key.clone(),
            kernel: d.kernel.clone(),
            cached_ns: d.cached_ns,
            measured_ns: d.measured_ns,
            tolerance: d.tolerance,
        }));
    total.saved_s += run.saved_s;
    total.fingerprint_s += run.fingerprint_s;
    total.hit_rate = if total.fingerprints == 0 {
        0.0
    } else {
        total.hits as f64 / total.fingerprints as f64
    };
}

/// The batch's cache figures from the run directories under `root` of every job of `specs`
/// that ran to an end (in this run or an earlier one) and may have used the cache; `None`
/// when no run did.
pub fn summary(
    root: &Path,
    specs: &[JobSpec],
    index: &BatchIndex,
    default: Option<&ProfileCacheOptions>,
) -> Option<BatchProfileCache> {
    let mut total = BatchProfileCache::default();
    for spec in specs.iter().filter(|s| may_use_cache(s, default)) {
        let Some(entry) = index.jobs.get(&spec.id) else {
            continue;
        };
        if !entry.state.is_final() || entry.state == EntryState::Skipped || entry.attempts == 0 {
            continue;
        }
        let dirs: Vec<&str> = if entry.passes.is_empty() {
            vec![entry.run_dir.as_str()]
        } else {
            entry.passes.iter().map(String::as_str).collect()
        };
        for dir in dirs {
            if let Some(run) = read_run_cache(&root.join(dir)) {
                add_run(&mut total, &spec.id, &run);
            }
        }
    }
    (total.runs > 0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::atomic_file::write_atomic;
    use crate::model::batch::{Backend, BatchEntry};
    use crate::model::profile_cache::CacheDisagreement;

    fn run_cache(fingerprints: u64, hits: u64, saved_s: f64) -> ProfileCacheSummary {
        ProfileCacheSummary {
            dir: "cache".into(),
            launches: fingerprints * 4,
            fingerprints,
            profiled: fingerprints - hits,
            hits,
            repeats: fingerprints * 3 + hits,
            saved_s,
            fingerprint_s: 0.5,
            ..Default::default()
        }
    }

    /// A run directory `runs/<id>` with a run.json holding `cache` (and other keys the reader
    /// skips).
    fn write_run(root: &Path, rel: &str, cache: Option<&ProfileCacheSummary>) {
        let dir = root.join(rel);
        std::fs::create_dir_all(&dir).unwrap();
        let mut doc = serde_json::json!({"schema_version": 1, "kernels": [{"name": "k", "duration_ns": 5.0}]});
        if let Some(c) = cache {
            doc["profile_cache"] = serde_json::to_value(c).unwrap();
        }
        write_atomic(&dir.join(RUN_FILE), &serde_json::to_vec(&doc).unwrap()).unwrap();
    }

    fn finished(id: &str, state: EntryState) -> BatchEntry {
        let mut e = BatchEntry::pending(id, Default::default());
        e.state = state;
        e.attempts = u32::from(state != EntryState::Skipped);
        e
    }

    #[test]
    fn the_finished_runs_figures_are_summed_and_disagreements_named_by_job() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        let ncu = |id: &str| JobSpec {
            profiler: Some("ncu".into()),
            ..JobSpec::new(id, vec!["./app".into()])
        };
        let specs = vec![
            ncu("a"),
            ncu("b"),
            ncu("multi"),
            JobSpec::new("plain", vec!["true".into()]),
            JobSpec {
                profile_cache: Some(ProfileCacheSetting::On(false)),
                ..ncu("off")
            },
            ncu("skipped"),
            ncu("cut"),
        ];
        let mut b = run_cache(4, 3, 1.5);
        b.audited = 1;
        b.disagreements.push(CacheDisagreement {
            key: "ab12".into(),
            kernel: "saxpy".into(),
            cached_ns: 100.0,
            measured_ns: 180.0,
            tolerance: 0.1,
        });
        write_run(root, "runs/a", Some(&run_cache(2, 0, 0.4)));
        write_run(root, "runs/b", Some(&b));
        write_run(root, "runs/multi/ncu.000", Some(&run_cache(2, 2, 1.0)));
        write_run(root, "runs/multi/ncu.001", None);
        write_run(root, "runs/plain", Some(&run_cache(9, 9, 9.0)));
        write_run(root, "runs/off", Some(&run_cache(9, 9, 9.0)));
        write_run(root, "runs/skipped", Some(&run_cache(9, 9, 9.0)));
        std::fs::create_dir_all(root.join("runs/cut")).unwrap();
        let mut multi = finished("multi", EntryState::Succeeded);
        multi.passes = vec!["runs/multi/ncu.000".into(), "runs/multi/ncu.001".into()];
        let index = BatchIndex::new(
            "jobs",
            Backend::Local,
            [
                finished("a", EntryState::Succeeded),
                finished("b", EntryState::Failed),
                multi,
                finished("plain", EntryState::Succeeded),
                finished("off", EntryState::Succeeded),
                finished("skipped", EntryState::Skipped),
                finished("cut", EntryState::Cancelled),
            ],
        );
        let batch = ProfileCacheOptions::default();
        let s = summary(root, &specs, &index, Some(&batch)).unwrap();
        assert_eq!(
            (s.runs, s.fingerprints, s.profiled, s.hits, s.launches),
            (3, 8, 3, 5, 32)
        );
        assert!((s.hit_rate - 5.0 / 8.0).abs() < 1e-12, "{}", s.hit_rate);
        assert!((s.saved_s - 2.9).abs() < 1e-9 && (s.fingerprint_s - 1.5).abs() < 1e-9);
        assert_eq!((s.audited, s.disagreements), (1, 1));
        assert_eq!(
            (s.disagreed[0].job.as_str(), s.disagreed[0].key.as_str()),
            ("b", "ab12")
        );
        // Without the batch's flag only the jobs that ask for the cache are read.
        assert_eq!(summary(root, &specs, &index, None), None);
        let own = vec![JobSpec {
            profile_cache: Some(ProfileCacheSetting::On(true)),
            ..ncu("a")
        }];
        assert_eq!(summary(root, &own, &index, None).unwrap().runs, 1);
    }

    #[test]
    fn a_damaged_run_document_adds_nothing() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("x")).unwrap();
        std::fs::write(
            root.path().join("x").join(RUN_FILE),
            b"{\"profile_cache\": ",
        )
        .unwrap();
        assert_eq!(read_run_cache(&root.path().join("x")), None);
        assert_eq!(read_run_cache(&root.path().join("missing")), None);
    }
}
