//! `polyprof cache` through the real binary, on a cache filled through the library: `list`
//! (table and `--json`), `expire --older-than`, `invalidate` by digest or prefix, `clear`,
//! `path`; a missing cache is never created by reading it, and a folder that is not a cache is
//! never cleared.

use std::path::Path;

use polyprof::model::batch::now_unix_s;
use polyprof::model::profile_cache::CacheEntry;
use polyprof::model::record::KernelRecord;
use polyprof::pipeline::profile_cache::ProfileCache;
use serde_json::Value;

use crate::support::hostile::key_on as key;
use crate::support::{assert_exit, polyprof};

const DAY: f64 = 86_400.0;

/// Three entries: kernel1 profiled 10 days ago, kernel2 2 days ago, kernel3 now.
fn filled(dir: &Path) -> Vec<String> {
    let cache = ProfileCache::open(dir).unwrap();
    let now = now_unix_s();
    [(1, 10.0 * DAY), (2, 2.0 * DAY), (3, 0.0)]
        .into_iter()
        .map(|(n, age)| {
            let key = key(n, "NVIDIA H200");
            cache
                .put(&CacheEntry {
                    record: KernelRecord {
                        profiler: "ncu".into(),
                        name: format!("kernel{n}(float *)"),
                        short_name: format!("kernel{n}"),
                        duration_ns: Some(1000.0 * n as f64),
                        ..KernelRecord::default()
                    },
                    key: key.clone(),
                    origin_run: format!("runs/job-{n}/ncu.000"),
                    profiled_unix_s: now - age,
                    profile_s: 0.17,
                })
                .unwrap();
            key.digest()
        })
        .collect()
}

fn cache(dir: &Path, args: &[&str]) -> std::process::Output {
    polyprof()
        .arg("cache")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .unwrap()
}

