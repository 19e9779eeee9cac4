//! `polyprof parse -o run.json` / `--run-dir`: a run document of saved output that `report` and
//! `diff` read; its Hatchet export has the same frames as another real run of the same program.

use serde_json::Value;

use crate::support::{fixture, polyprof, python_has, script};

fn parse_to(file: &str, out: &std::path::Path) {
    polyprof()
        .arg("parse")
        .arg(fixture(file))
        .arg("-o")
        .arg(out)
        .assert()
        .success();
}

fn report(run: &std::path::Path, format: &str) -> Vec<u8> {
    let output = polyprof()
        .args(["report", "--format", format])
        .arg(run)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

#[test]
fn a_parsed_tensor_capture_reports_compute_bound_and_diffs_clean() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    parse_to("ncu-h200-tensor/mm_tensor.csv", &run);
    let json: Value = serde_json::from_slice(&report(&run, "json")).unwrap();
    let kernels = json["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 8);
    let bf16 = kernels
        .iter()
        .find(|k| {
            k["short_name"]
                .as_str()
                .unwrap_or("")
                .starts_with("nvjet_sm90_tst")
        })
        .unwrap();
    assert_eq!(bf16["roofline"]["bound"], "compute", "{}", bf16["roofline"]);
    let table = String::from_utf8(report(&run, "table")).unwrap();
    assert!(table.contains("parsed from saved output"), "{table}");
    assert!(!table.contains("FAILED"), "{table}");
    // Two documents of the same capture: nothing changed, exit 0.
    let again = dir.path().join("again");
    polyprof()
        .arg("parse")
        .arg(fixture("ncu-h200-tensor/mm_tensor.csv"))
        .arg("--run-dir")
        .arg(&again)
        .assert()
        .success();
    polyprof()
        .arg("diff")
        .arg(&run)
        .arg(&again)
        .assert()
        .success();
}

fn frames(node: &Value, path: &str, out: &mut Vec<String>) {
    let here = format!("{path}/{}:{}", node["frame"]["name"], node["frame"]["type"]);
    out.push(here.clone());
    for child in node["children"].as_array().into_iter().flatten() {
        frames(child, &here, out);
    }
}

#[test]
fn two_real_runs_export_the_same_hatchet_frames() {
    // Two captures of one program (`./app 1`, kernels.cu), pids 1346 and 1579.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    parse_to("ncu-h200/raw_page.stdout", &a);
    parse_to("ncu-h200/raw_page_selected_metrics.stdout", &b);
    let (ga, gb) = (dir.path().join("ga.json"), dir.path().join("gb.json"));
    std::fs::write(&ga, report(&a, "hatchet")).unwrap();
    std::fs::write(&gb, report(&b, "hatchet")).unwrap();
    let load = |p: &std::path::Path| -> Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let (la, lb) = (load(&ga), load(&gb));
    let (mut fa, mut fb) = (Vec::new(), Vec::new());
    frames(&la[0], "", &mut fa);
    frames(&lb[0], "", &mut fb);
    assert_eq!(fa, fb);
    assert!(
        fa.iter()
            .all(|f| !f.contains("1346") && !f.contains("1579") && !f.contains(".000")),
        "{fa:?}"
    );
    let text = String::from_utf8(std::fs::read(&ga).unwrap()).unwrap();
    assert!(text.contains("1346"), "the pid stays in the metadata");
    if !python_has("hatchet") {
        crate::support::record_skip(
            &crate::support::this_test(),
            "gf2 - gf1 with llnl-hatchet (pip install llnl-hatchet)",
        );
        return;
    }
    let output = std::process::Command::new("python3")
        .arg(script("check-hatchet.py"))
        .arg(&gb)
        .arg("--minus")
        .arg(&ga)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("0 with NaN"), "{stdout}");
}
