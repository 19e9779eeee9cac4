//! Files that are not what they are named (issue 43, the cases hostile_inputs.rs left open),
//! each through the real binary: another user's symbolic link named `polyprof.toml`; a FIFO
//! or a `/dev/zero` link as the configuration under `run` and as the device table under
//! `report`; a FIFO as a run's `scopes.json`, an eval's `evidence.json`, a batch root's
//! `batch.json` or `entry.json`; FIFOs and folders named like profile cache entries under
//! `expire`; `cache clear` on a folder of empty two-hex-digit folders; a batch job's lock
//! planted as a hard link; job files of each format with a byte-order mark; a 0 ns kernel
//! duration kept by `parse` and refused by `diff` alike.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use polyprof::pipeline::profile_cache::ProfileCache;
use serde_json::Value;

use crate::support::batch::{sh_job, write_jobs};
use crate::support::hostile::{NO_HANG, cache, mkfifo, put, text};
use crate::support::{assert_exit, fixture, polyprof, skip};

/// Set `path`'s modification time `age` ago (a FIFO opened without waiting for a writer).
fn age_by(path: &Path, age: Duration) {
    let times = std::fs::FileTimes::new().set_modified(std::time::SystemTime::now() - age);
    std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .unwrap()
        .set_times(times)
        .unwrap();
}

/// `polyprof ARGS` in `cwd` with only `HOME` (an empty one) and `PATH` from outside.
fn in_dir(cwd: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    polyprof()
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .timeout(NO_HANG)
        .output()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Configuration files

#[test]
fn a_link_named_polyprof_toml_owned_by_another_user_is_skipped() {
    // Only root can give a link away (lchown); as another user the case cannot be made.
    if !nix::unistd::geteuid().is_root() {
        skip(
            "a_link_named_polyprof_toml_owned_by_another_user_is_skipped",
            "lchown to uid 65534 needs root",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    // Your own project file, with a relative output_root...
    let mine = dir.path().join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("polyprof.toml"), "output_root = \"runs\"\n").unwrap();
    // ...reached through another user's link in their folder: the runs would land there.
    let theirs = dir.path().join("theirs");
    std::fs::create_dir_all(&theirs).unwrap();
    let link = theirs.join("polyprof.toml");
    std::os::unix::fs::symlink(mine.join("polyprof.toml"), &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();

    let out = in_dir(&theirs, home.path(), &["config", "--json"]);
    assert_exit(&out, 0);
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        config["output_root"]["source"]["kind"], "default",
        "{config}"
    );
    assert_eq!(config["skipped"][0]["path"], link.to_str().unwrap());
    let why = config["skipped"][0]["why"].as_str().unwrap();
    assert!(why.contains("link") && why.contains("uid 65534"), "{why}");

    let out = in_dir(
        &theirs,
        home.path(),
        &["run", "--profiler", "none", "--", "true"],
    );
    assert_exit(&out, 0);
    assert!(
        !theirs.join("runs").exists(),
        "the run went where the link said"
    );
    assert!(
        text(&out.stderr).contains("passed over"),
        "{}",
        text(&out.stderr)
    );

    // Your own link to the same file is honoured, relative to the link's folder.
    std::os::unix::fs::lchown(&link, Some(0), Some(0)).unwrap();
    let out = in_dir(&theirs, home.path(), &["config", "--json"]);
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        config["output_root"]["value"],
        theirs.join("runs").to_str().unwrap()
    );
}

#[test]
fn a_fifo_or_a_dev_zero_link_named_polyprof_toml_never_hangs_run() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let fifo_dir = dir.path().join("fifo");
    let zero_dir = dir.path().join("zero");
    std::fs::create_dir_all(&fifo_dir).unwrap();
    std::fs::create_dir_all(&zero_dir).unwrap();
    mkfifo(&fifo_dir.join("polyprof.toml"));
    std::os::unix::fs::symlink("/dev/zero", zero_dir.join("polyprof.toml")).unwrap();
    for cwd in [&fifo_dir, &zero_dir] {
        let out = in_dir(
            cwd,
            home.path(),
            &["run", "--profiler", "none", "--", "true"],
        );
        assert_exit(&out, 0);
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("passed over") && stderr.contains("not a regular file"),
            "{stderr}"
        );
        // The run went to the default root: nothing was read from the FIFO or the device.
        assert!(cwd.join("polyprof-runs").is_dir());
    }
}

