//! HTML and SVG reports opened in a real browser: headless Chromium (Debian's `chromium`,
//! installed by .ci/run) loads each page from disk, its DOM after the page's script ran is read
//! back (`--dump-dom`), its console must stay silent, and a screenshot is saved in the test's
//! temporary directory. The roofline's points are checked against the run's kernels: names,
//! figures, and pixel coordinates that lie on one log-log mapping.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;
use serde_json::Value;

use crate::support::{assert_exit, fixture, polyprof};

/// The page as the browser built it, and what the browser logged.
struct Loaded {
    dom: String,
    console: Vec<String>,
}

fn chromium_binary() -> PathBuf {
    which::which("chromium")
        .or_else(|_| which::which("chromium-browser"))
        .expect("headless Chromium is needed: apt-get install chromium (.ci/run installs it)")
}

fn chromium(dir: &Path, page: &Path, extra: &[&str]) -> std::process::Output {
    let profile = tempfile::tempdir_in(dir).unwrap();
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let output = Command::new(chromium_binary())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--user-data-dir={}", profile.path().display()),
        ])
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    assert!(output.status.success(), "chromium failed: {output:?}");
    output
}

/// Load `page`, return its DOM and console lines, and save a screenshot beside it.
fn open(dir: &Path, page: &Path) -> Loaded {
    let output = chromium(dir, page, &["--dump-dom"]);
    let console = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    let shot = page.with_extension("png");
    chromium(
        dir,
        page,
        &[
            "--window-size=1200,1400",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{shot:?}"
    );
    Loaded {
        dom: String::from_utf8_lossy(&output.stdout).into_owned(),
        console,
    }
}

/// Loaded without a console message, the script ran to its end and recorded no error.
fn assert_clean(loaded: &Loaded) {
    assert!(loaded.console.is_empty(), "console: {:?}", loaded.console);
    assert!(
        loaded.dom.contains("data-ready=\"1\""),
        "the page's script did not finish"
    );
    assert!(
        loaded
            .dom
            .contains("<pre id=\"errors\" data-count=\"0\"></pre>"),
        "script errors recorded in the page"
    );
}

/// Nothing in the file reaches for the network or another file.
fn assert_self_contained(html: &str) {
    for needle in ["<link", " src=", "url(", "@import", "https://", "fetch("] {
        assert!(!html.contains(needle), "the page holds `{needle}`");
    }
}

fn attributes(tag: &str) -> BTreeMap<String, String> {
    let re = Regex::new(r#"([a-z-]+)="([^"]*)""#).unwrap();
    re.captures_iter(tag)
        .map(|c| (c[1].to_string(), unescape(&c[2])))
        .collect()
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Every roofline point of the DOM, as its attributes.
fn points(dom: &str) -> Vec<BTreeMap<String, String>> {
    let re = Regex::new(r#"<circle class="point"[^>]*>"#).unwrap();
    re.find_iter(dom).map(|m| attributes(m.as_str())).collect()
}

fn number(point: &BTreeMap<String, String>, key: &str) -> f64 {
    point[key].parse().unwrap()
}

/// The pixel coordinate is one linear function of log10(value) for every point (within the
/// pixel rounding plotters does).
fn assert_log_mapping(points: &[BTreeMap<String, String>], value: &str, pixel: &str) {
    let mut pairs: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (number(p, value).log10(), number(p, pixel)))
        .collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (first, last) = (pairs[0], pairs[pairs.len() - 1]);
    assert!(
        last.0 - first.0 > 1.0,
        "points too close to check: {pairs:?}"
    );
    let slope = (last.1 - first.1) / (last.0 - first.0);
    for (log, px) in &pairs {
        let expected = first.1 + slope * (log - first.0);
        assert!(
            (px - expected).abs() <= 1.5,
            "{value} {log} at {px}, expected {expected}"
        );
    }
}

fn write(dir: &Path, args: &[&str]) -> PathBuf {
    let out = dir.join(args[args.len() - 1]);
    let mut cmd = polyprof();
    cmd.args(&args[..args.len() - 1]).arg("-o").arg(&out);
    let status = cmd.output().unwrap();
    assert_exit(&status, 0);
    out
}

/// Per launch of the fixture: (full name, GFLOP/s, FLOP/byte) from `report --format json`.
fn json_figures(run: &Path) -> Vec<(String, f64, f64)> {
    let out = polyprof()
        .args(["report", "--format", "json"])
        .arg(run)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().to_string(),
                k["roofline"]["gflops_per_s"].as_f64().unwrap(),
                k["roofline"]["arithmetic_intensity"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_h200_capture_page_shows_each_kernel_where_its_figures_put_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = fixture("runs/h200-baseline");
    let page = write(
        dir.path(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "html",
            "run.html",
        ],
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let loaded = open(dir.path(), &page);
    assert_clean(&loaded);
    let points = points(&loaded.dom);
    let expected = json_figures(&run);
    assert_eq!(points.len(), expected.len(), "one point per kernel name");
    for (name, gflops, ai) in &expected {
        let point = points
            .iter()
            .find(|p| &p["data-name"] == name)
            .unwrap_or_else(|| panic!("no point for {name}"));
        assert!((number(point, "data-gflops") / gflops - 1.0).abs() < 1e-9);
        assert!((number(point, "data-ai") / ai - 1.0).abs() < 1e-9);
    }
    assert_log_mapping(&points, "data-ai", "cx");
    // y grows upwards: more GFLOP/s, smaller cy.
    assert_log_mapping(&points, "data-gflops", "cy");
    let memory = points.iter().find(|p| p["data-bound"] == "memory").unwrap();
    assert!(memory["data-name"].starts_with("vector_add"), "{memory:?}");
    // The GPU timeline drew the four kernels on one stream's lane.
    assert!(
        loaded
            .dom
            .contains("class=\"timeline\" data-slices=\"4\" data-lanes=\"1\""),
        "timeline not drawn"
    );
    // The table holds every full name and sorts by a click (the script is there to do it).
    for (name, _, _) in &expected {
        assert!(html.contains(&escape(name)), "{name}");
    }
    assert!(html.contains("<table class=\"sortable kernels\">"));
    eprintln!("run page: {} bytes", html.len());
}

pub(crate) fn escape(text: &str) -> String {
    polyprof::results::export::roofline_chart::escape(text)
}

#[test]
fn the_svg_roofline_opens_alone_with_the_same_points() {
    let dir = tempfile::tempdir().unwrap();
    let run = fixture("runs/h200-baseline");
    let svg = write(
        dir.path(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "svg",
            "roofline.svg",
        ],
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<svg") || text.starts_with("<?xml"),
        "{}",
        &text[..80]
    );
    let loaded = open(dir.path(), &svg);
    assert!(loaded.console.is_empty(), "{:?}", loaded.console);
    let points = points(&loaded.dom);
    assert_eq!(points.len(), 4);
    assert_log_mapping(&points, "data-ai", "cx");
}

#[test]
fn a_run_without_peaks_has_no_svg_roofline_and_says_how_to_get_one() {
    let dir = tempfile::tempdir().unwrap();
    // A rocprofv3 parse with no device the table knows.
    let out = polyprof()
        .args(["report", "--format", "svg"])
        .arg(fixture("runs/v1-parsed"))
        .arg("-o")
        .arg(dir.path().join("r.svg"))
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--device NAME"));
    assert!(!dir.path().join("r.svg").exists());
}

#[test]
fn the_diff_page_gives_the_verdict_and_overlays_both_rooflines() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("diff.html");
    let out = polyprof()
        .arg("diff")
        .arg(fixture("runs/h200-baseline"))
        .arg(fixture("runs/h200-regressed"))
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let loaded = open(dir.path(), &page);
    assert_clean(&loaded);
    assert!(loaded.dom.contains("data-regressed=\"true\""));
    let rows = Regex::new(r#"<tr data-change="([a-z ]+)"><td class="name">([^<]*)</td>"#).unwrap();
    let changes: BTreeMap<String, String> = rows
        .captures_iter(&loaded.dom)
        .map(|c| (unescape(&c[2]), c[1].to_string()))
        .collect();
    assert_eq!(changes.len(), 4, "{changes:?}");
    for (name, change) in &changes {
        let expected = if name.contains("matmul_tiled") {
            "regressed"
        } else {
            "unchanged"
        };
        assert_eq!(change, expected, "{name}");
    }
    let points = points(&loaded.dom);
    let a: Vec<_> = points.iter().filter(|p| p["data-series"] == "A").collect();
    let b: Vec<_> = points.iter().filter(|p| p["data-series"] == "B").collect();
    assert_eq!((a.len(), b.len()), (4, 4));
    // The slower tile kernel sits lower in B (same FLOPs and bytes, more time).
    let tiled = |side: &[&BTreeMap<String, String>]| {
        let p = side
            .iter()
            .find(|p| p["data-name"].contains("matmul_tiled"))
            .unwrap();
        (number(p, "data-gflops"), number(p, "cy"))
    };
    let (ga, ya) = tiled(&a);
    let (gb, yb) = tiled(&b);
    assert!(gb < ga && yb > ya, "A {ga} at {ya}, B {gb} at {yb}");
}

/// A run of `launches` launches: the H200 capture's four kernels repeated, as
/// scripts/bench-ncu-parse.sh repeats its rows (launch ids renumbered).
pub fn large_run(dir: &Path, launches: usize) -> PathBuf {
    let text = std::fs::read_to_string(fixture("runs/h200-baseline/run.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let kernels = doc["kernels"].as_array().unwrap().clone();
    let many: Vec<Value> = (0..launches)
        .map(|i| {
            let mut k = kernels[i % kernels.len()].clone();
            k["launch_id"] = Value::from(i);
            k
        })
        .collect();
    doc["kernels"] = Value::from(many);
    let run_dir = dir.join("large");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(run_dir.join("run.json"), doc.to_string()).unwrap();
    run_dir
}

#[test]
fn a_ten_thousand_launch_run_stays_small_and_draws_every_launch() {
    let dir = tempfile::tempdir().unwrap();
    let run = large_run(dir.path(), 10_000);
    let page = write(
        dir.path(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "html",
            "large.html",
        ],
    );
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size < 5_000_000, "{size} bytes");
    let loaded = open(dir.path(), &page);
    assert_clean(&loaded);
    // Aggregated by name: four points; every launch on the timeline.
    assert_eq!(points(&loaded.dom).len(), 4);
    assert!(loaded.dom.contains("data-slices=\"10000\""), "timeline");
}

#[test]
fn the_batch_page_lists_every_job_failed_first_and_links_their_reports() {
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<Value> = (1..=20)
        .map(|i| {
            let script = if i % 7 == 0 { "exit 3" } else { "true" };
            crate::support::batch::sh_job(&format!("j{i:02}"), script)
        })
        .collect();
    let file = crate::support::batch::write_jobs(dir.path(), &jobs);
    let root = dir.path().join("root");
    let out = crate::support::batch::batch(&file, &root)
        .args(["--devices", "cpu", "--jobs", "2", "-q"])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let page = root.join("index.html");
    let out = polyprof()
        .arg("report")
        .arg(&root)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let loaded = open(dir.path(), &page);
    assert_clean(&loaded);
    let rows = Regex::new(r#"<tr data-job="([^"]+)" data-state="([a-z_]+)">"#).unwrap();
    let order: Vec<(String, String)> = rows
        .captures_iter(&loaded.dom)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect();
    assert_eq!(order.len(), 20);
    assert_eq!(order[0], ("j07".to_string(), "failed".to_string()));
    assert_eq!(order[1], ("j14".to_string(), "failed".to_string()));
    assert!(order[2..].iter().all(|(_, s)| s == "succeeded"));
    // Each link leads to a page that exists and opens cleanly.
    let links = Regex::new(r#"<a href="([^"]+)">"#).unwrap();
    let hrefs: Vec<String> = links
        .captures_iter(&html)
        .map(|c| c[1].to_string())
        .collect();
    assert_eq!(hrefs.len(), 20, "{hrefs:?}");
    for href in &hrefs {
        assert!(root.join(href).is_file(), "{href}");
    }
    let job = open(dir.path(), &root.join(&hrefs[0]));
    assert_clean(&job);
    assert!(job.dom.contains("exited with code 3"));
}

#[test]
fn a_batch_root_reports_only_as_html() {
    let dir = tempfile::tempdir().unwrap();
    let file = crate::support::batch::write_jobs(
        dir.path(),
        &[crate::support::batch::sh_job("one", "true")],
    );
    let root = dir.path().join("root");
    let out = crate::support::batch::batch(&file, &root)
        .args(["--devices", "cpu", "-q"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let out = polyprof().arg("report").arg(&root).output().unwrap();
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--format html"));
}

#[test]
fn a_tensor_capture_gets_a_roof_per_precision_at_the_clock_it_ran() {
    // Real FP8 matmul on the H200 with unlocked clocks (tests/fixtures/ncu-h200-fp8/README.md).
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("fp8");
    let out = polyprof()
        .args(["parse", "--profiler", "ncu"])
        .arg(fixture("ncu-h200-fp8/fp8_clock_none.csv"))
        .arg("--run-dir")
        .arg(&run)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let page = write(
        dir.path(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "html",
            "fp8.html",
        ],
    );
    let loaded = open(dir.path(), &page);
    assert_clean(&loaded);
    assert!(
        loaded
            .dom
            .contains("Compute roofs at the SM clock the run had, 1.95 GHz"),
        "clock not stated"
    );
    let roof_re = Regex::new(r#"<g class="roof" [^>]*>"#).unwrap();
    let roofs: Vec<_> = roof_re
        .find_iter(&loaded.dom)
        .map(|m| attributes(m.as_str()))
        .collect();
    let labels: Vec<&str> = roofs.iter().map(|r| r["data-label"].as_str()).collect();
    assert!(labels[0].starts_with("fp32 "), "{labels:?}");
    assert!(
        labels.iter().any(|l| l.starts_with("tensor fp8 ")),
        "{labels:?}"
    );
    let bandwidth: f64 = Regex::new(r#"data-bandwidth-gbs="([0-9.e+-]+)""#)
        .unwrap()
        .captures(&loaded.dom)
        .unwrap()[1]
        .parse()
        .unwrap();
    let top = roofs
        .iter()
        .map(|r| number(r, "data-gflops"))
        .fold(0.0, f64::max);
    let points = points(&loaded.dom);
    assert_eq!(points.len(), 3);
    for point in &points {
        let ceiling = (bandwidth * number(point, "data-ai")).min(top);
        assert!(
            number(point, "data-gflops") <= ceiling,
            "{point:?} above {ceiling}"
        );
    }
    // The FP8 matmul is compute-bound under the FP8 roof, far above the FP32 one.
    let matmul = points
        .iter()
        .max_by(|a, b| number(a, "data-gflops").total_cmp(&number(b, "data-gflops")))
        .unwrap();
    assert_eq!(matmul["data-bound"], "compute");
    assert!(number(matmul, "data-gflops") > number(&roofs[0], "data-gflops"));
}

#[test]
fn the_eval_batch_page_puts_the_failed_candidate_first_and_shows_speedups() {
    let Some(python) = crate::support::eval::python_with_numpy() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let problem = crate::support::eval::problem;
    let eval_job = |id: &str, candidate: PathBuf| {
        serde_json::json!({
            "id": id,
            "timeout_s": 60,
            "eval": {
                "reference": problem("reference.py"),
                "candidate": candidate,
                "device": "cpu",
                "trials": 3,
                "timing_blocks": 2,
                "repeat": 3,
                "python": python,
            }
        })
    };
    let honest = dir.path().join("honest.py");
    std::fs::copy(problem("honest.py"), &honest).unwrap();
    let file = crate::support::batch::write_jobs(
        dir.path(),
        &[
            eval_job("honest", honest),
            eval_job("inplace", problem("inplace.py")),
            eval_job("raises", problem("raises.py")),
        ],
    );
    let root = dir.path().join("root");
    let out = crate::support::batch::batch(&file, &root)
        .args(["--devices", "cpu", "--jobs", "2", "-q"])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let page = root.join("index.html");
    let out = polyprof()
        .arg("report")
        .arg(&root)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let loaded = open(dir.path(), &page);
    assert_clean(&loaded);
    let rows = Regex::new(r#"<tr data-job="([^"]+)""#).unwrap();
    let order: Vec<String> = rows
        .captures_iter(&loaded.dom)
        .map(|c| c[1].to_string())
        .collect();
    assert_eq!(order, ["raises", "inplace", "honest"]);
    let honest_row = &loaded.dom[loaded.dom.find("data-job=\"honest\"").unwrap()..];
    let honest_row = &honest_row[..honest_row.find("</tr>").unwrap()];
    assert!(honest_row.contains("succeeded (passed)"), "{honest_row}");
    assert!(
        Regex::new(r"\d+\.\d\d× \[").unwrap().is_match(honest_row),
        "{honest_row}"
    );
    assert!(
        honest_row.contains("href=\"runs/honest/verdict.json\""),
        "{honest_row}"
    );
    assert!(loaded.dom.contains("not passed"));
}
