//! The pages' layout as a person sees it, measured in headless Chromium at 800 and 1280 pixels
//! (issue 41): no name split inside a word where the word fits on a line of its own, no table
//! column narrower than its longest word, no empty roofline (a chart without a point says why
//! instead), chart text at least 11 px high, the timeline's lane labels ending in their stream
//! id, every moved point of a diff with its arrow and label, and no page wider than the
//! window (tables take 12 px text and narrower padding below 900 px). Pages: the H200
//! capture, the tensor capture (PyTorch's long names, no DRAM bytes), the pytest capture, the
//! H200 capture with cache levels (hierarchical roofline), a diff and a batch.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::browser::Browser;
use crate::support::{assert_exit, fixture, polyprof};

/// Problems of the open page, as text (empty: none). Words are runs of non-space characters;
/// a word split over lines shows as a range with more than one line box.
const LAYOUT_CHECK: &str = r#"(()=>{
const bad=[];
const shown=el=>el.getClientRects().length>0;
function words(el){const out=[];const w=document.createTreeWalker(el,NodeFilter.SHOW_TEXT);let n;
 while((n=w.nextNode())){const re=/\S+/g;let m;while((m=re.exec(n.data))){const r=document.createRange();
  r.setStart(n,m.index);r.setEnd(n,m.index+m[0].length);out.push([m[0],r]);}}return out;}
function oneLine(r){return [...r.getClientRects()].reduce((a,b)=>a+b.width,0);}
function lines(r){const tops=new Set();for(const b of r.getClientRects())if(b.width>0)tops.add(Math.round(b.top));return tops.size;}
function inner(el){const s=getComputedStyle(el);return el.clientWidth-parseFloat(s.paddingLeft)-parseFloat(s.paddingRight);}
document.querySelectorAll('.name').forEach(el=>{if(!shown(el))return;const room=inner(el);
 for(const [w,r] of words(el)){if(lines(r)>1&&oneLine(r)<=room+1)
  bad.push('name split inside a word that fits its line ('+oneLine(r).toFixed(0)+' of '+room.toFixed(0)+' px): '+w.slice(0,60));}});
document.querySelectorAll('table').forEach(t=>{if(!shown(t))return;
 t.querySelectorAll('th,td').forEach(c=>{if(c.classList.contains('name')||!shown(c))return;const room=inner(c);
  for(const [w,r] of words(c)){const width=oneLine(r);
   if(lines(r)>1||width>room+1)bad.push('column narrower ('+room.toFixed(0)+' px) than its word '+w.slice(0,40)+' ('+width.toFixed(0)+' px)');}});});
document.querySelectorAll('svg.roofline').forEach(s=>{if(!s.querySelector('circle.point'))
 bad.push('an empty roofline: '+s.dataset.precision);});
document.querySelectorAll('figure.roofline-chart').forEach(f=>{if(!f.querySelector('svg.roofline')&&!/no point, because/.test(f.textContent))
 bad.push('a chart without points and without a reason');});
document.querySelectorAll('svg.roofline text').forEach(t=>{const h=t.getBoundingClientRect().height;
 if(t.textContent.trim()&&h<11)bad.push('chart text '+h.toFixed(1)+' px high: '+t.textContent.trim().slice(0,40));});
document.querySelectorAll('.timeline').forEach(box=>{const lanes=[...box.querySelectorAll('.lane-labels li')];
 if(lanes.length!==Number(box.dataset.lanes))bad.push('lane labels '+lanes.length+' of '+box.dataset.lanes);
 lanes.forEach(li=>{const m=/stream \S+$/.exec(li.dataset.lane);
  if(m&&!li.textContent.endsWith(m[0]))bad.push('lane label without its stream id: '+li.textContent);
  if(Number(li.dataset.w)>212)bad.push('lane label wider than its column: '+li.textContent);});});
document.querySelectorAll('svg.roofline').forEach(s=>{const box=s.getBoundingClientRect();
 s.querySelectorAll('line.moved').forEach(l=>{
  if(!s.querySelector('polygon.moved-head'))bad.push('a moved point without an arrow head');});
 const moved=s.querySelectorAll('line.moved').length,labels=[...s.querySelectorAll('text.moved-label')];
 if(labels.length<moved)bad.push(moved+' moved points, '+labels.length+' labels');
 labels.forEach((t,i)=>{const a=t.getBoundingClientRect();labels.slice(i+1).forEach(u=>{const b=u.getBoundingClientRect();
  if(a.left<b.right&&b.left<a.right&&a.top<b.bottom&&b.top<a.bottom)bad.push('moved labels over each other: '+t.textContent+' / '+u.textContent);});});
 labels.forEach(t=>{const b=t.getBoundingClientRect();if(b.left<box.left-1||b.right>box.right+1||b.top<box.top-1||b.bottom>box.bottom+1)
  bad.push('a moved label outside its chart: '+t.textContent);});});
const wide=document.documentElement.scrollWidth;
if(wide>innerWidth+1)bad.push('the page is '+wide+' px wide in a '+innerWidth+' px window');
return bad;})()"#;