#[test]
fn a_fifo_or_a_dev_zero_link_as_the_device_table_never_hangs_report() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("gpus.toml");
    mkfifo(&fifo);
    let zero = dir.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let run = fixture("runs/h200-baseline");
    for table in [&fifo, &zero] {
        // Named by the flag, and by a project file of yours.
        let out = in_dir(
            dir.path(),
            home.path(),
            &[
                "report",
                run.to_str().unwrap(),
                "--devices",
                table.to_str().unwrap(),
            ],
        );
        assert_exit(&out, 2);
        let stderr = text(&out.stderr);
        assert!(stderr.contains("not a regular file"), "{stderr}");
        std::fs::write(
            dir.path().join("polyprof.toml"),
            format!(
                "devices = \"{}\"\n",
                table.file_name().unwrap().to_str().unwrap()
            ),
        )
        .unwrap();
        let out = in_dir(dir.path(), home.path(), &["report", run.to_str().unwrap()]);
        assert_exit(&out, 2);
        assert!(text(&out.stderr).contains("not a regular file"));
    }
}

#[test]
fn a_fifo_as_a_runs_scopes_or_an_evals_evidence_never_hangs_report_or_audit() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::copy(fixture("runs/h200-baseline/run.json"), run.join("run.json")).unwrap();
    mkfifo(&run.join("scopes.json"));
    let out = polyprof()
        .arg("report")
        .arg(&run)
        .timeout(NO_HANG)
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(
        text(&out.stderr).contains("FIFO (named pipe), not a regular file"),
        "{}",
        text(&out.stderr)
    );
    let eval = dir.path().join("eval");
    std::fs::create_dir_all(&eval).unwrap();
    mkfifo(&eval.join("evidence.json"));
    let out = polyprof()
        .arg("audit")
        .arg(&eval)
        .timeout(NO_HANG)
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(
        text(&out.stderr).contains("FIFO (named pipe), not a regular file"),
        "{}",
        text(&out.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// A batch root's documents

#[test]
fn a_fifo_as_batch_json_or_entry_json_never_hangs_resume() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_jobs(dir.path(), &[sh_job("j1", "true")]);
    let root = dir.path().join("root");
    let batch = |extra: &[&str]| {
        crate::support::batch::batch(&file, &root)
            .args(["--devices", "cpu", "-q"])
            .args(extra)
            .timeout(NO_HANG)
            .output()
            .unwrap()
    };
    assert_exit(&batch(&[]), 0);
    // A resume reads both; one that cannot be read is rebuilt (the index from the entries,
    // the entry by running its job again), as after a crash: at once, never waited on.
    let index = root.join("batch.json");
    let entry = root.join("runs/j1/entry.json");
    for fifos in [&[&entry][..], &[&index], &[&index, &entry]] {
        for path in fifos {
            std::fs::remove_file(path).unwrap();
            mkfifo(path);
        }
        let out = batch(&["--resume"]);
        assert_exit(&out, 0);
        for path in [&index, &entry] {
            assert!(
                std::fs::symlink_metadata(path).unwrap().is_file(),
                "{fifos:?}"
            );
        }
        assert_eq!(
            crate::support::batch::entry(&root, "j1").state,
            polyprof::model::batch::EntryState::Succeeded
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The profile cache

#[test]
fn expire_leaves_an_old_fifo_or_folder_named_like_an_entry_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = ProfileCache::open(dir.path()).unwrap();
    let old = put(&store, 1, "kernel1", 30.0 * 86_400.0);
    let shard = old.parent().unwrap();
    let named = |digit: &str| {
        shard.join(format!(
            "{}{}.json",
            shard.file_name().unwrap().to_str().unwrap(),
            digit.repeat(62)
        ))
    };
    // Older than the cutoff by their own times: polyprof did not write them all the same.
    let fifo = named("f");
    mkfifo(&fifo);
    age_by(&fifo, Duration::from_secs(30 * 86_400));
    let folder = named("e");
    std::fs::create_dir_all(folder.join("inside")).unwrap();
    age_by(&folder, Duration::from_secs(30 * 86_400));

    let out = cache(dir.path(), &["expire", "--older-than", "7d", "--json"]);
    assert_exit(&out, 0);
    let removed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(removed["removed"], 1, "{removed}");
    assert!(!old.exists());
    assert!(std::fs::symlink_metadata(&fifo).is_ok(), "the FIFO went");
    assert!(folder.join("inside").is_dir(), "the folder went");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("is a FIFO (named pipe), not a profile cache entry")
            && stderr.contains("is a directory, not a profile cache entry"),
        "{stderr}"
    );
    // The writer lock was released: a write goes through at once.
    put(&store, 2, "kernel2", 0.0);
}

#[test]
fn cache_upkeep_never_takes_a_folder_of_empty_two_hex_digit_folders_for_a_cache() {
    let dir = tempfile::tempdir().unwrap();
    let shards: Vec<PathBuf> = ["00", "ab", "ff"]
        .iter()
        .map(|s| dir.path().join(s))
        .collect();
    for shard in &shards {
        std::fs::create_dir(shard).unwrap();
    }
    for args in [&["clear"][..], &["expire", "--older-than", "0"], &["list"]] {
        let out = cache(dir.path(), args);
        assert_exit(&out, 2);
        assert!(
            text(&out.stderr).contains("is not a polyprof profile cache"),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            shards.iter().all(|s| s.is_dir()),
            "{args:?} removed a folder"
        );
        assert!(!dir.path().join("VERSION").exists(), "{args:?} marked it");
    }
    // An empty folder is no cache yet: nothing to remove, and nothing written.
    let empty = tempfile::tempdir().unwrap();
    let out = cache(empty.path(), &["clear", "--json"]);
    assert_exit(&out, 0);
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);
}

// ---------------------------------------------------------------------------------------------
// Locks

#[test]
fn a_batch_jobs_lock_planted_as_a_hard_link_leaves_its_target_alone() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("runs")).unwrap();
    std::fs::hard_link(&victim, root.join("runs/.j1.lock")).unwrap();
    let file = write_jobs(dir.path(), &[sh_job("j1", "true")]);
    let out = crate::support::batch::batch(&file, &root)
        .args(["--devices", "cpu", "-q"])
        .timeout(NO_HANG)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    let shown = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(shown.contains("hard link"), "{shown}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

// ---------------------------------------------------------------------------------------------
// The smaller ones

#[test]
fn job_files_of_each_format_may_start_with_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [
        (
            "jobs.toml",
            "[[job]]\nid = \"j1\"\ntarget = [\"sh\", \"-c\", \"true\"]\n".to_string(),
        ),
        ("jobs.json", format!("{}\n", sh_job("j1", "true"))),
        ("jobs.jsonl", format!("{}\n", sh_job("j1", "true"))),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, format!("\u{feff}{body}")).unwrap();
        let root = dir.path().join(format!("root-{name}"));
        let out = crate::support::batch::batch(&file, &root)
            .args(["--devices", "cpu", "-q"])
            .timeout(NO_HANG)
            .output()
            .unwrap();
        assert_exit(&out, 0);
    }
}

