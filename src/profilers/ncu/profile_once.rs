//! Profile once with ncu: which launches ncu must profile when the cache already holds some
//! fingerprints, the ncu options that profile just those, and the run's records put back
//! together in launch order (profiled now, repeats of those, cache hits).
//!
//! ncu narrows by name (`--kernel-name-base mangled -k regex:^(…)$`) and profiles the first
//! `--launch-count` launches of each launch configuration (`--filter-mode per-launch-config`).
//! What it will profile is therefore known before it runs, and each profiled record is matched
//! to its launch by that order and checked by name, grid and block; any disagreement (a program
//! that launched differently the second time) leaves the cache untouched.

use std::collections::{BTreeMap, BTreeSet};

use super::launch_log::LoggedLaunch;
use super::names::printed_name;
use super::options::{KernelNameBase, NcuOptions};
use crate::model::profile_cache::{LaunchFingerprint, RecordOrigin, RecordSource};
use crate::model::record::KernelRecord;
pub use crate::profilers::capability::{Assembly, Hit};

/// ncu's `--filter-mode per-launch-config`: the key it counts launches by.
type LaunchConfig = (String, [u64; 3], [u64; 3], u64);

fn config_of(launch: &LoggedLaunch) -> LaunchConfig {
    (
        launch.symbol.clone(),
        launch.grid,
        launch.block,
        launch.dynamic_shared_bytes,
    )
}

/// The ncu options that profile, of `symbols`, the first `per_config` launches of each launch
/// configuration. Refused when the user's own filters would fight the cache's.
pub fn narrowed_options(
    options: &NcuOptions,
    symbols: &BTreeSet<String>,
    per_config: u64,
) -> Result<NcuOptions, String> {
    if options.kernel_name.is_some() || options.launch_skip.is_some() {
        return Err(
            "the profile cache chooses which launches ncu profiles; drop --kernel/--launch-skip, or run without --profile-cache"
                .to_string(),
        );
    }
    if options.launch_count.is_some() {
        return Err(
            "--launch-count and the profile cache both bound the launches profiled; use --profiles-per-fingerprint instead"
                .to_string(),
        );
    }
    let taken = ["--filter-mode", "-k", "--kernel-name", "--kernel-id", "-c"];
    if let Some(arg) = options.extra_args.iter().find(|a| {
        taken
            .iter()
            .any(|t| a.as_str() == *t || a.starts_with(&format!("{t}=")))
    }) {
        return Err(format!(
            "--ncu-arg {arg} filters launches, which the profile cache does; leave it out or run without --profile-cache"
        ));
    }
    let alternatives: Vec<String> = symbols.iter().map(|s| regex::escape(s)).collect();
    let mut narrowed = options.clone();
    narrowed.kernel_name = Some(format!("regex:^(?:{})$", alternatives.join("|")));
    narrowed.kernel_name_base = Some(KernelNameBase::Mangled);
    narrowed.launch_count = Some(per_config.max(1));
    narrowed
        .extra_args
        .extend(["--filter-mode".to_string(), "per-launch-config".to_string()]);
    Ok(narrowed)
}

/// The launches (indices into `launches`) ncu will profile under [`narrowed_options`]: of those
/// whose symbol is in `symbols`, the first `per_config` of each launch configuration.
pub fn expected_profiled(
    launches: &[LoggedLaunch],
    symbols: &BTreeSet<String>,
    per_config: u64,
) -> Vec<usize> {
    let mut seen: BTreeMap<LaunchConfig, u64> = BTreeMap::new();
    let mut expected = Vec::new();
    for (i, launch) in launches.iter().enumerate() {
        if !symbols.contains(&launch.symbol) {
            continue;
        }
        let count = seen.entry(config_of(launch)).or_default();
        if *count < per_config.max(1) {
            *count += 1;
            expected.push(i);
        }
    }
    expected
}

/// Whether `record` (as ncu printed it) is `launch`.
pub fn record_is_launch(record: &KernelRecord, launch: &LoggedLaunch) -> bool {
    let named = record.name == printed_name(&launch.symbol) || record.name == launch.symbol;
    named && record.grid == Some(launch.grid) && record.block == Some(launch.block)
}

