//! Hostile inputs outside the eval (issue 43), each through the real binary: another user's
//! `polyprof.toml`, a FIFO or `/dev/zero` named like one; a kernel named `<!--<script>` in a
//! page opened in headless Chromium; a crafted `batch.json`; terminal escape sequences in
//! names, cache entries and a candidate's exception; lock files planted as hard links; FIFOs in
//! the profile cache; a 1 MB name in `cache list`; a job file with a byte-order mark; an
//! `sbatch` that prints garbage; a 0 ns kernel duration.

use std::path::{Path, PathBuf};
use std::process::Command;

use polyprof::pipeline::profile_cache::ProfileCache;
use serde_json::Value;

use crate::support::batch::{sh_job, write_jobs};
use crate::support::hostile::{NO_HANG, assert_shown_not_sent, cache, mkfifo, put, text};
use crate::support::{assert_exit, fixture, polyprof, skip};

/// Clear screen, window title, clipboard write (OSC 52), and a C1 CSI: what a name may send.
const ESCAPES: &str = "evil\x1b[2J\x1b]0;owned\x07\x1b]52;c;aGk=\x07\u{9b}31m";

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

// ---------------------------------------------------------------------------------------------
// Configuration files

fn config_in(cwd: &Path, home: &Path, json: bool) -> std::process::Output {
    let mut command = polyprof();
    command
        .arg("config")
        .current_dir(cwd)
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .timeout(NO_HANG);
    if json {
        command.arg("--json");
    }
    command.output().unwrap()
}

