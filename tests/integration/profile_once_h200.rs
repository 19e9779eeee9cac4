//! Profile once on real H200 captures (tests/fixtures/fingerprint-h200/, README there): the
//! fingerprint pass's launch logs and module images of one program built twice (the second time
//! with one kernel's code changed and its name kept), and ncu's records of the first.

use std::collections::{BTreeMap, BTreeSet};

use polyprof::model::profile_cache::{
    CacheEntry, LaunchFingerprint, ProfileContext, ProfileKey, RecordSource,
};
use polyprof::model::record::KernelRecord;
use polyprof::pipeline::fingerprint::pass::read_logs;
use polyprof::pipeline::profile_cache::ProfileCache;
use polyprof::pipeline::profile_once::{audit_tolerance_ns, disagreement, run_noise};
use polyprof::profilers::capability::Capability;
use polyprof::profilers::ncu::launch_log::LoggedLaunch;
use polyprof::profilers::ncu::profile_once::{Hit, assemble, expected_profiled};
use polyprof::profilers::registry;
use polyprof::results::stats::Stats;

use crate::support::fixture;

fn launches(build: &str) -> Vec<LoggedLaunch> {
    // Read as the pipeline reads them: through ncu's fingerprint capability, asked by name.
    let capability = registry::capability("ncu", Capability::Fingerprint, |c| c.fingerprint)
        .unwrap()
        .unwrap();
    let processes = read_logs(capability, &fixture(&format!("fingerprint-h200/{build}"))).unwrap();
    assert_eq!(processes.len(), 1);
    let process = processes.into_values().next().unwrap();
    assert_eq!((process.graphs, process.failures.len()), (0, 0));
    process.launches
}

