//! The profile cache in a batch: the job file's `profile_cache` keys and the batch's
//! `--profile-cache [DIR]` as `--dry-run` resolves them for each pass, a bad setting refused with
//! its line, and the batch's figures summed from the run directories of a real batch (the runs'
//! cache figures written by the test: the cache itself needs an NVIDIA GPU).

use std::path::Path;

use polyprof::model::batch::BatchIndex;
use polyprof::model::profile_cache::{CacheDisagreement, ProfileCacheSummary};
use polyprof::pipeline::batch::JobSpec;
use polyprof::pipeline::batch::cache_setting::ProfileCacheSetting;
use polyprof::pipeline::batch::cache_summary;
use serde_json::{Value, json};

use crate::support::assert_exit;
use crate::support::batch::{batch, sh_job, write_jobs};
use crate::support::schema;

/// `polyprof batch FILE --dry-run --json [extra]`: each job's passes.
fn dry_run(file: &Path, root: &Path, extra: &[&str]) -> Vec<Value> {
    let out = batch(file, root)
        .args(["--dry-run", "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert!(!root.exists(), "a dry run creates nothing");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The profile cache options of job `id`'s first pass (`Null` without the cache).
fn cache_of(jobs: &[Value], id: &str) -> Value {
    let job = jobs.iter().find(|j| j["id"] == id).unwrap();
    job["passes"][0]
        .get("profile_cache")
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn each_pass_gets_its_jobs_setting_over_the_batchs_flag() {
    let dir = tempfile::tempdir().unwrap();
    let ncu = |id: &str| json!({"id": id, "target": ["./app"], "profiler": "ncu"});
    let mut own_table = ncu("table");
    own_table["profile_cache"] = json!({"dir": "own", "audit_share": 0.2, "per_fingerprint": 2});
    let mut off = ncu("off");
    off["profile_cache"] = json!(false);
    let mut on = ncu("on");
    on["profile_cache"] = json!(true);
    let problem = json!({"problem": {
        "id": "mm", "target": ["./{candidate}"], "candidates": ["c/k1", "c/k2"],
        "stages": ["time", "profile"], "profile_cache": {"audit_share": 0.1}
    }});
    let file = write_jobs(
        dir.path(),
        &[
            ncu("plain"),
            own_table,
            off,
            on,
            sh_job("none", "true"),
            problem,
        ],
    );
    let root = dir.path().join("out");
    let jobs = dry_run(&file, &root, &[]);
    assert_eq!(cache_of(&jobs, "plain"), Value::Null);
    assert_eq!(cache_of(&jobs, "none"), Value::Null);
    let table = cache_of(&jobs, "table");
    assert_eq!(
        (
            &table["dir"],
            &table["audit_share"],
            &table["per_fingerprint"]
        ),
        (&json!("own"), &json!(0.2), &json!(2))
    );
    assert_eq!(cache_of(&jobs, "on")["audit_share"], json!(0.05));
    // A problem's candidates share the problem's scope.
    let k1 = cache_of(&jobs, "mm.k1.profile");
    assert!(
        k1["scope"].as_str().unwrap().starts_with("problem mm;"),
        "{k1}"
    );
    assert_eq!(cache_of(&jobs, "mm.k2.profile")["scope"], k1["scope"]);
    assert_eq!(cache_of(&jobs, "mm.k1.time"), Value::Null);

    // The batch's flag: every profiled job without a setting, into its directory; `true` and a
    // table without `dir` take it too; `false` and a `none` job stay without.
    let jobs = dry_run(&file, &root, &["--profile-cache=shared"]);
    assert_eq!(cache_of(&jobs, "plain")["dir"], json!("shared"));
    assert_eq!(cache_of(&jobs, "on")["dir"], json!("shared"));
    assert_eq!(cache_of(&jobs, "table")["dir"], json!("own"));
    assert_eq!(cache_of(&jobs, "mm.k1.profile")["dir"], json!("shared"));
    assert_eq!(cache_of(&jobs, "off"), Value::Null);
    assert_eq!(cache_of(&jobs, "none"), Value::Null);
    // The flag alone: the default cache (no directory named).
    let jobs = dry_run(&file, &root, &["--profile-cache"]);
    let plain = cache_of(&jobs, "plain");
    assert!(plain.is_object() && plain.get("dir").is_none(), "{plain}");
}

#[test]
fn a_bad_cache_setting_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    for (job, expect) in [
        (
            json!({"id": "a", "target": ["true"], "profile_cache": true}),
            "this job runs no profiler",
        ),
        (
            json!({"id": "a", "target": ["x"], "profiler": "ncu", "profile_cache": {"audit_share": 1.5}}),
            "from 0 to 1",
        ),
        (
            json!({"id": "a", "target": ["x"], "profiler": "ncu", "profile_cache": {"dirr": "x"}}),
            "dirr",
        ),
        (
            json!({"id": "a", "eval": {"reference": "r.py", "candidate": "c.py"}, "profile_cache": true}),
            "`profile_cache` applies to a `target` command",
        ),
    ] {
        let file = write_jobs(dir.path(), &[sh_job("ok", "true"), job]);
        let root = dir.path().join("out");
        let out = batch(&file, &root).output().unwrap();
        assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("jobs.jsonl:2: ") && stderr.contains(expect),
            "{expect}: {stderr}"
        );
        assert!(!root.exists());
    }
}

/// Add `cache` as `profile_cache` to the run document in `dir`.
fn add_cache(dir: &Path, cache: &ProfileCacheSummary) {
    let path = dir.join("run.json");
    let mut run: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    run["profile_cache"] = serde_json::to_value(cache).unwrap();
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
}

#[test]
fn the_batch_sums_the_cache_figures_of_its_finished_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_jobs(
        dir.path(),
        &[
            sh_job("first", "true"),
            sh_job("again", "true"),
            sh_job("broke", "exit 3"),
        ],
    );
    let root = dir.path().join("out");
    let out = batch(&file, &root)
        .args(["--devices", "cpu", "--jobs", "2", "-q"])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    // `none` jobs use no cache: the index says nothing of one.
    let index = BatchIndex::read(&root).unwrap();
    assert!(index.profile_cache.is_none());
    // What a GPU run with the cache writes in run.json: a first run profiles, a second hits.
    let first = ProfileCacheSummary {
        dir: "cache".into(),
        launches: 12,
        fingerprints: 3,
        profiled: 3,
        repeats: 9,
        saved_s: 1.5,
        fingerprint_s: 0.4,
        ..Default::default()
    };
    let again = ProfileCacheSummary {
        profiled: 0,
        hits: 3,
        repeats: 12,
        audited: 1,
        saved_s: 2.0,
        disagreements: vec![CacheDisagreement {
            key: "9f".repeat(32),
            kernel: "saxpy".into(),
            cached_ns: 1000.0,
            measured_ns: 1500.0,
            tolerance: 0.1,
        }],
        ..first.clone()
    };
    add_cache(&root.join("runs/first"), &first);
    add_cache(&root.join("runs/again"), &again);
    add_cache(&root.join("runs/broke"), &first);
    // The jobs as if they had run under ncu with the cache (what the summary reads is the run
    // directories, whatever ran there).
    let specs: Vec<JobSpec> = polyprof::pipeline::batch::load(&file)
        .unwrap()
        .into_iter()
        .map(|s| JobSpec {
            profiler: Some("ncu".into()),
            profile_cache: Some(ProfileCacheSetting::On(true)),
            ..s
        })
        .collect();
    let mut index = index;
    index.profile_cache = cache_summary::summary(&root, &specs, &index, None);
    let cache = index
        .profile_cache
        .clone()
        .expect("the runs used the cache");
    // A failed run profiled too: its figures count (`broke`).
    assert_eq!(
        (cache.runs, cache.fingerprints, cache.profiled, cache.hits),
        (3, 9, 6, 3)
    );
    assert!((cache.hit_rate - 1.0 / 3.0).abs() < 1e-12);
    assert!((cache.saved_s - 5.0).abs() < 1e-9);
    assert_eq!((cache.audited, cache.disagreements), (1, 1));
    assert_eq!(cache.disagreed[0].job, "again");
    // The index with its cache figures is what the committed schema describes.
    let validator = jsonschema::validator_for(&schema::committed("batch.schema.json")).unwrap();
    let errors = schema::errors(&validator, &serde_json::to_value(&index).unwrap());
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn an_array_task_takes_the_batchs_profile_cache_flag() {
    // What a Slurm or Ray task runs: the driver's `--profile-cache=DIR` on its command line.
    let dir = tempfile::tempdir().unwrap();
    let file = write_jobs(dir.path(), &[sh_job("only", "echo ran")]);
    let root = dir.path().join("out");
    let cache = dir.path().join("cache");
    let out = batch(&file, &root)
        .args(["--task-index", "0", "-q"])
        .arg(format!("--profile-cache={}", cache.display()))
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let entry = crate::support::batch::entry(&root, "only");
    assert_eq!(
        entry.state,
        polyprof::model::batch::EntryState::Succeeded,
        "{:?}",
        entry.errors
    );
}

fn script(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

/// The H200 batch's generator (scripts/profile_once_problems.py): the cascade's job file takes
/// the cache on its profile stage; the baseline, run in parts, is every candidate's time and
/// profile stage (no check, no cache) once, split by problem.
#[test]
fn the_generated_profile_once_batch_and_its_baseline_parts_check_out() {
    let dir = tempfile::tempdir().unwrap();
    let generated = dir.path().join("gen");
    let out = std::process::Command::new("python3")
        .arg(script("profile_once_problems.py"))
        .arg(&generated)
        .args([
            "--problems",
            "3",
            "--candidates",
            "6",
            "--baseline-parts",
            "2",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let jobs = |file: &str| dry_run(&generated.join(file), &dir.path().join("dry"), &[]);
    let cascade = jobs("jobs.toml");
    assert_eq!(cascade.len(), 3 * 6 * 4);
    for job in &cascade {
        let id = job["id"].as_str().unwrap();
        let cached = !cache_of(&cascade, id).is_null();
        assert_eq!(cached, id.ends_with(".profile"), "{id}");
    }
    let whole = jobs("jobs-baseline.toml");
    assert_eq!(whole.len(), 3 * 6 * 3);
    assert!(whole.iter().all(|j| {
        let id = j["id"].as_str().unwrap();
        !id.ends_with(".check") && cache_of(&whole, id).is_null()
    }));
    let mut parts: Vec<String> = ["jobs-baseline-1.toml", "jobs-baseline-2.toml"]
        .iter()
        .flat_map(|file| jobs(file))
        .map(|j| j["id"].as_str().unwrap().to_string())
        .collect();
    let mut all: Vec<String> = whole
        .iter()
        .map(|j| j["id"].as_str().unwrap().to_string())
        .collect();
    parts.sort();
    all.sort();
    assert_eq!(parts, all);
}

/// The report (scripts/profile_once_report.py) over the H200 batch's roots, the baseline in two
/// parts: the two figures and the verdicts, as the fixture's report.txt says them.
#[test]
fn the_profile_once_report_sums_the_baseline_parts_of_the_h200_batch() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile-once-h200");
    for root in ["a", "b", "c1", "c2"] {
        std::fs::create_dir_all(dir.path().join(root)).unwrap();
        std::fs::copy(
            fixtures.join(format!("{root}.batch.json")),
            dir.path().join(root).join("batch.json"),
        )
        .unwrap();
    }
    std::fs::create_dir_all(dir.path().join("gen")).unwrap();
    std::fs::copy(
        fixtures.join("manifest.json"),
        dir.path().join("gen/manifest.json"),
    )
    .unwrap();
    let out = std::process::Command::new("python3")
        .arg(script("profile_once_report.py"))
        .arg(dir.path())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let report = String::from_utf8(out.stdout).unwrap();
    for line in [
        "cascade+cache 177.9 s vs ncu every candidate 898.0 s: 0.198x",
        "second run 139.8 s: 0.156x",
        "0.091x of ncu every candidate's 820.1 s",
        "40 candidates failed the check in (a), the same in (b); as generated; far slower ones profiled by the cascade: 0 of 30",
        "kernel time of 130 candidates profiled in (a) and (c): median |a/c - 1| 0.3 %, max 1.6 %",
    ] {
        assert!(report.contains(line), "{line:?} not in\n{report}");
    }
}
