//! Text from outside polyprof, escaped for where it goes (issue 43, part B), through the real
//! binary: terminal escape sequences in a profiler's messages (`parse --run-dir`), a command's
//! name (`run`'s summary), a tool's version line (`doctor`) and a run's label (`report`,
//! `diff`); names that are markup in a page, opened in headless Chromium (and, where Chromium
//! is missing, the page's script elements read as text); and a page of many distinct kernel
//! names that holds a bounded number of drilldown panels (what made it quadratic and 150 MB).
//! hostile_inputs.rs has the other cases of the issue (`<!--<script>`, a crafted `batch.json`,
//! `cache list`, the eval summary).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::hostile::{assert_shown_not_sent, text};
use crate::support::{assert_exit, fixture, polyprof, skip};

/// Clear screen, window title, clipboard write (OSC 52): what outside text may try to send.
const ESCAPES: &str = "evil\x1b[2J\x1b]0;owned\x07\x1b]52;c;aGk=\x07";

#[test]
fn a_profilers_messages_with_escapes_are_shown_by_parse_into_a_run_dir_not_sent() {
    let dir = tempfile::tempdir().unwrap();
    let mut stdout = std::fs::read(fixture("ncu-h200/raw_page.stdout")).unwrap();
    stdout.extend_from_slice(format!("==WARNING== {ESCAPES}\n==ERROR== {ESCAPES}\n").as_bytes());
    let capture = dir.path().join("ncu.stdout");
    std::fs::write(&capture, stdout).unwrap();
    let out = polyprof()
        .args(["parse", "--profiler", "ncu"])
        .arg(&capture)
        .arg("--run-dir")
        .arg(dir.path().join("run"))
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert_shown_not_sent("parse --run-dir stderr", &out.stderr);
    // The run document keeps the message whole (JSON escapes it for programs).
    let run = std::fs::read_to_string(dir.path().join("run/run.json")).unwrap();
    let doc: Value = serde_json::from_str(&run).unwrap();
    assert!(
        doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["message"] == ESCAPES),
        "{run}"
    );
}