fn records(file: &str) -> Vec<KernelRecord> {
    let path = fixture(&format!("fingerprint-h200/v1/{file}"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn context() -> ProfileContext {
    ProfileContext {
        device: "NVIDIA H200 (sm_90)".into(),
        driver: "580.159.04".into(),
        tool: "ncu 2025.3.1.0".into(),
        clock_control: "base".into(),
        metric_set: "minimal".into(),
        scope: "twokernels".into(),
    }
}

/// The key digests of `v1`'s launches and its records put back from ncu's profile of `expected`.
fn first_profile(
    v1: &[LoggedLaunch],
    expected: &[usize],
) -> (
    BTreeMap<LaunchFingerprint, String>,
    polyprof::profilers::ncu::profile_once::Assembly,
) {
    let keys: BTreeMap<_, _> = v1
        .iter()
        .map(|l| {
            let f = l.fingerprint.clone().unwrap();
            (f.clone(), ProfileKey::new(f, context()).digest())
        })
        .collect();
    let assembled = assemble(
        v1,
        &records("ncu-records.json"),
        expected,
        &BTreeMap::new(),
        &keys,
    )
    .unwrap();
    (keys, assembled)
}

/// Every launch is keyed by the module image loaded inside its first launch (lazy loading); a
/// regenerated kernel with its name kept is another fingerprint.
#[test]
fn each_launch_is_keyed_by_its_image_and_a_regenerated_kernel_is_another_key() {
    let v1 = launches("v1");
    let v2 = launches("v2");
    assert_eq!(v1.len(), 8);
    let fingerprints: BTreeSet<_> = v1.iter().map(|l| l.fingerprint.clone().unwrap()).collect();
    // scale×2 configurations, sum<1>, sum<2>.
    assert_eq!(fingerprints.len(), 4);
    for (a, b) in v1.iter().zip(&v2) {
        let (a, b) = (
            a.fingerprint.clone().unwrap(),
            b.fingerprint.clone().unwrap(),
        );
        assert_eq!(
            (&a.function, a.grid, a.block),
            (&b.function, b.grid, b.block)
        );
        assert_ne!(
            a.module_sha256, b.module_sha256,
            "the same name, other code"
        );
    }
}

/// ncu, narrowed to every symbol once per launch configuration, profiled launches 0, 1, 6 and 7
/// (what `expected_profiled` predicts); the other four launches are its repeats, with the same
/// records, and agree with ncu profiling every launch (the same kernel, durations within 10 %).
#[test]
fn the_records_of_every_launch_are_put_back_from_one_profile_per_configuration() {
    let v1 = launches("v1");
    let symbols: BTreeSet<String> = v1.iter().map(|l| l.symbol.clone()).collect();
    let expected = expected_profiled(&v1, &symbols, 1);
    assert_eq!(expected, [0, 1, 6, 7]);
    let (keys, assembled) = first_profile(&v1, &expected);
    let sources: Vec<RecordSource> = assembled
        .records
        .iter()
        .map(|r| r.cache.as_ref().unwrap().source)
        .collect();
    use RecordSource::{Profiled as P, Repeat as R};
    assert_eq!(sources, [P, P, R, R, R, R, P, P]);
    let every = records("ncu-every-launch.json");
    assert_eq!(every.len(), 8);
    for (put_back, profiled) in assembled.records.iter().zip(&every) {
        assert_eq!(put_back.name, profiled.name);
        assert_eq!(put_back.grid, profiled.grid);
        let (a, b) = (put_back.duration_ns.unwrap(), profiled.duration_ns.unwrap());
        assert!(
            (a - b).abs() <= 0.1 * b,
            "{} {a} vs {b}",
            put_back.short_name
        );
    }
    assert_eq!(assembled.profiled.len(), 4);
    // Under ncu the program launched as in the pass; another order is refused.
    let mut shuffled = records("ncu-records.json");
    shuffled.swap(0, 2);
    assert!(assemble(&v1, &shuffled, &expected, &BTreeMap::new(), &keys).is_err());
}

/// Stored, the profiles answer the same build again, all of them; the regenerated build, a
/// changed driver or a changed metric set is a miss.
#[test]
fn stored_profiles_answer_the_same_build_and_nothing_else() {
    let v1 = launches("v1");
    let symbols: BTreeSet<String> = v1.iter().map(|l| l.symbol.clone()).collect();
    let expected = expected_profiled(&v1, &symbols, 1);
    let key_of =
        |l: &LoggedLaunch, c: ProfileContext| ProfileKey::new(l.fingerprint.clone().unwrap(), c);
    let (keys, assembled) = first_profile(&v1, &expected);
    let dir = tempfile::tempdir().unwrap();
    let cache = ProfileCache::open(dir.path()).unwrap();
    for (fingerprint, record) in &assembled.profiled {
        cache
            .put(&CacheEntry {
                key: ProfileKey::new(fingerprint.clone(), context()),
                record: record.clone(),
                origin_run: "v1-first".into(),
                profiled_unix_s: 1.0,
                profile_s: 0.2,
            })
            .unwrap();
    }
    // The same build: every launch answered from the cache, ncu not needed.
    let mut hits = BTreeMap::new();
    for launch in &v1 {
        let key = key_of(launch, context());
        let entry = cache.get(&key).unwrap().expect("a hit");
        hits.insert(
            launch.fingerprint.clone().unwrap(),
            Hit {
                record: entry.record,
                key: key.digest(),
                origin_run: entry.origin_run,
                profile_s: entry.profile_s,
            },
        );
    }
    let again = assemble(&v1, &[], &[], &hits, &keys).unwrap();
    assert!(
        again
            .records
            .iter()
            .all(|r| r.cache.as_ref().unwrap().source == RecordSource::Cache)
    );
    assert_eq!(again.records.len(), 8);
    // The regenerated build, another driver, another metric set: misses.
    for launch in launches("v2") {
        assert!(cache.get(&key_of(&launch, context())).unwrap().is_none());
    }
    let driver = ProfileContext {
        driver: "590.00".into(),
        ..context()
    };
    let metrics = ProfileContext {
        metric_set: "set full".into(),
        ..context()
    };
    for changed in [driver, metrics] {
        assert!(cache.get(&key_of(&v1[0], changed)).unwrap().is_none());
    }
}

fn read_fixture(name: &str) -> serde_json::Value {
    let path = fixture(&format!("profile-once-h200/{name}"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn batch(root: &str) -> serde_json::Value {
    read_fixture(&format!("{root}.batch.json"))
}

/// The baseline, run in two batches (c1, c2) of five problems each: their jobs together.
fn baseline() -> serde_json::Value {
    let mut jobs = serde_json::Map::new();
    for part in ["c1", "c2"] {
        jobs.extend(batch(part)["jobs"].as_object().unwrap().clone());
    }
    serde_json::json!({ "jobs": jobs })
}

/// The stage's device seconds and how many of its jobs ran.
fn stage_s(batch: &serde_json::Value, stage: &str) -> (f64, usize) {
    let jobs = batch["jobs"].as_object().unwrap();
    let ended: Vec<&serde_json::Value> = jobs
        .iter()
        .filter(|(id, _)| id.ends_with(&format!(".{stage}")))
        .map(|(_, job)| job)
        .filter(|job| job["duration_s"].is_number())
        .collect();
    let total = ended
        .iter()
        .map(|j| j["duration_s"].as_f64().unwrap())
        .sum();
    (total, ended.len())
}

/// The `problem.candidate` of the jobs of `stage` in `state`.
fn candidates(batch: &serde_json::Value, stage: &str, state: &str) -> BTreeSet<String> {
    batch["jobs"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(id, job)| id.ends_with(&format!(".{stage}")) && job["state"] == state)
        .map(|(id, _)| id.trim_end_matches(&format!(".{stage}")).to_string())
        .collect()
}

/// The generated candidates expected `expect` (ok, incorrect, slow).
fn generated(expect: &str) -> BTreeSet<String> {
    read_fixture("manifest.json")["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["expect"] == expect)
        .map(|c| {
            format!(
                "{}.{}",
                c["problem"].as_str().unwrap(),
                c["candidate"].as_str().unwrap()
            )
        })
        .collect()
}

/// The H200 batch (10 problems × 20 candidates, 35 % incorrect or far slower): the cascade with
/// the cache against ncu on every candidate. Timing + counters cost at most a fifth of the
/// baseline's; the second run's profiling a tenth of the baseline's; the audit sample ran in
/// both; the checks failed exactly the generated wrong candidates, and the cascade profiled no
/// far slower one.
#[test]
fn the_h200_batch_profiles_once_and_judges_as_the_baseline_does() {
    let (a, b, c) = (batch("a"), batch("b"), baseline());
    let (a_time, _) = stage_s(&a, "time");
    let (a_profile, a_runs) = stage_s(&a, "profile");
    let (b_profile, b_runs) = stage_s(&b, "profile");
    let (c_time, c_timed) = stage_s(&c, "time");
    let (c_profile, c_runs) = stage_s(&c, "profile");
    assert_eq!((a_runs, b_runs, c_timed, c_runs), (130, 130, 200, 200));
    let ratio = (a_time + a_profile) / (c_time + c_profile);
    assert!(
        ratio <= 0.20,
        "timing + counters at {ratio:.3}x of ncu on every candidate"
    );
    let again = b_profile / c_profile;
    assert!(
        again < 0.1,
        "the second run's profiling at {again:.3}x of the baseline's"
    );
    let cache_a = &a["profile_cache"];
    let cache_b = &b["profile_cache"];
    assert_eq!(cache_a["fingerprints"], 520);
    assert!(cache_a["hit_rate"].as_f64().unwrap() > 0.85);
    assert_eq!(
        cache_b["profiled"], cache_b["audited"],
        "only the audit sample ran ncu again"
    );
    for cache in [cache_a, cache_b] {
        assert!(cache["audited"].as_u64().unwrap() > 0);
        assert_eq!(cache["bypassed"], 0);
    }
    // The one disagreement, judged by the first tolerance (5 % at least): a 2.8 µs kernel 256 ns
    // off, within today's (see the next test).
    assert_eq!(cache_a["disagreements"], 0);
    assert_eq!(cache_b["disagreements"], 1);
    assert_eq!(cache_b["disagreed"][0]["kernel"], "count_mismatches");
    assert_eq!(
        a["cascade"]["saved_by_cache_s"], cache_a["saved_s"],
        "the cascade's summary carries the cache's saving"
    );
    let failed = candidates(&a, "check", "failed");
    assert_eq!(failed, generated("incorrect"));
    assert_eq!(failed.len(), 40);
    assert_eq!(failed, candidates(&b, "check", "failed"));
    let profiled = candidates(&a, "profile", "succeeded");
    assert!(profiled.is_disjoint(&generated("slow")));
    assert_eq!(profiled, candidates(&b, "profile", "succeeded"));
}

/// Re-judges an audits.json (scripts/profile_once_audits.py: each drawn run's profiled
/// durations and the cached ones) by today's rule. Asserts that every audited hit agrees and that
/// an entry 60 % off disagrees; returns the runs, the hits judged and the largest share of its
/// tolerance a hit used.
fn rejudge(file: &str) -> (usize, usize, f64) {
    let audits = read_fixture(file);
    let cached = audits["cached"].as_object().unwrap();
    let runs = audits["audits"].as_array().unwrap();
    let mut judged = 0;
    let mut worst: f64 = 0.0;
    for run in runs {
        let job = format!(
            "{}/{}",
            run["root"].as_str().unwrap(),
            run["job"].as_str().unwrap()
        );
        let samples: BTreeMap<String, Vec<f64>> =
            serde_json::from_value(run["samples"].clone()).unwrap();
        let noise = run_noise(samples.values());
        assert!(
            noise.is_some(),
            "{job}: an audit run profiles repeats to measure its noise"
        );
        assert_eq!(
            noise,
            run["recorded_noise"].as_f64(),
            "{job}: as the run measured it"
        );
        for (key, durations) in &samples {
            // A key first profiled by this very run is its miss, not an audited hit.
            let Some(entry) = cached.get(key).filter(|e| e["origin"] != job.as_str()) else {
                continue;
            };
            let cached_ns = entry["duration_ns"].as_f64().unwrap();
            let hit = |ns: f64| Hit {
                record: KernelRecord {
                    duration_ns: Some(ns),
                    ..KernelRecord::default()
                },
                key: key.clone(),
                origin_run: entry["origin"].as_str().unwrap().to_string(),
                profile_s: 0.0,
            };
            let kernel = entry["kernel"].as_str().unwrap();
            let found = disagreement(&hit(cached_ns), kernel, durations, noise);
            assert!(found.is_none(), "{file} {job}: {found:?}");
            let median = Stats::from_samples(durations).unwrap().median;
            worst = worst.max((median - cached_ns).abs() / audit_tolerance_ns(noise, cached_ns));
            assert!(
                disagreement(&hit(cached_ns * 1.6), kernel, durations, noise).is_some(),
                "{file} {job}: an entry 60 % off must disagree"
            );
            judged += 1;
        }
    }
    (runs.len(), judged, worst)
}

/// The audit samples of two H200 batches re-judged by the run's noise: the 10 × 20 batch's 15
/// drawn runs (the 2.8 µs `count_mismatches` its first tolerance flagged included), and a 2 × 10
/// batch whose every run was drawn (`AUDIT_SHARE=1`, its run's own verdicts: none disagreed).
/// Every re-profiled hit agrees with its entry; an entry 60 % off disagrees in every run.
#[test]
fn the_h200_audit_sample_agrees_within_each_runs_noise_and_a_wrong_entry_does_not() {
    let (runs, judged, worst) = rejudge("audits.json");
    assert_eq!((runs, judged), (15, 58));
    assert!(
        worst < 0.6,
        "the closest call used {worst:.2} of its tolerance"
    );
    let (runs, judged, worst) = rejudge("audit-every-run/audits.json");
    assert_eq!((runs, judged), (22, 86));
    assert!(
        worst < 0.6,
        "the closest call used {worst:.2} of its tolerance"
    );
    for root in ["a", "b"] {
        let index = read_fixture(&format!("audit-every-run/{root}.batch.json"));
        assert_eq!(index["profile_cache"]["disagreements"], 0, "({root})");
    }
}

fn run(name: &str) -> polyprof::model::ProfileRun {
    let path = fixture(&format!("fingerprint-h200/runs-{name}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// On the H200, one cache: the first run profiles each configuration once, the same build again
/// runs no ncu at all, the regenerated build misses, and the audit sample agrees.
#[test]
fn on_the_h200_the_second_run_of_a_build_runs_no_profiler() {
    let first = run("v1-first");
    let again = run("v1-again");
    let regenerated = run("v2-regenerated");
    let audited = run("v1-audited");
    let summary = |r: &polyprof::model::ProfileRun| r.profile_cache.clone().unwrap();
    assert_eq!((summary(&first).profiled, summary(&first).repeats), (4, 4));
    let steps: Vec<&str> = again.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        steps,
        ["fingerprint"],
        "every launch answered: ncu did not run"
    );
    assert_eq!(summary(&again).hits, 4);
    assert_eq!(again.kernels.len(), 8);
    for (cached, profiled) in again.kernels.iter().zip(&first.kernels) {
        let origin = cached.cache.as_ref().unwrap();
        assert_eq!(origin.source, RecordSource::Cache);
        assert_eq!(origin.origin_run.as_deref(), Some("OUT/v1-first"));
        assert_eq!(cached.duration_ns, profiled.duration_ns);
    }
    assert_eq!(
        (summary(&regenerated).hits, summary(&regenerated).profiled),
        (0, 4)
    );
    assert_eq!(summary(&audited).audited, 4);
    assert!(summary(&audited).disagreements.is_empty());
}
