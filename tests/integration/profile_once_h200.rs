//! Profile once on real H200 captures (tests/fixtures/fingerprint-h200/, README there): the
//! fingerprint pass's launch logs and module images of one program built twice (the second time
//! with one kernel's code changed and its name kept), and ncu's records of the first.

use std::collections::{BTreeMap, BTreeSet};

use polyprof::model::profile_cache::{CacheEntry, ProfileContext, ProfileKey, RecordSource};
use polyprof::model::record::KernelRecord;
use polyprof::pipeline::fingerprint::pass::read_logs;
use polyprof::pipeline::profile_cache::ProfileCache;
use polyprof::profilers::ncu::launch_log::LoggedLaunch;
use polyprof::profilers::ncu::profile_once::{Hit, assemble, expected_profiled};

use crate::support::fixture;

fn launches(build: &str) -> Vec<LoggedLaunch> {
    let processes = read_logs(&fixture(&format!("fingerprint-h200/{build}"))).unwrap();
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
        let (a, b) = (a.fingerprint.clone().unwrap(), b.fingerprint.clone().unwrap());
        assert_eq!((&a.function, a.grid, a.block), (&b.function, b.grid, b.block));
        assert_ne!(a.module_sha256, b.module_sha256, "the same name, other code");
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
    let keys: BTreeMap<_, _> = v1
        .iter()
        .map(|l| {
            let f = l.fingerprint.clone().unwrap();
            (f.clone(), ProfileKey::new(f, context()).digest())
        })
        .collect();
    let assembled =
        assemble(&v1, records("ncu-records.json"), &expected, &BTreeMap::new(), &keys).unwrap();
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
        assert!((a - b).abs() <= 0.1 * b, "{} {a} vs {b}", put_back.short_name);
    }
    assert_eq!(assembled.profiled.len(), 4);
    // Under ncu the program launched as in the pass; another order is refused.
    let mut shuffled = records("ncu-records.json");
    shuffled.swap(0, 2);
    assert!(assemble(&v1, shuffled, &expected, &BTreeMap::new(), &keys).is_err());
}

/// Stored, the profiles answer the same build again, all of them; the regenerated build, a
/// changed driver or a changed metric set is a miss.
#[test]
fn stored_profiles_answer_the_same_build_and_nothing_else() {
    let v1 = launches("v1");
    let symbols: BTreeSet<String> = v1.iter().map(|l| l.symbol.clone()).collect();
    let expected = expected_profiled(&v1, &symbols, 1);
    let key_of = |l: &LoggedLaunch, c: ProfileContext| {
        ProfileKey::new(l.fingerprint.clone().unwrap(), c)
    };
    let keys: BTreeMap<_, _> = v1
        .iter()
        .map(|l| (l.fingerprint.clone().unwrap(), key_of(l, context()).digest()))
        .collect();
    let assembled =
        assemble(&v1, records("ncu-records.json"), &expected, &BTreeMap::new(), &keys).unwrap();
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
            },
        );
    }
    let again = assemble(&v1, Vec::new(), &[], &hits, &keys).unwrap();
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