#[test]
fn a_commands_name_with_escapes_is_shown_by_runs_summary_not_sent() {
    let dir = tempfile::tempdir().unwrap();
    let out = polyprof()
        .args(["run", "--profiler", "none", "--output-dir"])
        .arg(dir.path().join("run"))
        .arg("--")
        .arg(format!("./{ESCAPES}"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_exit(&out, 127);
    // The summary is on stderr (stdout is the command's).
    assert_shown_not_sent("run stderr", &out.stderr);
    assert!(
        !text(&out.stdout).contains('\x1b'),
        "{:?}",
        text(&out.stdout)
    );
}

#[test]
fn a_tools_version_line_with_escapes_is_shown_by_doctor_not_sent() {
    let bin = tempfile::tempdir().unwrap();
    // Each profiler's program answers its version probe with escape sequences.
    for tool in ["ncu", "nsys", "rocprofv3", "vtune", "unitrace"] {
        let path = bin.path().join(tool);
        std::fs::write(
            &path,
            format!("#!/bin/sh\nprintf '{tool} 1.0 evil\\033[2J\\033]0;owned\\007\\n'\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = std::env::join_paths(
        std::iter::once(bin.path().to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let out = polyprof()
        .arg("doctor")
        .env("PATH", path)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(out.status.code().is_some(), "{out:?}");
    assert_shown_not_sent("doctor stdout", &out.stdout);
    assert!(
        !text(&out.stderr).contains('\x1b'),
        "{:?}",
        text(&out.stderr)
    );
}

/// A run of the `none` profiler labelled `label`, in `dir/folder`.
fn labelled_run(dir: &Path, folder: &str, label: &str) -> PathBuf {
    let run = dir.join(folder);
    let out = polyprof()
        .args([
            "run",
            "--profiler",
            "none",
            "--label",
            label,
            "--output-dir",
        ])
        .arg(&run)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert!(!text(&out.stdout).contains('\x1b') && !text(&out.stderr).contains('\x1b'));
    run
}

#[test]
fn a_label_with_escapes_is_shown_by_report_and_diff_not_sent_and_is_text_in_a_page() {
    let dir = tempfile::tempdir().unwrap();
    let a = labelled_run(dir.path(), "a", ESCAPES);
    let b = labelled_run(dir.path(), "b", "<b>plain</b>");
    let out = polyprof().arg("report").arg(&a).output().unwrap();
    assert_exit(&out, 0);
    assert_shown_not_sent("report", &out.stdout);
    let out = polyprof().arg("diff").arg(&a).arg(&b).output().unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    assert_shown_not_sent("diff", &out.stdout);
    let page = dir.path().join("b.html");
    let out = polyprof()
        .arg("report")
        .arg(&b)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("<b>plain"),
        "the label reached the page as markup"
    );
    assert!(html.contains("&lt;b&gt;plain&lt;/b&gt;"));
}

/// The H200 capture, its four kernels renamed `names` (short and full names alike).
fn run_named(dir: &Path, names: &[&str]) -> PathBuf {
    let text = std::fs::read_to_string(fixture("runs/h200-baseline/run.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let mut renamed = std::collections::BTreeMap::new();
    for kernel in doc["kernels"].as_array_mut().unwrap() {
        let old = kernel["short_name"].as_str().unwrap().to_string();
        let next = renamed.len() % names.len();
        let name = *renamed.entry(old).or_insert(names[next]);
        kernel["short_name"] = Value::from(name);
        kernel["name"] = Value::from(format!("{name}(float *)"));
    }
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("run.json"), doc.to_string()).unwrap();
    run
}

/// Names that end, stall or break a page's script if they reach it raw.
const MARKUP_NAMES: [&str; 4] = [
    "<!--<script>",
    "</script><script>document.body.dataset.owned=1</script>",
    "k\u{2028}\u{2029}'\"`${x}",
    "<img src=x onerror=\"document.body.dataset.owned=1\">",
];

fn page_of_markup_names(dir: &Path) -> String {
    let run = run_named(dir, &MARKUP_NAMES);
    let page = dir.join("page.html");
    let out = polyprof()
        .arg("report")
        .arg(&run)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    page.display().to_string()
}

#[test]
fn names_that_are_markup_are_text_in_every_script_element_of_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let html = std::fs::read_to_string(page_of_markup_names(dir.path())).unwrap();
    // Every script element's content, as the HTML parser would end it: no `<` of a name
    // inside (its JSON writes `\u003c`), so no name can end it or start a comment in it.
    let mut scripts = 0;
    for part in html.split("<script").skip(1) {
        let content = &part[part.find('>').unwrap() + 1..part.find("</script>").unwrap()];
        scripts += 1;
        for name in MARKUP_NAMES {
            assert!(!content.contains(name), "a name reached a script raw");
        }
        if part.starts_with(" type=\"application/json\"") {
            assert!(!content.contains('<'), "`<` in the page's JSON");
            assert!(!content.contains('\u{2028}'), "U+2028 in the page's JSON");
        }
    }
    // The page's script and the timeline's JSON.
    assert!(scripts >= 2, "{scripts} script elements");
    for name in MARKUP_NAMES {
        assert!(!html.contains(name), "{name:?} reached the page raw");
    }
}

#[test]
fn names_that_are_markup_leave_the_pages_script_running_in_chromium() {
    let Ok(chromium) = which::which("chromium").or_else(|_| which::which("chromium-browser"))
    else {
        skip(
            "names_that_are_markup_leave_the_pages_script_running_in_chromium",
            "headless Chromium is not installed",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = page_of_markup_names(dir.path());
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
        .arg(format!("file://{page}"))
        .output()
        .unwrap();
    let dom = text(&loaded.stdout);
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script did not run"
    );
    assert!(!dom.contains("data-owned"), "a name ran as script");
    assert!(dom.contains("<pre id=\"errors\" data-count=\"0\"></pre>"));
    assert!(dom.contains("data-slices=\"4\""), "no timeline");
}

/// The H200 capture's launches repeated as `names` distinct kernels, each launch's duration
/// times `scale`, in `dir/folder`.
fn many_names(dir: &Path, folder: &str, names: usize, scale: f64) -> PathBuf {
    let text = std::fs::read_to_string(fixture("runs/h200-baseline/run.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let kernels = doc["kernels"].as_array().unwrap().clone();
    let many: Vec<Value> = (0..names)
        .map(|i| {
            let mut k = kernels[i % kernels.len()].clone();
            k["launch_id"] = Value::from(i);
            k["short_name"] = Value::from(format!("kernel_{i}"));
            k["name"] = Value::from(format!("kernel_{i}(float *, int)"));
            if let Some(ns) = k["duration_ns"].as_f64() {
                k["duration_ns"] = Value::from(ns * scale);
            }
            k
        })
        .collect();
    doc["kernels"] = Value::from(many);
    let run = dir.join(folder);
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("run.json"), doc.to_string()).unwrap();
    run
}

#[test]
fn a_page_of_many_distinct_names_holds_a_bounded_number_of_panels() {
    // 3,000 distinct names: more than the table (1,000 rows) and the chart (1,000 points)
    // show. Each had a drilldown panel, searched for among every launch: the page was
    // quadratic in names and 150 MB at 100k.
    const NAMES: usize = 3000;
    let dir = tempfile::tempdir().unwrap();
    let run = many_names(dir.path(), "run", NAMES, 1.0);
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
    let panels = html.matches("class=\"kernel-detail\"").count();
    assert!(
        (1000..=2000).contains(&panels),
        "{panels} drilldown panels for {NAMES} names"
    );
    // Every launch stays on the timeline (its JSON names each).
    for i in 0..NAMES {
        assert!(
            html.contains(&format!("\"kernel_{i}\"")),
            "kernel_{i} left out"
        );
    }
    // The table's rows each open a panel: the first row's name has one.
    let first = html
        .split("<tr data-short=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    assert!(
        html.contains(&format!(
            "class=\"kernel-detail\" id=\"kernel-0\" data-short=\"{first}\""
        )),
        "{first}"
    );
}

#[test]
fn a_diff_of_many_distinct_names_names_only_its_largest_moves() {
    // Every kernel of both runs moved: each move's name was placed apart from all others
    // placed before it, in time growing faster than the square of their number.
    let dir = tempfile::tempdir().unwrap();
    let a = many_names(dir.path(), "a", 1500, 1.0);
    let b = many_names(dir.path(), "b", 1500, 2.0);
    let page = dir.path().join("diff.html");
    let out = polyprof()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    let moves = html.matches("class=\"moved\"").count();
    let labels = html.matches("class=\"moved-label\"").count();
    assert!(moves >= 100, "{moves} moves drawn");
    assert!((1..=24).contains(&labels), "{labels} move labels");
}