/// Put the run's records together: each launch gets its own profiled record, else its
/// fingerprint's record profiled in this run, else its cache hit. `profiled` are ncu's records
/// in order, `expected` the launches they must be ([`expected_profiled`]); `keys` each keyed
/// launch's key digest. A mismatch is an error saying where: the caller then keeps ncu's
/// records as they are and caches nothing.
pub fn assemble(
    launches: &[LoggedLaunch],
    profiled: &[KernelRecord],
    expected: &[usize],
    hits: &BTreeMap<LaunchFingerprint, Hit>,
    keys: &BTreeMap<LaunchFingerprint, String>,
) -> Result<Assembly, String> {
    if profiled.len() != expected.len() {
        return Err(format!(
            "ncu profiled {} launches where the fingerprint pass expects {}: the program launched differently under ncu",
            profiled.len(),
            expected.len()
        ));
    }
    let mut own: BTreeMap<usize, KernelRecord> = BTreeMap::new();
    for (record, &index) in profiled.iter().zip(expected) {
        let launch = &launches[index];
        if !record_is_launch(record, launch) {
            return Err(format!(
                "ncu's launch `{}` {:?}×{:?} is not the fingerprint pass's launch {} (`{}` {:?}×{:?}): the program launched differently under ncu",
                record.name,
                record.grid,
                record.block,
                index,
                printed_name(&launch.symbol),
                launch.grid,
                launch.block
            ));
        }
        own.insert(index, record.clone());
    }
    let mut out = Assembly::default();
    // A launch configuration profiled in this run answers its repeats even when the profiled
    // launch had no fingerprint of its own.
    let mut by_config: BTreeMap<LaunchConfig, KernelRecord> = BTreeMap::new();
    for (index, launch) in launches.iter().enumerate() {
        if let Some(record) = own.get(&index) {
            by_config
                .entry(config_of(launch))
                .or_insert_with(|| record.clone());
        }
    }
    for (index, launch) in launches.iter().enumerate() {
        let key = launch
            .fingerprint
            .as_ref()
            .ok()
            .and_then(|f| keys.get(f).cloned());
        if let Some(mut record) = own.remove(&index) {
            if let Ok(fingerprint) = &launch.fingerprint {
                out.profiled
                    .entry(fingerprint.clone())
                    .or_insert_with(|| record.clone());
                if let Some(ns) = record.duration_ns {
                    out.samples.entry(fingerprint.clone()).or_default().push(ns);
                }
            }
            record.cache = key.map(|key| RecordOrigin {
                source: RecordSource::Profiled,
                key,
                origin_run: None,
            });
            record.launch_id = index as u64;
            out.records.push(record);
            continue;
        }
        let Ok(fingerprint) = &launch.fingerprint else {
            return Err(format!(
                "launch {index} (`{}`) has no fingerprint and was not profiled",
                printed_name(&launch.symbol)
            ));
        };
        let key = key.unwrap_or_default();
        let profiled_here = out
            .profiled
            .get(fingerprint)
            .or_else(|| by_config.get(&config_of(launch)));
        let (mut record, origin) = if let Some(record) = profiled_here {
            out.repeats += 1;
            (
                record.clone(),
                RecordOrigin {
                    source: RecordSource::Repeat,
                    key,
                    origin_run: None,
                },
            )
        } else if let Some(hit) = hits.get(fingerprint) {
            out.from_cache += 1;
            (
                hit.record.clone(),
                RecordOrigin {
                    source: RecordSource::Cache,
                    key: hit.key.clone(),
                    origin_run: Some(hit.origin_run.clone()),
                },
            )
        } else {
            return Err(format!(
                "launch {index} (`{}`) was neither profiled nor cached",
                printed_name(&launch.symbol)
            ));
        };
        record.cache = Some(origin);
        record.launch_id = index as u64;
        record.start_ns = None;
        out.records.push(record);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(symbol: &str, grid: u64, sha: &str) -> LoggedLaunch {
        LoggedLaunch {
            index: 0,
            symbol: symbol.to_string(),
            grid: [grid, 1, 1],
            block: [256, 1, 1],
            dynamic_shared_bytes: 0,
            fingerprint: Ok(LaunchFingerprint {
                module_sha256: sha.to_string(),
                function: symbol.to_string(),
                grid: [grid, 1, 1],
                block: [256, 1, 1],
                dynamic_shared_bytes: 0,
            }),
        }
    }

    fn record(symbol: &str, grid: u64, ns: f64) -> KernelRecord {
        KernelRecord {
            name: printed_name(symbol),
            grid: Some([grid, 1, 1]),
            block: Some([256, 1, 1]),
            duration_ns: Some(ns),
            ..KernelRecord::default()
        }
    }

    #[test]
    fn the_narrowed_options_select_by_mangled_name_once_per_configuration() {
        let symbols = BTreeSet::from(["_Z5scalePfPKfi".to_string(), "_Z3sumPf".to_string()]);
        let narrowed = narrowed_options(&NcuOptions::default(), &symbols, 1).unwrap();
        assert_eq!(
            narrowed.kernel_name.as_deref(),
            Some("regex:^(?:_Z3sumPf|_Z5scalePfPKfi)$")
        );
        assert_eq!(narrowed.kernel_name_base, Some(KernelNameBase::Mangled));
        assert_eq!(narrowed.launch_count, Some(1));
        assert!(
            narrowed
                .extra_args
                .ends_with(&["--filter-mode".to_string(), "per-launch-config".to_string()])
        );
        let user = NcuOptions {
            kernel_name: Some("scale".to_string()),
            ..NcuOptions::default()
        };
        assert!(narrowed_options(&user, &symbols, 1).is_err());
        let user = NcuOptions {
            extra_args: vec!["--filter-mode=global".to_string()],
            ..NcuOptions::default()
        };
        assert!(narrowed_options(&user, &symbols, 1).is_err());
    }

    #[test]
    fn repeats_and_hits_fill_the_launches_ncu_did_not_profile() {
        let a = "_Z1av";
        let b = "_Z1bv";
        let launches = vec![
            launch(a, 8, "m1"),
            launch(b, 8, "m1"),
            launch(a, 8, "m1"),
            launch(a, 16, "m1"),
        ];
        // b is cached; a is new: ncu profiles a's first launch of each configuration.
        let symbols = BTreeSet::from([a.to_string()]);
        let expected = expected_profiled(&launches, &symbols, 1);
        assert_eq!(expected, [0, 3]);
        let fp = |i: usize| launches[i].fingerprint.clone().unwrap();
        let keys: BTreeMap<_, _> = (0..4).map(|i| (fp(i), format!("k{i}"))).collect();
        let hits = BTreeMap::from([(
            fp(1),
            Hit {
                record: record(b, 8, 5.0),
                key: "k1".to_string(),
                origin_run: "earlier/ncu.000".to_string(),
                profile_s: 0.5,
            },
        )]);
        let assembled = assemble(
            &launches,
            &[record(a, 8, 1.0), record(a, 16, 2.0)],
            &expected,
            &hits,
            &keys,
        )
        .unwrap();
        let sources: Vec<_> = assembled
            .records
            .iter()
            .map(|r| (r.launch_id, r.cache.as_ref().unwrap().source, r.duration_ns))
            .collect();
        assert_eq!(
            sources,
            [
                (0, RecordSource::Profiled, Some(1.0)),
                (1, RecordSource::Cache, Some(5.0)),
                (2, RecordSource::Repeat, Some(1.0)),
                (3, RecordSource::Profiled, Some(2.0)),
            ]
        );
        assert_eq!(
            assembled.records[1]
                .cache
                .as_ref()
                .unwrap()
                .origin_run
                .as_deref(),
            Some("earlier/ncu.000")
        );
        assert_eq!((assembled.repeats, assembled.from_cache), (1, 1));
        assert_eq!(assembled.profiled.len(), 2);
        assert_eq!(assembled.samples[&fp(0)], [1.0]);
        assert_eq!(assembled.samples[&fp(3)], [2.0]);
        // Two launches of a configuration profiled: both durations are samples of it.
        let twice = expected_profiled(&launches, &symbols, 2);
        assert_eq!(twice, [0, 2, 3]);
        let assembled = assemble(
            &launches,
            &[record(a, 8, 1.0), record(a, 8, 1.2), record(a, 16, 2.0)],
            &twice,
            &hits,
            &keys,
        )
        .unwrap();
        assert_eq!(assembled.samples[&fp(0)], [1.0, 1.2]);
        assert_eq!(assembled.repeats, 0);
        // A program that launched otherwise under ncu caches nothing.
        let wrong = assemble(
            &launches,
            &[record(a, 16, 1.0), record(a, 8, 2.0)],
            &expected,
            &hits,
            &keys,
        );
        assert!(wrong.unwrap_err().contains("launched differently"));
        let short = assemble(&launches, &[record(a, 8, 1.0)], &expected, &hits, &keys);
        assert!(short.is_err());
    }
}
