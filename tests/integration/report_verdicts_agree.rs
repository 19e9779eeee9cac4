//! Every real capture of the repository (the shared fixtures are the same files): the bound,
//! the figure that decided it and the roofline point agree in JSON, CSV, table and page, and
//! ncu's rule results are in the table and the page wherever ncu gave them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::Value;

use crate::support::{assert_exit, fixture, polyprof};

/// (name, profiler, files or a run directory, device for the peaks when the capture names none).
fn captures() -> Vec<(
    &'static str,
    &'static str,
    Vec<PathBuf>,
    Option<&'static str>,
)> {
    let f = |p: &str| fixture(p);
    vec![
        ("h200-baseline", "run", vec![f("runs/h200-baseline")], None),
        (
            "h200-regressed",
            "run",
            vec![f("runs/h200-regressed")],
            None,
        ),
        (
            "ncu-detailed",
            "ncu",
            vec![f("ncu-h200/set_detailed_log.csv")],
            Some("H200"),
        ),
        (
            "ncu-pytest",
            "ncu",
            vec![f("ncu-h200/pytest_log_file.csv")],
            Some("H200"),
        ),
        (
            "ncu-raw",
            "ncu",
            vec![f("ncu-h200/raw_page_selected_metrics.stdout")],
            Some("H200"),
        ),
        (
            "ncu-details",
            "ncu",
            vec![f("ncu-h200/details_page.stdout")],
            Some("H200"),
        ),
        (
            "ncu-tensor",
            "ncu",
            vec![f("ncu-h200-tensor/mm_tensor.csv")],
            Some("H200"),
        ),
        (
            "ncu-fp8",
            "ncu",
            vec![f("ncu-h200-fp8/fp8_clock_base.csv")],
            Some("H200"),
        ),
        (
            "ncu-fp8-none",
            "ncu",
            vec![f("ncu-h200-fp8/fp8_clock_none.csv")],
            Some("H200"),
        ),
        (
            "ncu-pipes-app",
            "ncu",
            vec![f("ncu-h200-pipes/values_app.csv")],
            Some("H200"),
        ),
        (
            "ncu-pipes-mix",
            "ncu",
            vec![f("ncu-h200-pipes/values_mix.csv")],
            Some("H200"),
        ),
        (
            "ncu-nvtx",
            "ncu",
            vec![f("ncu-h200-nvtx/nvtx_shapes.log")],
            Some("H200"),
        ),
        (
            "unitrace-gemm",
            "unitrace",
            vec![
                f("unitrace/gemm_fp16_flops.1799853"),
                f("unitrace/gemm_fp16_bytes.1799860"),
            ],
            Some("PVC Max 1100"),
        ),
        (
            "rocprofv3",
            "rocprofv3",
            vec![f("rocprofv3/kernel_trace.csv")],
            Some("MI300X"),
        ),
    ]
}

