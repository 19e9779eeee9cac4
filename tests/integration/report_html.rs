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

use crate::support::browser::{Browser, chromium_binary};
use crate::support::{assert_exit, fixture, polyprof};

/// The page as the browser built it, and what the browser logged.
struct Loaded {
    dom: String,
    console: Vec<String>,
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
    let rows = Regex::new(r#"<tr data-change="([a-z ]+)"><td class="name">(.*?)</td>"#).unwrap();
    // A name's words may sit in `<span class="nw">` (kept on one line).
    let tags = Regex::new(r"<[^>]*>").unwrap();
    let changes: BTreeMap<String, String> = rows
        .captures_iter(&loaded.dom)
        .map(|c| (unescape(&tags.replace_all(&c[2], "")), c[1].to_string()))
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
    large_run_with(dir, launches, None)
}

/// The short kernel of [`large_run_with`]: 5 µs, one launch among thousands.
const NEEDLE: &str = "needle_kernel";

/// [`large_run`], with launch `needle` (when given) a distinct kernel named [`NEEDLE`] that ran
/// 5 µs (the capture's `vector_add` record renamed and shortened).
fn large_run_with(dir: &Path, launches: usize, needle: Option<usize>) -> PathBuf {
    let text = std::fs::read_to_string(fixture("runs/h200-baseline/run.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let kernels = doc["kernels"].as_array().unwrap().clone();
    let many: Vec<Value> = (0..launches)
        .map(|i| {
            let mut k = kernels[i % kernels.len()].clone();
            k["launch_id"] = Value::from(i);
            if needle == Some(i) {
                k["name"] = Value::from(format!("{NEEDLE}(float *, int)"));
                k["short_name"] = Value::from(NEEDLE);
                k["duration_ns"] = Value::from(5_000.0);
            }
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

/// A real capture parsed into a run directory `dir/name`.
fn parsed(dir: &Path, name: &str, capture: &str) -> PathBuf {
    let run = dir.join(name);
    let out = polyprof()
        .args(["parse", "--profiler", "ncu"])
        .arg(fixture(capture))
        .arg("--run-dir")
        .arg(&run)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    run
}

/// One roofline chart of a page: its figure's attributes and caption, its roofs and points.
struct Chart {
    device: String,
    precision: String,
    caption: String,
    bandwidth: f64,
    roofs: Vec<BTreeMap<String, String>>,
    points: Vec<BTreeMap<String, String>>,
}

/// Every `<figure class="roofline-chart">` of a page's DOM.
fn charts(dom: &str) -> Vec<Chart> {
    let roof_re = Regex::new(r#"<g class="roof" [^>]*>"#).unwrap();
    let bandwidth_re = Regex::new(r#"data-bandwidth-gbs="([0-9.e+-]+)""#).unwrap();
    let caption_re = Regex::new(r#"<figcaption>(.*?)</figcaption>"#).unwrap();
    dom.split("<figure class=\"roofline-chart\"")
        .skip(1)
        .map(|part| {
            let html = &part[..part.find("</figure>").unwrap()];
            let head = attributes(&html[..html.find('>').unwrap()]);
            Chart {
                device: head["data-device"].clone(),
                precision: head["data-precision"].clone(),
                caption: unescape(&caption_re.captures(html).unwrap()[1]),
                bandwidth: bandwidth_re.captures(html).unwrap()[1].parse().unwrap(),
                roofs: roof_re
                    .find_iter(html)
                    .map(|m| attributes(m.as_str()))
                    .collect(),
                points: points(html),
            }
        })
        .collect()
}

/// Per kernel name of `report --format json`: FLOPs by precision id (counts above zero, FP16
/// without its HFMA2.MMA moves), DRAM bytes and GPU time, added up over its launches.
type Work = BTreeMap<String, (BTreeMap<String, f64>, f64, f64)>;

fn work_by_name(run: &Path) -> Work {
    let out = polyprof()
        .args(["report", "--format", "json"])
        .arg(run)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut work = Work::new();
    for kernel in doc["kernels"].as_array().unwrap() {
        let entry = work
            .entry(kernel["short_name"].as_str().unwrap().to_string())
            .or_default();
        let flops = kernel["flops"].as_object().unwrap();
        let moves = flops
            .get("fp16_hfma2_mma")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        for (precision, count) in flops {
            let count = match precision.as_str() {
                "fp16_hfma2_mma" => continue,
                "fp16" => count.as_f64().unwrap() - moves,
                _ => count.as_f64().unwrap(),
            };
            if count > 0.0 {
                *entry.0.entry(precision.clone()).or_default() += count;
            }
        }
        let bytes = kernel["dram_bytes"].as_f64().unwrap_or_else(|| {
            kernel["dram_bytes_read"].as_f64().unwrap_or(0.0)
                + kernel["dram_bytes_write"].as_f64().unwrap_or(0.0)
        });
        entry.1 += bytes;
        entry.2 += kernel["duration_ns"].as_f64().unwrap();
    }
    work
}

fn close(a: f64, b: f64) -> bool {
    (a / b - 1.0).abs() < 1e-9
}

/// Each chart holds exactly the kernels with FLOPs of its precision, each placed by those FLOPs
/// over its bytes and time, under its one roof; there is one chart per precision present.
fn assert_charts_match(charts: &[Chart], work: &Work) {
    let present: std::collections::BTreeSet<&String> = work
        .values()
        .flat_map(|(flops, _, _)| flops.keys())
        .collect();
    let drawn: std::collections::BTreeSet<&String> = charts.iter().map(|c| &c.precision).collect();
    assert_eq!(drawn, present, "one chart per precision present");
    for chart in charts {
        assert_eq!(
            chart.roofs.len(),
            1,
            "{}: one compute roof",
            chart.precision
        );
        let roof = &chart.roofs[0];
        let label = chart.precision.replace('_', " ");
        assert!(roof["data-label"].starts_with(&label), "{roof:?}");
        let top = number(roof, "data-gflops");
        let expected: Vec<(&String, f64, f64)> = work
            .iter()
            .filter_map(|(name, (flops, bytes, time))| {
                let count = flops.get(&chart.precision)?;
                (*bytes > 0.0).then(|| (name, count / bytes, count / time))
            })
            .collect();
        assert_eq!(
            chart.points.len(),
            expected.len(),
            "{}: {:?}",
            chart.precision,
            chart.points
        );
        for (name, ai, gflops) in expected {
            let point = chart
                .points
                .iter()
                .find(|p| &p["data-short"] == name)
                .unwrap_or_else(|| panic!("{}: no point for {name}", chart.precision));
            assert_eq!(point["data-precision"], chart.precision);
            assert!(close(number(point, "data-ai"), ai), "{name}: {point:?}");
            assert!(
                close(number(point, "data-gflops"), gflops),
                "{name}: {point:?}"
            );
            let ceiling = (chart.bandwidth * ai).min(top);
            assert!(
                gflops <= ceiling,
                "{name} above {ceiling} in {}",
                chart.precision
            );
        }
    }
}

#[test]
fn a_fp8_capture_gets_a_chart_per_precision_placed_by_that_precisions_flops() {
    // Real FP8 matmul on the H200 with unlocked clocks (tests/fixtures/ncu-h200-fp8/README.md):
    // its 1.1 T FP8 tensor FLOPs and the 4.3 G FP32 FADDs of its epilogue.
    let dir = tempfile::tempdir().unwrap();
    let run = parsed(dir.path(), "fp8", "ncu-h200-fp8/fp8_clock_none.csv");
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
    let charts = charts(&loaded.dom);
    let work = work_by_name(&run);
    assert_charts_match(&charts, &work);
    assert!(charts.iter().all(|c| c.device == "H200"));
    let chart = |id: &str| charts.iter().find(|c| c.precision == id).unwrap();
    let (fp8, fp32) = (chart("tensor_fp8"), chart("fp32"));
    let matmul = |chart: &Chart| {
        chart
            .points
            .iter()
            .find(|p| p["data-short"].starts_with("nvjet"))
            .cloned()
            .unwrap()
    };
    let (in_fp8, in_fp32) = (matmul(fp8), matmul(fp32));
    // One kernel in both charts: FP8-bound and compute-bound, above the FP32 roof in its FP8
    // chart; its epilogue hundreds of times lower in the FP32 one.
    assert_eq!(in_fp8["data-bound"], "compute");
    assert!(number(&in_fp8, "data-gflops") > number(&fp32.roofs[0], "data-gflops"));
    assert!(number(&in_fp8, "data-gflops") > 200.0 * number(&in_fp32, "data-gflops"));
    assert!(number(&in_fp8, "data-share") > 0.99);
    // Each roof at the clock its own kernels had: the matmul's 1.48 GHz for FP8.
    assert!(
        fp8.caption
            .contains("Compute roof at the SM clock the run had, 1.48 GHz"),
        "{}",
        fp8.caption
    );
    let fp8_roof = number(&fp8.roofs[0], "data-gflops");
    assert!(
        (fp8_roof / (1979e3 * 1.479 / 1.83) - 1.0).abs() < 0.01,
        "{fp8_roof}"
    );
    eprintln!(
        "fp8 page: {} charts: {:?}",
        charts.len(),
        charts.iter().map(|c| &c.precision).collect::<Vec<_>>()
    );
}

#[test]
fn the_tensor_capture_has_a_chart_per_matmul_precision_and_says_why_nothing_is_placed() {
    // Three real cuBLAS matmuls, bf16, fp16 and tf32, captured without DRAM bytes
    // (tests/fixtures/ncu-h200-tensor/README.md).
    let dir = tempfile::tempdir().unwrap();
    let run = parsed(dir.path(), "tensor", "ncu-h200-tensor/mm_tensor.csv");
    let page = write(
        dir.path(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "html",
            "t.html",
        ],
    );
    let loaded = open(dir.path(), &page);
    assert_clean(&loaded);
    let charts = charts(&loaded.dom);
    // No empty chart: each precision says why it has no point instead.
    assert!(charts.is_empty(), "empty charts drawn");
    assert!(!loaded.dom.contains("<svg class=\"roofline\""));
    for (id, kernel) in [
        ("tensor_bf16", "nvjet_sm90_tst"),
        ("tensor_fp16", "nvjet_sm90_hsh"),
        ("tensor_tf32", "sm90_xmma_gemm_f32f32_tf32f32"),
    ] {
        let start = loaded
            .dom
            .find(&format!(
                "class=\"roofline-chart empty\" data-device=\"H200\" data-precision=\"{id}\""
            ))
            .unwrap_or_else(|| panic!("no note for {id}"));
        let figure = &loaded.dom[start..];
        let note = unescape(&figure[..figure.find("</figure>").unwrap()]);
        assert!(note.contains("no point, because"), "{note}");
        assert!(note.contains("no DRAM bytes"), "{note}");
        assert!(note.contains(kernel), "{id}: {note}");
    }
}

#[test]
fn a_run_on_two_gpus_gets_a_chart_per_gpu() {
    // The H200 capture with its last two launches moved to a second GPU.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("runs/h200-baseline/run.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    for kernel in &mut doc["kernels"].as_array_mut().unwrap()[2..] {
        kernel["device"] = Value::from("1");
    }
    let run = dir.path().join("two");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("run.json"), doc.to_string()).unwrap();
    let page = write(
        dir.path(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "html",
            "two.html",
        ],
    );
    let loaded = open(dir.path(), &page);
    assert_clean(&loaded);
    let charts = charts(&loaded.dom);
    let kernels: Vec<&str> = doc["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["short_name"].as_str().unwrap())
        .collect();
    let found: Vec<(String, String, Vec<String>)> = charts
        .iter()
        .map(|c| {
            let names = c.points.iter().map(|p| p["data-short"].clone()).collect();
            (c.device.clone(), c.precision.clone(), names)
        })
        .collect();
    let names = |range: std::ops::Range<usize>| {
        let mut names: Vec<String> = kernels[range].iter().map(|n| n.to_string()).collect();
        names.sort();
        names
    };
    let mut found = found;
    for entry in &mut found {
        entry.2.sort();
    }
    assert_eq!(
        found,
        [
            ("H200 · GPU 0".to_string(), "fp32".to_string(), names(0..2)),
            ("H200 · GPU 1".to_string(), "fp32".to_string(), names(2..4)),
        ]
    );
}

#[test]
fn the_svg_of_several_precisions_stacks_one_panel_per_precision() {
    let dir = tempfile::tempdir().unwrap();
    let run = parsed(dir.path(), "fp8", "ncu-h200-fp8/fp8_clock_none.csv");
    let svg = write(
        dir.path(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "svg",
            "fp8.svg",
        ],
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg "), "{}", &text[..80]);
    let loaded = open(dir.path(), &svg);
    assert!(loaded.console.is_empty(), "{:?}", loaded.console);
    let panel_re = Regex::new(r#"<svg [^>]*class="roofline"[^>]*>"#).unwrap();
    let panels: Vec<BTreeMap<String, String>> = panel_re
        .find_iter(&loaded.dom)
        .map(|m| attributes(m.as_str()))
        .collect();
    let work = work_by_name(&run);
    let present: std::collections::BTreeSet<&String> = work
        .values()
        .flat_map(|(flops, _, _)| flops.keys())
        .collect();
    assert_eq!(panels.len(), present.len(), "{panels:?}");
    // One under the other, each with the points of its precision.
    for (index, panel) in panels.iter().enumerate() {
        assert_eq!(number(panel, "y"), 560.0 * index as f64);
        assert!(present.contains(&panel["data-precision"]));
    }
    let points = points(&loaded.dom);
    let expected: usize = work
        .values()
        .map(|(flops, bytes, _)| if *bytes > 0.0 { flops.len() } else { 0 })
        .sum();
    assert_eq!(points.len(), expected);
}

/// The GPU timeline's slices in view as the page lists them: (name, x, width in px).
fn in_view(browser: &mut Browser) -> Vec<(String, f64, f64)> {
    let list = browser.eval(
        "[...document.querySelector('.timeline').querySelectorAll('.in-view li')]\
         .map(li=>[li.textContent,+li.dataset.x,+li.dataset.w])",
    );
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v[0].as_str().unwrap().to_string(),
                v[1].as_f64().unwrap(),
                v[2].as_f64().unwrap(),
            )
        })
        .collect()
}

fn needle_in_view(browser: &mut Browser) -> Option<(f64, f64)> {
    in_view(browser)
        .into_iter()
        .find(|(name, _, _)| name == NEEDLE)
        .map(|(_, x, w)| (x, w))
}

#[test]
fn the_timeline_zooms_in_chromium_to_one_five_microsecond_kernel_among_ten_thousand() {
    let dir = tempfile::tempdir().unwrap();
    let run = large_run_with(dir.path(), 10_000, Some(6_001));
    let page = write(
        dir.path(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "html",
            "needle.html",
        ],
    );
    let mut browser = Browser::open(&page, 1200, 900);
    let gpu = "document.querySelector('.timeline')";
    assert_eq!(browser.eval(&format!("{gpu}.dataset.slices")), "10000");
    // Where the kernel is, from the page's own data: its lane, start and duration (µs).
    let (lane, start, duration) = {
        let v = browser.eval(&format!(
            "(()=>{{const d=JSON.parse({gpu}.querySelector('script').textContent);\
             const i=d.names.indexOf('{NEEDLE}');const s=d.slices;\
             for(let k=0;k<s.length/4;k++)if(s[4*k+3]===i)return [s[4*k],s[4*k+1],s[4*k+2]];}})()"
        ));
        (
            v[0].as_f64().unwrap(),
            v[1].as_f64().unwrap(),
            v[2].as_f64().unwrap(),
        )
    };
    assert_eq!(duration, 5.0);
    // Zoomed out, 10,000 launches over about 2 s: the 5 µs kernel is far below a pixel.
    assert!(needle_in_view(&mut browser).is_none());
    let (_, canvas_y) = browser.centre(".timeline canvas");
    let rect = browser.eval(
        "(()=>{const r=document.querySelector('.timeline canvas').getBoundingClientRect();\
         return [r.left,r.top,r.width];})()",
    );
    let (left, top, width) = (
        rect[0].as_f64().unwrap(),
        rect[1].as_f64().unwrap(),
        rect[2].as_f64().unwrap(),
    );
    assert!(canvas_y > top);
    let y = top + 18.0 * lane + 9.0;
    let at = |browser: &mut Browser, t: f64| {
        let t0: f64 = browser
            .eval(&format!("+{gpu}.dataset.t0"))
            .as_f64()
            .unwrap();
        let t1: f64 = browser
            .eval(&format!("+{gpu}.dataset.t1"))
            .as_f64()
            .unwrap();
        left + 220.0 + (t - t0) / (t1 - t0) * (width - 220.0)
    };
    // Wheel up over the kernel until it is drawn a few pixels wide, as a person would.
    let mut notches = 0;
    let found = loop {
        if let Some((x, w)) = needle_in_view(&mut browser).filter(|(_, w)| *w >= 6.0) {
            break (x, w);
        }
        assert!(notches < 60, "not visible after {notches} wheel notches");
        let x = at(&mut browser, start + duration / 2.0);
        browser.wheel(x, y, -100.0);
        notches += 1;
    };
    assert!(notches > 10, "visible after only {notches} notches");
    let (x, w) = found;
    assert!(x >= 220.0 && x + w <= width, "{x} {w}");
    // Its neighbours are in view too: the kernel sits in the timeline, not alone.
    assert!(
        in_view(&mut browser).len() >= 3,
        "{:?}",
        in_view(&mut browser)
    );
    // Hovering it names it with its times.
    browser.hover(left + x + w / 2.0, y);
    let tip = browser.eval("document.querySelector('.tip').textContent");
    let tip = tip.as_str().unwrap();
    assert!(
        tip.starts_with(NEEDLE) && tip.contains("duration 5.000 µs"),
        "{tip}"
    );
    browser.screenshot(&dir.path().join("needle-wheel.png"));

    // Dragging pans: the kernel moves with the mouse.
    browser.call(
        "Input.dispatchMouseEvent",
        serde_json::json!({"type": "mousePressed", "x": left + x, "y": y, "button": "left", "clickCount": 1}),
    );
    browser.call(
        "Input.dispatchMouseEvent",
        serde_json::json!({"type": "mouseMoved", "x": left + x + 100.0, "y": y, "button": "left", "buttons": 1}),
    );
    browser.call(
        "Input.dispatchMouseEvent",
        serde_json::json!({"type": "mouseReleased", "x": left + x + 100.0, "y": y, "button": "left", "clickCount": 1}),
    );
    let (panned, _) = needle_in_view(&mut browser).unwrap();
    assert!((panned - x - 100.0).abs() < 1.0, "{x} → {panned}");

    // The ⤢ button shows everything again; find zooms straight to the kernel.
    browser.click_on(".timeline button.all");
    assert!(needle_in_view(&mut browser).is_none());
    assert_eq!(browser.eval(&format!("+{gpu}.dataset.t0")), 0.0);
    browser.click_on(".timeline input");
    browser.type_and_enter("needle");
    assert_eq!(
        browser.eval(&format!("{gpu}.dataset.found")),
        Value::from(NEEDLE)
    );
    let (_, found_w) = needle_in_view(&mut browser).expect("find did not bring it into view");
    assert!(found_w >= 40.0, "{found_w} px");
    // − halves its width.
    browser.click_on(".timeline button.out");
    let (_, out_w) = needle_in_view(&mut browser).unwrap();
    assert!(
        (out_w * 2.0 / found_w - 1.0).abs() < 0.02,
        "{found_w} → {out_w}"
    );
    browser.screenshot(&dir.path().join("needle-find.png"));
    let errors = browser.eval("document.getElementById('errors').dataset.count");
    assert_eq!(errors, "0");
    assert!(browser.console.is_empty(), "{:?}", browser.console);
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