fn json(out: &std::process::Output) -> Value {
    assert_exit(out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn listed(dir: &Path) -> Vec<String> {
    json(&cache(dir, &["list", "--json"]))["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kernel"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn list_expire_invalidate_and_clear() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("profiles");
    let digests = filled(&dir);

    let listing = json(&cache(&dir, &["list", "--json"]));
    assert_eq!(listing["dir"], dir.display().to_string());
    assert_eq!(listing["stats"]["entries"], 3);
    let entries = listing["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3);
    // Newest first, each with its digest, device, tool, time, size and origin run.
    assert_eq!(entries[0]["kernel"], "kernel3");
    assert_eq!(entries[2]["digest"], digests[0].as_str());
    assert_eq!(entries[2]["device"], "NVIDIA H200");
    assert_eq!(entries[2]["tool"], "ncu 2025.3.1.0");
    assert_eq!(entries[2]["origin_run"], "runs/job-1/ncu.000");
    assert!(entries[2]["bytes"].as_u64().unwrap() > 100);
    assert!(entries[2]["profiled_unix_s"].as_f64().unwrap() < now_unix_s() - 9.0 * DAY);

    let out = cache(&dir, &["list"]);
    assert_exit(&out, 0);
    let table = String::from_utf8_lossy(&out.stdout);
    for text in [
        &digests[0][..12],
        "kernel1",
        "kernel3",
        "10d 0h",
        "runs/job-1/ncu.000",
    ] {
        assert!(table.contains(text), "{text} missing:\n{table}");
    }
    assert!(table.contains("3 entries"), "{table}");

    // Older than a week: kernel1 only.
    let removed = json(&cache(&dir, &["expire", "--older-than", "7d", "--json"]));
    assert_eq!(removed["removed"], 1);
    assert_eq!(removed["stats"]["entries"], 2);
    assert_eq!(listed(&dir), ["kernel3", "kernel2"]);

    // A typo among the digests removes nothing; a unique prefix removes its entry.
    let out = cache(&dir, &["invalidate", &digests[1][..12], "nothex!"]);
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`nothex!` is not an entry's digest"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cache(&dir, &["invalidate", &digests[0]]);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no entry's digest starts with"));
    assert_eq!(listed(&dir).len(), 2);
    let removed = json(&cache(
        &dir,
        &["invalidate", &digests[1][..12].to_uppercase(), "--json"],
    ));
    assert_eq!(removed["removed"], 1);
    assert_eq!(removed["digests"][0], digests[1].as_str());
    assert_eq!(listed(&dir), ["kernel3"]);

    let out = cache(&dir, &["clear"]);
    assert_exit(&out, 0);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("removed 1 entries; 0 left"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = cache(&dir, &["list"]);
    assert_exit(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("no entries in "));
}

#[test]
fn a_bad_age_is_a_usage_error() {
    let root = tempfile::tempdir().unwrap();
    // A bare number is seconds (the one duration syntax); these are no duration at all.
    for age in ["7x", "d", "7d3x"] {
        let out = cache(root.path(), &["expire", "--older-than", age]);
        assert_exit(&out, 2);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is not a duration"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_missing_cache_is_read_as_empty_and_not_created() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("never-made");
    let listing = json(&cache(&dir, &["list", "--json"]));
    assert_eq!(listing["entries"], Value::Array(Vec::new()));
    assert_eq!(json(&cache(&dir, &["clear", "--json"]))["removed"], 0);
    assert_eq!(
        json(&cache(&dir, &["expire", "--older-than", "1d", "--json"]))["removed"],
        0
    );
    let out = cache(&dir, &["invalidate", "abcdef"]);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no profile cache"));
    assert!(!dir.exists());
}

#[test]
fn a_folder_that_is_not_a_cache_is_never_cleared() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("thesis.tex"), "precious").unwrap();
    let out = cache(root.path(), &["clear"]);
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not a polyprof profile cache"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(root.path().join("thesis.tex").exists());
}

#[test]
fn path_is_profiles_under_the_configured_cache_dir_else_the_xdg_cache() {
    let root = tempfile::tempdir().unwrap();
    let run = |configured: Option<&Path>| {
        let mut command = polyprof();
        command
            .args(["cache", "path"])
            .current_dir(root.path())
            .env("XDG_CACHE_HOME", root.path().join("xdg"))
            .env("XDG_CONFIG_HOME", root.path().join("config"))
            .env_remove("POLYPROF_CACHE_DIR");
        if let Some(dir) = configured {
            command.env("POLYPROF_CACHE_DIR", dir);
        }
        let out = command.output().unwrap();
        assert_exit(&out, 0);
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    };
    assert_eq!(
        run(None),
        root.path()
            .join("xdg/polyprof/profiles")
            .display()
            .to_string()
    );
    let shared = root.path().join("shared");
    assert_eq!(
        run(Some(&shared)),
        shared.join("profiles").display().to_string()
    );
    // `path` only says where; it creates nothing.
    assert!(!root.path().join("xdg").exists());
}

/// The writer the next test starts as several processes: stores keys 0..20 of its device in the
/// cache named by the variable, twice over. Outside that test it does nothing.
#[test]
fn writer_process() {
    let Some(dir) = std::env::var_os("POLYPROF_TEST_CACHE_WRITER") else {
        return;
    };
    let cache = ProfileCache::open(Path::new(&dir)).unwrap();
    for round in 0..2 {
        for n in 0..20 {
            let key = key(n, "NVIDIA H200");
            cache
                .put(&CacheEntry {
                    record: KernelRecord {
                        short_name: format!("kernel{n}"),
                        ..KernelRecord::default()
                    },
                    key: key.clone(),
                    origin_run: format!("process {} round {round}", std::process::id()),
                    profiled_unix_s: now_unix_s(),
                    profile_s: 0.1,
                })
                .unwrap();
            // Another process may be rewriting it: a whole entry of this key, never half one.
            assert_eq!(cache.get(&key).unwrap().unwrap().key, key);
        }
    }
}

#[test]
fn writers_in_many_processes_and_an_expire_leave_whole_entries() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("shared");
    let writers: Vec<_> = (0..6)
        .map(|_| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args(["profile_cache_cli::writer_process", "--exact"])
                .env("POLYPROF_TEST_CACHE_WRITER", &dir)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Meanwhile the CLI expires (nothing is an hour old), as another process would.
    for _ in 0..5 {
        assert_exit(&cache(&dir, &["expire", "--older-than", "1h"]), 0);
    }
    for writer in writers {
        let out = writer.wait_with_output().unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = cache(&dir, &["list", "--json"]);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing = json(&out);
    assert_eq!(listing["stats"]["entries"], 20);
    assert_eq!(listing["entries"].as_array().unwrap().len(), 20);
}

/// `polyprof run --profile-cache` where the cache cannot key the launches (no profiler with a
/// fingerprint pass): the run goes on as without it and says why; a bad audit share is refused.
#[test]
fn run_with_the_cache_steps_aside_when_it_cannot_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let cache_dir = dir.path().join("cache");
    let ran = polyprof()
        .args(["run", "--profiler", "none"])
        .arg(format!("--profile-cache={}", cache_dir.display()))
        .arg("--output-dir")
        .arg(&out)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_exit(&ran, 0);
    let run: Value = serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    let bypassed = run["profile_cache"]["bypassed"].as_str().unwrap();
    assert!(bypassed.contains("no fingerprint pass"), "{bypassed}");
    assert!(
        run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("profile cache not used"))
    );
    let refused = polyprof()
        .args([
            "run",
            "--profiler",
            "none",
            "--profile-cache",
            "--profile-cache-audit",
            "2",
        ])
        .arg("--output-dir")
        .arg(dir.path().join("refused"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_exit(&refused, 2);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not a share"));
}