#[test]
fn a_zero_nanosecond_duration_is_kept_by_parse_flagged_and_refused_by_diff_alike() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixture("ncu-h200/raw_page_selected_metrics.stdout");
    let original = std::fs::read_to_string(&source).unwrap();
    let mut lines: Vec<String> = original.lines().map(str::to_string).collect();
    let header_at = lines.iter().position(|l| l.starts_with("\"ID\"")).unwrap();
    let header = crate::support::csv_cells(&lines[header_at], b',');
    let column = header
        .iter()
        .position(|c| c == "gpu__time_duration.sum")
        .unwrap();
    let row = (header_at + 1..lines.len())
        .find(|&i| lines[i].starts_with("\"0\""))
        .unwrap();
    let mut cells = crate::support::csv_cells(&lines[row], b',');
    cells[column] = "0".into();
    lines[row] = cells
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(",");
    let zero = dir.path().join("zero.csv");
    std::fs::write(&zero, lines.join("\n") + "\n").unwrap();

    // The same file unedited, for the count of what a capture holds.
    let whole = dir.path().join("whole");
    let out = polyprof()
        .args(["parse", "--profiler", "ncu"])
        .arg(&source)
        .arg("--run-dir")
        .arg(&whole)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let run = dir.path().join("run");
    let out = polyprof()
        .args(["parse", "--profiler", "ncu"])
        .arg(&zero)
        .arg("--run-dir")
        .arg(&run)
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert!(
        text(&out.stderr).contains("gpu__time_duration.sum of 0 ns"),
        "{}",
        text(&out.stderr)
    );
    // Nothing captured is lost: every launch is in the run, the 0 ns one included, and the
    // run says why it is not a measurement.
    let kernels = |dir: &Path| {
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        doc
    };
    let (kept, all) = (kernels(&run), kernels(&whole));
    assert_eq!(
        kept["kernels"].as_array().unwrap().len(),
        all["kernels"].as_array().unwrap().len()
    );
    assert!(
        kept.to_string().contains("non_positive_duration"),
        "the run does not carry the finding"
    );
    // diff refuses it for the same reason parse named, and takes the unedited run.
    let out = polyprof()
        .arg("diff")
        .arg(&run)
        .arg(&whole)
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(text(&out.stderr).contains("0 ns"), "{}", text(&out.stderr));
    let out = polyprof()
        .arg("diff")
        .arg(&whole)
        .arg(&whole)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
}