/// The run directory of a capture (parsed into `dir` unless it is one).
fn run_dir(dir: &Path, name: &str, profiler: &str, files: &[PathBuf]) -> PathBuf {
    if profiler == "run" {
        return files[0].clone();
    }
    let run = dir.join(name);
    let out = polyprof()
        .args([
            "parse",
            "--all-metrics",
            "--profiler",
            profiler,
            "--run-dir",
        ])
        .arg(&run)
        .args(files)
        .output()
        .unwrap();
    assert!(
        run.join("run.json").exists(),
        "{name}: parse wrote no run.json: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    run
}

fn report(run: &Path, device: Option<&str>, format: &str) -> String {
    let mut command = polyprof();
    command.args(["report", "--wide", "--format", format]);
    if let Some(device) = device {
        command.args(["--device", device]);
    }
    let out = command.arg(run).env("COLUMNS", "400").output().unwrap();
    assert_exit(&out, 0);
    String::from_utf8(out.stdout).unwrap()
}

fn figure_text(figures: &Value) -> String {
    figures
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let label = match f["kind"].as_str().unwrap() {
                "flops" => {
                    let p = f["precision"].as_str().unwrap_or("");
                    match p.strip_prefix("tensor_") {
                        Some(t) => format!("tensor {t}"),
                        None => format!("FLOP {p}"),
                    }
                }
                "sm" => "SM".into(),
                "pipe" => match f["pipe"].as_str().unwrap() {
                    "tensor_pipe" => "tensor pipe".into(),
                    "fma_pipe" => "FMA pipe".into(),
                    "alu_pipe" => "ALU pipe".into(),
                    "lsu_pipe" => "LSU pipe".into(),
                    "issue" => "issue".into(),
                    _ => "SM".into(),
                },
                "dram" => "DRAM".into(),
                "memory_sol" => "L1/L2".into(),
                "l2" => "L2".into(),
                "l1" => "L1".into(),
                other => panic!("unknown figure {other}"),
            };
            format!("{label} {:.0} %", f["pct"].as_f64().unwrap())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The bound agrees with its figures: memory by a memory level, compute by a compute figure,
/// latency with every figure below 20 %; a figure from FLOPs or DRAM bytes is that share.
fn check_kernel(capture: &str, kernel: &Value) -> Option<String> {
    let roofline = &kernel["roofline"];
    let bound = roofline["bound"].as_str().unwrap();
    let figures = roofline["decided_by"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let name = kernel["short_name"].as_str().unwrap_or_default();
    if bound == "unknown" {
        assert!(figures.is_empty(), "{capture} {name}: unknown with figures");
        return None;
    }
    assert!(
        !figures.is_empty(),
        "{capture} {name}: {bound} without a figure"
    );
    let kind = |f: &Value| f["kind"].as_str().unwrap().to_string();
    let memory = |f: &Value| ["dram", "memory_sol", "l2", "l1"].contains(&kind(f).as_str());
    let pct = |f: &Value| f["pct"].as_f64().unwrap();
    match bound {
        "memory" => assert!(
            memory(&figures[0]) && pct(&figures[0]) >= 20.0,
            "{capture} {name}"
        ),
        "compute" => {
            assert!(
                !memory(&figures[0]) && pct(&figures[0]) >= 20.0,
                "{capture} {name}"
            )
        }
        "latency" => assert!(figures.iter().all(|f| pct(f) < 20.0), "{capture} {name}"),
        other => panic!("{other}"),
    }
    let share = |key: &str| roofline[key].as_f64();
    if kind(&figures[0]) == "flops" {
        assert_eq!(
            share("pct_peak_compute"),
            Some(pct(&figures[0])),
            "{capture} {name}"
        );
    }
    let inputs: Vec<&str> = roofline["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if kind(&figures[0]) == "dram" && !inputs.iter().any(|i| i.ends_with("throughput_pct")) {
        assert_eq!(
            share("pct_peak_bandwidth"),
            Some(pct(&figures[0])),
            "{capture} {name}"
        );
    }
    // The side of the ridge: a kernel judged on its FLOPs and DRAM bytes is compute-bound
    // exactly when its FLOP share is the larger (its FLOP/byte right of the ridge).
    if let (Some(c), Some(m)) = (share("pct_peak_compute"), share("pct_peak_bandwidth")) {
        let first = kind(&figures[0]);
        if bound == "compute" && (first == "sm" || first == "flops") {
            assert!(c >= m, "{capture} {name}: compute left of the ridge");
        }
        if bound == "memory" && first == "dram" && inputs.contains(&"flops") {
            assert!(m >= c, "{capture} {name}: memory right of the ridge");
        }
    }
    Some(figure_text(
        roofline.get("decided_by").unwrap_or(&Value::Null),
    ))
}

fn attributes(tag: &str) -> BTreeMap<String, String> {
    let re = Regex::new(r#"([a-z-]+)="([^"]*)""#).unwrap();
    re.captures_iter(tag)
        .map(|c| {
            (
                c[1].to_string(),
                c[2].replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&quot;", "\"")
                    .replace("&#39;", "'")
                    .replace("&amp;", "&"),
            )
        })
        .collect()
}

#[test]
fn bound_deciding_figure_and_point_agree_on_every_real_capture() {
    let row_re = Regex::new(r#"<tr data-short="[^"]*"><td class="name">"#).unwrap();
    let bound_re = Regex::new(r#"<td class="bound" data-bound="([a-z]+)""#).unwrap();
    let figure_re = Regex::new(r#"(?s)<figure class="roofline-chart[^"]*".*?</figure>"#).unwrap();
    let point_re = Regex::new(r#"<circle class="point"[^>]*>"#).unwrap();
    let roof_re = Regex::new(r#"<g class="roof" [^>]*>"#).unwrap();
    let bandwidth_re = Regex::new(r#"data-bandwidth-gbs="([^"]+)""#).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut judged = 0;
    let mut with_rules = 0;
    for (name, profiler, files, device) in captures() {
        let run = run_dir(dir.path(), name, profiler, &files);
        let json: Value = serde_json::from_str(&report(&run, device, "json")).unwrap();
        let kernels = json["kernels"].as_array().unwrap();
        assert!(!kernels.is_empty(), "{name}: no kernels");

        // JSON: each launch's bound and its figure; CSV: the same figure, row by row.
        let csv = report(&run, device, "csv");
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let header = reader.headers().unwrap().clone();
        let column = |n: &str| header.iter().position(|h| h == n).unwrap();
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        for (kernel, row) in kernels.iter().zip(&rows) {
            let text = check_kernel(name, kernel);
            assert_eq!(
                &row[column("bound")],
                kernel["roofline"]["bound"].as_str().unwrap()
            );
            assert_eq!(
                row[column("decided_by")],
                text.clone().unwrap_or_default(),
                "{name}"
            );
            judged += text.is_some() as usize;
        }

        // Table: each row's Bound cell names its bound with a figure; rules under it.
        let table = report(&run, device, "table");
        let has_rules = kernels
            .iter()
            .any(|k| k["rules"].as_array().is_some_and(|r| !r.is_empty()));
        if has_rules {
            with_rules += 1;
            assert!(
                table.contains("ncu OPT") || table.contains("ncu INF"),
                "{name}: {table}"
            );
        }

        // Page: points coloured as the table rows, placed on their side of the ridge where
        // decided; the rules in the drilldown.
        let html = report(&run, device, "html");
        let row_bound: BTreeMap<String, String> = row_re
            .find_iter(&html)
            .map(|m| attributes(m.as_str())["data-short"].clone())
            .zip(bound_re.captures_iter(&html).map(|c| c[1].to_string()))
            .collect();
        let figures = &figure_re;
        for chart in figures.find_iter(&html) {
            let chart = chart.as_str();
            let points: Vec<_> = point_re
                .find_iter(chart)
                .map(|m| attributes(m.as_str()))
                .collect();
            if points.is_empty() {
                assert!(
                    chart.contains("no point, because"),
                    "{name}: an empty chart"
                );
                continue;
            }
            let roof = roof_re.find(chart).map(|m| attributes(m.as_str()));
            let bandwidth: f64 = bandwidth_re.captures(chart).unwrap()[1].parse().unwrap();
            for point in points {
                let short = &point["data-short"];
                assert_eq!(
                    Some(&point["data-bound"]),
                    row_bound.get(short),
                    "{name} {short}"
                );
                let (Some(roof), true) = (&roof, point["data-decided-here"] == "true") else {
                    continue;
                };
                let ridge = roof["data-gflops"].parse::<f64>().unwrap() / bandwidth;
                let ai: f64 = point["data-ai"].parse().unwrap();
                let decided = &point["data-decided-by"];
                if point["data-bound"] == "compute" && decided.contains("FLOP") {
                    assert!(
                        ai >= ridge * 0.999,
                        "{name} {short}: compute left of the ridge"
                    );
                }
                if point["data-bound"] == "memory"
                    && decided.contains("DRAM")
                    && !decided.contains("L1")
                {
                    assert!(
                        ai <= ridge * 1.001
                            || decided.contains("DRAM") && has_throughput(&json, short),
                        "{name} {short}: memory right of the ridge ({ai} > {ridge})"
                    );
                }
            }
        }
        for chart in figures.find_iter(&html) {
            check_levels(name, chart.as_str());
        }
        if has_rules {
            assert!(
                html.contains("<li data-rule=\"SOLBottleneck\""),
                "{name}: no rule in the page"
            );
            assert!(html.contains("class=\"rule-line\""), "{name}");
        }
    }
    assert!(judged >= 30, "only {judged} launches judged");
    assert!(with_rules >= 1, "no capture with ncu's rule results");
}

/// A hierarchical chart's cache levels: each L2/L1 marker sits at its kernel's height, at the
/// level's share under that level's roof, and a kernel decided by a cache level
/// (`memory · L1 70 %`) has that level's marker at that share. Returns how many markers.
fn check_levels(capture: &str, chart: &str) -> usize {
    let roof_re = Regex::new(r#"<g class="cache-roof" [^>]*>"#).unwrap();
    let marker_re = Regex::new(r#"<(?:rect|polygon) class="level-point"[^>]*>"#).unwrap();
    let point_re = Regex::new(r#"<circle class="point"[^>]*>"#).unwrap();
    let roofs: BTreeMap<String, f64> = roof_re
        .find_iter(chart)
        .map(|m| attributes(m.as_str()))
        .map(|a| (a["data-level"].clone(), a["data-gbs"].parse().unwrap()))
        .collect();
    let points: Vec<_> = point_re
        .find_iter(chart)
        .map(|m| attributes(m.as_str()))
        .collect();
    let mut markers = 0;
    for marker in marker_re.find_iter(chart).map(|m| attributes(m.as_str())) {
        markers += 1;
        let (short, level) = (&marker["data-short"], &marker["data-level"]);
        let point = points
            .iter()
            .find(|p| &p["data-short"] == short && p["data-series"] == marker["data-series"])
            .unwrap_or_else(|| panic!("{capture} {short}: a {level} marker without its point"));
        assert_eq!(
            point["data-gflops"], marker["data-gflops"],
            "{capture} {short}: the {level} marker at another height"
        );
        assert_eq!(
            point["data-bound"], marker["data-bound"],
            "{capture} {short}"
        );
        let Some(roof) = roofs.get(level) else {
            assert_eq!(
                marker["data-pct"], "",
                "{capture} {short}: a share without a roof"
            );
            continue;
        };
        let gflops: f64 = marker["data-gflops"].parse().unwrap();
        let ai: f64 = marker["data-ai"].parse().unwrap();
        let pct: f64 = marker["data-pct"].parse().unwrap();
        let under = 100.0 * gflops / (roof * ai);
        assert!(
            (under - pct).abs() <= 1e-6 * pct.max(1.0),
            "{capture} {short}: the {level} marker at {under} % of its roof, its share {pct} %"
        );
        let decided = &point["data-decided-by"];
        let label = if level == "l2" { "L2" } else { "L1" };
        if point["data-decided-here"] == "true"
            && decided.starts_with(&format!("memory · {label} "))
        {
            assert_eq!(
                decided,
                &format!("memory · {label} {pct:.0} %"),
                "{capture} {short}: decided by {label}, its marker elsewhere"
            );
        }
    }
    markers
}

/// The cache levels of a hierarchical roofline agree with the verdict too. NOT on a real
/// capture: none in the repository or the shared fixtures has ncu's hierarchical roofline
/// metrics (`--set full` or `--set roofline`), so the H200 capture gets made-up cache bytes and
/// roofs (see `report_html_layout::levels_run`); every real capture that has them is checked by
/// `bound_deciding_figure_and_point_agree_on_every_real_capture` through the same function.
#[test]
fn cache_level_markers_agree_with_the_bound_and_its_figure() {
    let dir = tempfile::tempdir().unwrap();
    let run = crate::report_html_layout::levels_run(dir.path());
    let json: Value = serde_json::from_str(&report(&run, Some("H200"), "json")).unwrap();
    let mut by_cache = 0;
    for kernel in json["kernels"].as_array().unwrap() {
        let text = check_kernel("levels", kernel).unwrap();
        by_cache += (text.starts_with("L1 ") || text.starts_with("L2 ")) as usize;
    }
    assert!(by_cache >= 1, "no kernel decided by a cache level");
    let html = report(&run, Some("H200"), "html");
    let figure_re = Regex::new(r#"(?s)<figure class="roofline-chart[^"]*".*?</figure>"#).unwrap();
    let markers: usize = figure_re
        .find_iter(&html)
        .map(|chart| check_levels("levels", chart.as_str()))
        .sum();
    assert_eq!(markers, 8, "L2 and L1 markers of the four kernels");
}

/// Whether the kernel's DRAM figure came from the DRAM speed of light (which may exceed the
/// bytes' share), not from bytes alone.
fn has_throughput(json: &Value, short: &str) -> bool {
    json["kernels"].as_array().unwrap().iter().any(|k| {
        k["short_name"] == short
            && k["roofline"]["inputs"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|i| i.as_str().is_some_and(|i| i.ends_with("throughput_pct")))
    })
}

/// Click every kernel's row (and, where it has one, its roofline point) in headless Chromium and
/// read the drilldown's figures back from the DOM: they equal `--format json`'s, at 800 and
/// 1280 pixels.
#[test]
fn the_drilldown_shows_the_json_figures_of_each_kernel_in_chromium() {
    use crate::support::browser::Browser;
    let dir = tempfile::tempdir().unwrap();
    let detailed = run_dir(
        dir.path(),
        "detailed",
        "ncu",
        &[fixture("ncu-h200/set_detailed_log.csv")],
    );
    for (name, run) in [
        ("baseline", fixture("runs/h200-baseline")),
        ("detailed", detailed),
    ] {
        let json: Value = serde_json::from_str(&report(&run, Some("H200"), "json")).unwrap();
        let page = dir.path().join(format!("{name}.html"));
        std::fs::write(&page, report(&run, Some("H200"), "html")).unwrap();
        for width in [800, 1280] {
            let mut browser = Browser::open(&page, width, 900);
            for kernel in json["kernels"].as_array().unwrap() {
                let short = kernel["short_name"].as_str().unwrap();
                let quoted = serde_json::to_string(short).unwrap();
                let row = format!("table.kernels tr[data-short={quoted}] td.n");
                browser.click_on(&row);
                browser.wait_for(&format!("document.body.dataset.openKernel==={quoted}"));
                let figures = browser.eval(&format!(
                    "(()=>{{const p=[...document.querySelectorAll('.kernel-detail')]\
                     .find(p=>p.dataset.short==={quoted});if(p.hidden)return null;const o={{}};\
                     p.querySelectorAll('dd[data-field]').forEach(d=>o[d.dataset.field]=d.dataset.v);\
                     o.rules=p.querySelectorAll('li[data-rule]').length;\
                     o.decided=p.querySelector('.verdict').dataset.decidedBy;\
                     o.bound=p.querySelector('.verdict').dataset.bound;return o;}})()"
                ));
                assert!(
                    figures.is_object(),
                    "{name} {short}: the panel did not open"
                );
                for field in [
                    "registers_per_thread",
                    "shared_mem_per_block",
                    "achieved_occupancy_pct",
                    "theoretical_occupancy_pct",
                    "sm_throughput_pct",
                    "memory_throughput_pct",
                    "dram_bytes",
                ] {
                    let want = kernel[field].as_f64();
                    let got = figures[field].as_str().and_then(|v| v.parse::<f64>().ok());
                    assert_eq!(got, want, "{name} {short} {field} at {width} px");
                }
                let gpu: f64 = figures["gpu_time_ns"].as_str().unwrap().parse().unwrap();
                assert_eq!(Some(gpu), kernel["duration_ns"].as_f64(), "{name} {short}");
                assert_eq!(
                    figures["decided"].as_str().unwrap(),
                    figure_text(&kernel["roofline"]["decided_by"]),
                    "{name} {short}"
                );
                assert_eq!(
                    figures["bound"], kernel["roofline"]["bound"],
                    "{name} {short}"
                );
                let rules = kernel["rules"].as_array().map_or(0, Vec::len);
                assert_eq!(
                    figures["rules"].as_u64().unwrap() as usize,
                    rules,
                    "{name} {short}"
                );
            }
            // A roofline point opens its kernel too.
            if browser.eval("document.querySelectorAll('circle.point').length>0")
                == Value::Bool(true)
            {
                let short = browser.eval("document.querySelector('circle.point').dataset.short");
                let (x, y) = browser.centre("circle.point");
                browser.click(x, y);
                browser.wait_for(&format!(
                    "document.body.dataset.openKernel==={}",
                    serde_json::to_string(&short).unwrap()
                ));
            }
            assert!(browser.console.is_empty(), "{:?}", browser.console);
            browser.screenshot(&dir.path().join(format!("{name}-{width}.png")));
        }
    }
}