fn write_page(path: &Path, args: &[&str], run: &[&Path], device: Option<&str>) {
    let mut command = polyprof();
    command.args(args);
    for run in run {
        command.arg(run);
    }
    if let Some(device) = device {
        command.args(["--device", device]);
    }
    let out = command
        .args(["--format", "html", "-o"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        path.is_file(),
        "no page: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The H200 capture with cache-level bytes and roofs added (made-up figures, see
/// `with_cache_levels` in `roofline_chart.rs`): no real capture has them.
pub fn levels_run(dir: &Path) -> PathBuf {
    let mut run: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("runs/h200-baseline/run.json")).unwrap(),
    )
    .unwrap();
    let levels = [
        ("vector_add", 1.9e8, 1.5e6),
        ("matmul_naive", 1.07e9, 6.7e7),
        ("void matmul_tiled", 1.34e8, 2.1e6),
        ("reduce_sum", 6.9e7, 5.4e5),
    ];
    for kernel in run["kernels"].as_array_mut().unwrap() {
        let name = kernel["name"].as_str().unwrap().to_string();
        let (_, l2, l1) = levels.iter().find(|(n, _, _)| name.starts_with(n)).unwrap();
        let metrics = kernel["metrics"].as_object_mut().unwrap();
        for (metric, value) in [
            ("l1tex__m_xbar2l1tex_read_bytes.sum", *l2),
            ("l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained", 5120.0),
            ("lts__cycles_elapsed.avg.per_second", 1.755e9),
            ("l1tex__lsu_writeback_active_mem_lg.sum", *l1),
            (
                "l1tex__lsu_writeback_active_mem_lg.sum.peak_sustained",
                132.0,
            ),
            ("l1tex__cycles_elapsed.avg.per_second", 1.755e9),
        ] {
            metrics.insert(metric.to_string(), serde_json::json!({ "value": value }));
        }
    }
    let out = dir.join("levels");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("run.json"), run.to_string()).unwrap();
    out
}

fn parsed(dir: &Path, name: &str, capture: &str) -> PathBuf {
    let run = dir.join(name);
    let out = polyprof()
        .args(["parse", "--profiler", "ncu", "--run-dir"])
        .arg(&run)
        .arg(fixture(capture))
        .output()
        .unwrap();
    assert!(
        run.join("run.json").is_file(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    run
}

fn batch_page(dir: &Path) -> PathBuf {
    let jobs: Vec<Value> = (1..=12)
        .map(|i| {
            let script = if i % 5 == 0 { "exit 3" } else { "true" };
            crate::support::batch::sh_job(&format!("job-{i:02}"), script)
        })
        .collect();
    let file = crate::support::batch::write_jobs(dir, &jobs);
    let root = dir.join("batch");
    let out = crate::support::batch::batch(&file, &root)
        .args(["--devices", "cpu", "--jobs", "2", "-q"])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let page = dir.join("batch.html");
    write_page(&page, &["report"], &[&root], None);
    page
}

#[test]
fn every_page_reads_at_800_and_1280_pixels_in_chromium() {
    if which::which("chromium")
        .or_else(|_| which::which("chromium-browser"))
        .is_err()
    {
        crate::support::skip(
            "every_page_reads_at_800_and_1280_pixels_in_chromium",
            "headless Chromium is not installed",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tensor = parsed(d, "tensor", "ncu-h200-tensor/mm_tensor.csv");
    let pytest = parsed(d, "pytest", "ncu-h200/pytest_log_file.csv");
    let levels = levels_run(d);
    let mut pages = Vec::new();
    for (name, run) in [
        ("baseline", fixture("runs/h200-baseline")),
        ("tensor", tensor),
        ("pytest", pytest),
        ("levels", levels),
    ] {
        let page = d.join(format!("{name}.html"));
        write_page(&page, &["report"], &[&run], Some("H200"));
        pages.push((name, page));
    }
    let diff = d.join("diff.html");
    write_page(
        &diff,
        &["diff"],
        &[
            &fixture("runs/h200-baseline"),
            &fixture("runs/h200-regressed"),
        ],
        None,
    );
    pages.push(("diff", diff));
    pages.push(("batch", batch_page(d)));
    let mut failures = Vec::new();
    for (name, page) in &pages {
        for width in [800, 1280] {
            let mut browser = Browser::open(page, width, 900);
            let problems = browser.eval(LAYOUT_CHECK);
            for problem in problems.as_array().unwrap() {
                failures.push(format!(
                    "{name} at {width} px: {}",
                    problem.as_str().unwrap()
                ));
            }
            assert!(browser.console.is_empty(), "{name}: {:?}", browser.console);
            if *name == "levels" {
                let markers = browser.eval("document.querySelectorAll('.level-point').length");
                assert_eq!(markers, 8, "{name}: the L2 and L1 markers of 4 kernels");
                let roofs = browser.eval(
                    "[...document.querySelectorAll('svg.roofline text')].map(t=>t.textContent.trim())\
                     .filter(t=>/^(L2|L1|DRAM) /.test(t)).length",
                );
                assert_eq!(roofs, 3, "{name}: DRAM, L2 and L1 roofs labelled");
            }
            if *name == "diff" {
                let arrows = browser.eval("document.querySelectorAll('line.moved').length");
                assert!(arrows.as_u64().unwrap() >= 1, "{name}: no moved point");
            }
            browser.screenshot(&d.join(format!("{name}-{width}.png")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