#[test]
fn a_project_file_owned_by_another_user_is_skipped_and_named() {
    // Running as root, "yours" is uid 0 and a file of uid 65534 is another user's; a user
    // other than root cannot give a file away, so the case needs root.
    if !is_root() {
        skip(
            "a_project_file_owned_by_another_user_is_skipped_and_named",
            "chown to uid 65534 needs root",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let project = dir.path().join(polyprof::pipeline::config::PROJECT_FILE);
    std::fs::write(
        &project,
        "output_root = \"/tmp/theirs\"\nenv_policy = \"inherit\"\ncache_dir = \"/tmp/theirs\"\n",
    )
    .unwrap();
    std::os::unix::fs::chown(&project, Some(65534), Some(65534)).unwrap();
    let sub = dir.path().join("a/b");
    std::fs::create_dir_all(&sub).unwrap();

    let out = config_in(&sub, home.path(), true);
    assert_exit(&out, 0);
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(config["output_root"]["value"], "polyprof-runs", "{config}");
    assert_eq!(config["output_root"]["source"]["kind"], "default");
    assert_eq!(config["cache_dir"]["source"]["kind"], "default");
    assert_eq!(config["skipped"][0]["path"], project.to_str().unwrap());
    let why = config["skipped"][0]["why"].as_str().unwrap();
    assert!(why.contains("uid 65534"), "{why}");
    assert!(
        text(&out.stderr).contains("passed over"),
        "{}",
        text(&out.stderr)
    );

    let out = config_in(&sub, home.path(), false);
    assert_exit(&out, 0);
    let shown = text(&out.stdout);
    assert!(
        shown.contains(&format!("skipped {}", project.display())) && shown.contains("uid 65534"),
        "{shown}"
    );

    // Given to root, the same file is honoured.
    std::os::unix::fs::chown(&project, Some(0), Some(0)).unwrap();
    let config: Value = serde_json::from_slice(&config_in(&sub, home.path(), true).stdout).unwrap();
    assert_eq!(config["output_root"]["value"], "/tmp/theirs");
}

#[test]
fn a_fifo_or_a_dev_zero_link_named_polyprof_toml_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let fifo_dir = dir.path().join("fifo");
    let zero_dir = dir.path().join("zero");
    std::fs::create_dir_all(&fifo_dir).unwrap();
    std::fs::create_dir_all(&zero_dir).unwrap();
    mkfifo(&fifo_dir.join("polyprof.toml"));
    std::os::unix::fs::symlink("/dev/zero", zero_dir.join("polyprof.toml")).unwrap();
    for cwd in [&fifo_dir, &zero_dir] {
        let out = config_in(cwd, home.path(), false);
        assert_exit(&out, 0);
        assert!(
            text(&out.stdout).contains("not a regular file"),
            "{}",
            text(&out.stdout)
        );
        // `report` reads the configuration too (its device table): it must not hang either.
        let out = polyprof()
            .args(["report"])
            .arg(fixture("runs/h200-baseline"))
            .current_dir(cwd)
            .env("HOME", home.path())
            .timeout(NO_HANG)
            .output()
            .unwrap();
        assert_exit(&out, 0);
    }
}

#[test]
fn an_empty_output_root_is_refused_by_config() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("polyprof.toml"), "output_root = \"\"\n").unwrap();
    let out = config_in(dir.path(), home.path(), false);
    assert_exit(&out, 2);
    assert!(
        text(&out.stderr).contains("output_root is empty"),
        "{}",
        text(&out.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// Pages

/// The H200 capture with its first kernel renamed `name`.
fn run_named(dir: &Path, folder: &str, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(fixture("runs/h200-baseline/run.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let old = doc["kernels"][0]["short_name"]
        .as_str()
        .unwrap()
        .to_string();
    for kernel in doc["kernels"].as_array_mut().unwrap() {
        if kernel["short_name"] == old.as_str() {
            kernel["short_name"] = Value::from(name);
            kernel["name"] = Value::from(format!("{name}(float *)"));
        }
    }
    let run = dir.join(folder);
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("run.json"), doc.to_string()).unwrap();
    run
}

#[test]
fn a_kernel_named_like_a_comment_and_a_script_leaves_the_pages_script_running() {
    let Ok(chromium) = which::which("chromium").or_else(|_| which::which("chromium-browser"))
    else {
        skip(
            "a_kernel_named_like_a_comment_and_a_script_leaves_the_pages_script_running",
            "headless Chromium is not installed",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = run_named(dir.path(), "run", "<!--<script>");
    let page = dir.path().join("page.html");
    let out = polyprof()
        .arg("report")
        .arg(&run)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("<!--<script>"),
        "the name reached the page raw"
    );
    let profile = tempfile::tempdir().unwrap();
    let loaded = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--dump-dom",
            &format!("--user-data-dir={}", profile.path().display()),
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = text(&loaded.stdout);
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script did not run"
    );
    assert!(dom.contains("<pre id=\"errors\" data-count=\"0\"></pre>"));
    // The timeline was drawn, with the name as its text.
    assert!(dom.contains("data-slices=\"4\""), "no timeline");
}

/// A real batch of one CPU job, in `dir/root`.
fn batch_root(dir: &Path) -> PathBuf {
    let file = write_jobs(dir, &[sh_job("j1", "true")]);
    let root = dir.join("root");
    let out = crate::support::batch::batch(&file, &root)
        .args(["--devices", "cpu", "-q"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    root
}

#[test]
fn a_crafted_batch_index_cannot_write_outside_its_root_or_link_a_script() {
    let dir = tempfile::tempdir().unwrap();
    let root = batch_root(dir.path());
    // Another run beside the root, whose report.html the crafted index aims at.
    let victim = dir.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::copy(
        fixture("runs/h200-baseline/run.json"),
        victim.join("run.json"),
    )
    .unwrap();
    std::fs::write(victim.join("report.html"), "precious").unwrap();
    let index_path = root.join("batch.json");
    let original: Value =
        serde_json::from_str(&std::fs::read_to_string(&index_path).unwrap()).unwrap();
    for pass in [
        "../victim".to_string(),
        victim.display().to_string(),
        "javascript:alert(1)//../../victim".to_string(),
    ] {
        let mut index = original.clone();
        index["jobs"]["j1"]["passes"] = Value::from(vec![pass.clone()]);
        std::fs::write(&index_path, index.to_string()).unwrap();
        let out = polyprof()
            .arg("report")
            .arg(&root)
            .args(["--format", "html", "-o"])
            .arg(root.join("index.html"))
            .output()
            .unwrap();
        assert_exit(&out, 2);
        assert!(
            text(&out.stderr).contains("leaves its root"),
            "{pass}: {}",
            text(&out.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(victim.join("report.html")).unwrap(),
            "precious"
        );
    }
    // The honest index: its page, written elsewhere, links each report by a relative path.
    std::fs::write(&index_path, original.to_string()).unwrap();
    let page = dir.path().join("pages/index.html");
    std::fs::create_dir_all(page.parent().unwrap()).unwrap();
    let out = polyprof()
        .arg("report")
        .arg(&root)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let html = std::fs::read_to_string(&page).unwrap();
    let hrefs: Vec<&str> = html
        .split("href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert!(!hrefs.is_empty(), "no links: {html}");
    for href in hrefs {
        assert!(
            !href.contains(':') && !href.starts_with('/'),
            "not a relative link: {href}"
        );
        assert!(page.parent().unwrap().join(href).exists(), "{href}");
    }
}

// ---------------------------------------------------------------------------------------------
// Terminals

#[test]
fn escape_sequences_in_names_are_shown_by_report_and_diff_not_sent() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_named(dir.path(), "a", ESCAPES);
    let b = run_named(dir.path(), "b", ESCAPES);
    let out = polyprof().arg("report").arg(&a).output().unwrap();
    assert_exit(&out, 0);
    assert_shown_not_sent("report", &out.stdout);
    let out = polyprof().arg("diff").arg(&a).arg(&b).output().unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    assert_shown_not_sent("diff", &out.stdout);
}

#[test]
fn a_candidates_exception_with_escape_sequences_is_shown_by_the_eval_summary_not_sent() {
    let dir = tempfile::tempdir().unwrap();
    let text_in = std::fs::read_to_string(fixture("eval/crashed/evidence.json")).unwrap();
    let mut evidence: Value = serde_json::from_str(&text_in).unwrap();
    evidence["failure"]["message"] = Value::from(format!("RuntimeError: {ESCAPES}"));
    std::fs::write(dir.path().join("evidence.json"), evidence.to_string()).unwrap();
    let out = polyprof().arg("audit").arg(dir.path()).output().unwrap();
    assert_exit(&out, 1);
    assert_shown_not_sent("audit's summary", &out.stdout);
}

// ---------------------------------------------------------------------------------------------
// The profile cache

#[test]
fn fifos_in_the_cache_never_hang_list_or_expire() {
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("profiles");
    let store = ProfileCache::open(&cache_dir).unwrap();
    let good = put(&store, 1, "kernel1", 0.0);
    put(&store, 2, "kernel2", 30.0 * 86_400.0);
    // Named like an entry of the good one's shard.
    let shard = good.parent().unwrap();
    let fifo = shard.join(format!(
        "{}{}.json",
        shard.file_name().unwrap().to_str().unwrap(),
        "f".repeat(62)
    ));
    mkfifo(&fifo);
    let out = cache(&cache_dir, &["list"]);
    assert_exit(&out, 0);
    assert!(
        text(&out.stdout).contains("kernel1"),
        "{}",
        text(&out.stdout)
    );
    let out = cache(&cache_dir, &["expire", "--older-than", "7d", "--json"]);
    assert_exit(&out, 0);
    let removed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(removed["removed"].as_u64().unwrap() >= 1, "{removed}");
    // The writer lock was released: a write goes through at once.
    put(&store, 3, "kernel3", 0.0);

    // A FIFO as the layout marker is an error at once.
    std::fs::remove_file(cache_dir.join("VERSION")).unwrap();
    mkfifo(&cache_dir.join("VERSION"));
    let out = cache(&cache_dir, &["list"]);
    assert_exit(&out, 2);
    assert!(
        text(&out.stderr).contains("not a regular file"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn clear_removes_only_the_entries_polyprof_wrote() {
    // A folder of two-hex-digit folders is not a cache: nothing there is touched.
    let dir = tempfile::tempdir().unwrap();
    let store_like = dir.path().join("objects");
    std::fs::create_dir_all(store_like.join("ab")).unwrap();
    let theirs = store_like
        .join("ab")
        .join(format!("ab{}.json", "0".repeat(62)));
    std::fs::write(&theirs, "{\"mine\": true}").unwrap();
    let out = cache(&store_like, &["clear"]);
    assert_exit(&out, 2);
    assert!(theirs.exists());

    // In a cache, a file named like an entry that is not one stays.
    let cache_dir = dir.path().join("profiles");
    let store = ProfileCache::open(&cache_dir).unwrap();
    let entry = put(&store, 1, "kernel1", 0.0);
    let shard = entry.parent().unwrap();
    let stranger = shard.join(format!(
        "{}{}.json",
        shard.file_name().unwrap().to_str().unwrap(),
        "1".repeat(62)
    ));
    std::fs::write(&stranger, "precious").unwrap();
    let out = cache(&cache_dir, &["clear", "--json"]);
    assert_exit(&out, 0);
    assert!(!entry.exists());
    assert_eq!(std::fs::read_to_string(&stranger).unwrap(), "precious");
}

#[test]
fn cache_list_shows_escapes_and_clips_a_one_megabyte_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = ProfileCache::open(dir.path()).unwrap();
    put(&store, 1, ESCAPES, 0.0);
    let long = "k".repeat(1 << 20);
    put(&store, 2, &long, 0.0);
    let out = cache(dir.path(), &["list"]);
    assert_exit(&out, 0);
    assert_shown_not_sent("cache list", &out.stdout);
    let longest = text(&out.stdout).lines().map(str::len).max().unwrap();
    assert!(longest < 4096, "a line of {longest} bytes");
    // The JSON keeps the whole name.
    let out = cache(dir.path(), &["list", "--json"]);
    assert_exit(&out, 0);
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let kernels: Vec<&str> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kernel"].as_str().unwrap())
        .collect();
    assert!(kernels.contains(&long.as_str()) && kernels.contains(&ESCAPES));
}

// ---------------------------------------------------------------------------------------------
// Locks

#[test]
fn lock_files_planted_as_hard_links_are_refused_and_their_targets_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();

    // The batch root's lock.
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::hard_link(&victim, root.join(".polyprof-batch.lock")).unwrap();
    let file = write_jobs(dir.path(), &[sh_job("j1", "true")]);
    let out = crate::support::batch::batch(&file, &root)
        .args(["--devices", "cpu", "-q"])
        .timeout(NO_HANG)
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(
        text(&out.stderr).contains("hard link"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

    // The profile cache's writer lock.
    let cache_dir = dir.path().join("profiles");
    ProfileCache::open(&cache_dir).unwrap();
    std::fs::hard_link(&victim, cache_dir.join(".polyprof-cache.lock")).unwrap();
    let out = cache(&cache_dir, &["clear"]);
    assert_exit(&out, 2);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

    // A run directory's lock.
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::hard_link(&victim, run_dir.join(".polyprof-run.lock")).unwrap();
    let out = polyprof()
        .args(["run", "--profiler", "none", "--output-dir"])
        .arg(&run_dir)
        .args(["--", "true"])
        .timeout(NO_HANG)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

// ---------------------------------------------------------------------------------------------
// The smaller ones

#[test]
fn a_job_file_with_a_byte_order_mark_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jobs.jsonl");
    std::fs::write(&file, format!("\u{feff}{}\n", sh_job("j1", "true"))).unwrap();
    let root = dir.path().join("root");
    let out = crate::support::batch::batch(&file, &root)
        .args(["--devices", "cpu", "-q"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
}

#[test]
fn sbatch_printing_garbage_and_exiting_0_is_an_error_that_shows_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.path().join("calls.log");
    for (name, body) in [
        (
            "sbatch",
            "echo 'Welcome to the cluster! Submitted nothing'; exit 0",
        ),
        ("squeue", "exit 1"),
        ("sacct", "exit 1"),
        ("scontrol", "exit 1"),
        ("scancel", "exit 0"),
    ] {
        crate::support::slurm::fake_command(&bin, &log, name, body);
    }
    let file = write_jobs(dir.path(), &[sh_job("j1", "true")]);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin];
    dirs.extend(std::env::split_paths(&path));
    let out = polyprof()
        .args(["batch", file.to_str().unwrap(), "--output-dir"])
        .arg(dir.path().join("root"))
        .args(["--slurm", "--poll", "0.1"])
        .env("PATH", std::env::join_paths(dirs).unwrap())
        .timeout(NO_HANG)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no job id") && stderr.contains("Welcome to the cluster!"),
        "{stderr}"
    );
}

#[test]
fn a_zero_nanosecond_duration_is_an_error_at_parse_as_diff_refuses_it() {
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
    // The first data row (after the header and its units row) gets a 0 ns duration.
    let row = lines
        .iter()
        .enumerate()
        .skip(header_at + 1)
        .find(|(_, l)| l.starts_with("\"0\""))
        .map(|(i, _)| i)
        .unwrap();
    let mut cells = crate::support::csv_cells(&lines[row], b',');
    cells[column] = "0".into();
    lines[row] = cells
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(",");
    let file = dir.path().join("zero.csv");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();

    let out = polyprof()
        .args(["parse", "--profiler", "ncu"])
        .arg(&file)
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert!(
        text(&out.stderr).contains("gpu__time_duration.sum of 0 ns"),
        "{}",
        text(&out.stderr)
    );
    let run = dir.path().join("run");
    let out = polyprof()
        .args(["parse", "--profiler", "ncu"])
        .arg(&file)
        .arg("--run-dir")
        .arg(&run)
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let out = polyprof().arg("diff").arg(&run).arg(&run).output().unwrap();
    assert_exit(&out, 2);
}
