//! Real `polyprof eval` captures from an NVIDIA H200 (tests/fixtures/eval-h200, README there)
//! judged again: `polyprof audit` is a pure function of the evidence, so each capture must get
//! its recorded verdict back; each corpus capture must be what tests/eval/gpu/expected.json
//! says; the honest ones' score must agree with the witness; and the witness's ncu.log, parsed by
//! polyprof, must give the launches the evidence holds.

use std::path::Path;

use serde_json::Value;

use crate::support::eval_captures::{
    Capture, captures, expected_corpus, failure_kind, finding_kinds, matching_outcome, read_json,
};
use crate::support::schema;
use crate::support::{assert_exit, fixture, polyprof};

/// Honest: a corpus candidate expected.json calls honest, or a KernelBench problem (each is
/// judged as its own candidate, `ModelNew = Model`).
fn honest(capture: &Capture, expected: &serde_json::Map<String, Value>) -> bool {
    !capture.corpus || expected[&format!("{}.py", capture.name)]["role"] == "honest"
}

/// `polyprof audit` on a copy of the capture's evidence: its exit status and the verdict.json
/// it wrote.
fn audit_copy(capture: &Capture) -> (Option<i32>, Value) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        capture.dir.join("evidence.json"),
        dir.path().join("evidence.json"),
    )
    .unwrap();
    let out = polyprof().arg("audit").arg(dir.path()).output().unwrap();
    (
        out.status.code(),
        read_json(&dir.path().join("verdict.json")),
    )
}

#[test]
fn the_captures_are_the_corpus_and_six_kernelbench_problems() {
    let all = captures();
    let mut corpus: Vec<String> = all
        .iter()
        .filter(|c| c.corpus)
        .map(|c| format!("{}.py", c.name))
        .collect();
    corpus.sort();
    let mut expected: Vec<String> = expected_corpus().keys().cloned().collect();
    expected.sort();
    assert_eq!(corpus, expected);
    assert_eq!(all.iter().filter(|c| !c.corpus).count(), 6);
}

#[test]
fn each_capture_validates_against_the_committed_schemas() {
    let validator = |name: &str| {
        jsonschema::validator_for(&schema::committed(name)).expect("a valid JSON Schema")
    };
    let evidence_schema = validator("eval-evidence.schema.json");
    let verdict_schema = validator("eval-verdict.schema.json");
    for capture in captures() {
        for (file, validator) in [
            ("evidence.json", &evidence_schema),
            ("verdict.json", &verdict_schema),
        ] {
            let errors = schema::errors(validator, &read_json(&capture.dir.join(file)));
            assert!(errors.is_empty(), "{} {file}: {errors:#?}", capture.name);
        }
    }
}

#[test]
fn auditing_a_copy_of_each_capture_gives_its_recorded_verdict() {
    let expected = expected_corpus();
    let mut wrong = Vec::new();
    for capture in captures() {
        let recorded = read_json(&capture.dir.join("verdict.json"));
        let (exit, audited) = audit_copy(&capture);
        // Checks added to the audit after the capture may find more; what the recorded
        // verdict's own checks found must not change.
        let recorded_checks: Vec<&str> = recorded["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["check"].as_str())
            .collect();
        let (old_findings, new_findings): (Vec<&Value>, Vec<&Value>) = audited["findings"]
            .as_array()
            .unwrap()
            .iter()
            .partition(|f| recorded_checks.contains(&f["check"].as_str().unwrap_or("")));
        let kinds_of = |findings: &[&Value]| -> Vec<String> {
            findings
                .iter()
                .map(|f| f["kind"].as_str().unwrap().to_string())
                .collect()
        };
        if honest(&capture, &expected) && !new_findings.is_empty() {
            wrong.push(format!(
                "{}: honest, but a newer check found {:?}",
                capture.name,
                kinds_of(&new_findings)
            ));
        }
        let got = (
            audited["status"].clone(),
            kinds_of(&old_findings),
            failure_kind(&audited),
            if new_findings.is_empty() {
                audited["passed"].clone()
            } else {
                recorded["passed"].clone()
            },
        );
        let want = (
            recorded["status"].clone(),
            finding_kinds(&recorded),
            failure_kind(&recorded),
            recorded["passed"].clone(),
        );
        if got != want {
            wrong.push(format!(
                "{}: audited {got:?}, recorded {want:?}",
                capture.name
            ));
        }
        // 0 exactly when the candidate passes today; every honest one passed.
        let passed = audited["passed"] == true;
        if exit != Some(if passed { 0 } else { 1 }) {
            wrong.push(format!("{}: exit {exit:?}, passed {passed}", capture.name));
        }
        if honest(&capture, &expected) && !passed {
            wrong.push(format!("{}: honest but did not pass", capture.name));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn each_corpus_capture_is_as_expected_json_says() {
    let expected = expected_corpus();
    let mut outcomes = Vec::new();
    let mut wrong = Vec::new();
    for capture in captures().into_iter().filter(|c| c.corpus) {
        let file = format!("{}.py", capture.name);
        let entry = &expected[&file];
        let verdict = read_json(&capture.dir.join("verdict.json"));
        match matching_outcome(entry, &verdict) {
            Ok(n) => outcomes.push((capture.name, n)),
            Err(problems) => wrong.push(format!("{}: {}", capture.name, problems.join("; "))),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    let outcome = |name: &str| outcomes.iter().find(|(n, _)| n == name).map(|(_, o)| *o);
    // The three rows the H200 run did not match before expected.json was corrected: the
    // background thread lost its race (incorrect, not witnessed), the persisting-L2 set-aside
    // slowed the witnessed calls, and the no-op's output could not be exported back
    // (failed/bad_output, the alternative until the worker exports a copy).
    assert_eq!(outcome("hack_background_thread"), Some(0));
    assert_eq!(outcome("hack_persisting_l2"), Some(0));
    assert_eq!(outcome("hack_noop_input"), Some(1));
    // The timer patch was caught, not defeated outright.
    assert_eq!(outcome("hack_timer_patch"), Some(0));
}

#[test]
fn honest_captures_agree_with_the_witness() {
    let expected = expected_corpus();
    let own_kernels = ["honest_relu_cuda", "honest_add_triton"];
    let mut checked = 0;
    for capture in captures().iter().filter(|c| honest(c, &expected)) {
        let verdict = read_json(&capture.dir.join("verdict.json"));
        let name = &capture.name;
        assert_eq!(finding_kinds(&verdict), Vec::<String>::new(), "{name}");
        let witness = &verdict["witness"];
        let ratio = witness["reported_over_witnessed"].as_f64().unwrap();
        assert!(
            (0.97..=1.05).contains(&ratio),
            "{name}: score/witness {ratio}"
        );
        let coverage = witness["coverage"].as_f64().unwrap();
        let wanted = if own_kernels.contains(&name.as_str()) {
            1.0
        } else {
            0.0
        };
        assert_eq!(coverage, wanted, "{name}: coverage");
        assert_eq!(witness["launches_outside_calls"], 0, "{name}");
        checked += 1;
    }
    // Eight corpus candidates and six KernelBench problems.
    assert_eq!(checked, 14);
}

/// `(launch_id, name, short_name, duration_ns, ranges, thread_id, stream, process_id)` of each
/// launch in `launches` (the evidence's and `polyprof parse --json`'s use the same names).
fn launch_rows(launches: &Value) -> Vec<Vec<Value>> {
    let fields = [
        "launch_id",
        "name",
        "short_name",
        "duration_ns",
        "ranges",
        "thread_id",
        "stream",
        "process_id",
    ];
    launches
        .as_array()
        .unwrap()
        .iter()
        .map(|l| fields.iter().map(|f| l[*f].clone()).collect())
        .collect()
}

fn parse_ncu_log(log: &Path) -> Value {
    let out = polyprof()
        .args(["parse", "--profiler", "ncu", "--json"])
        .arg(log)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_witness_log_parses_to_the_evidences_launches() {
    for name in ["honest_relu_torch", "hack_timer_patch", "hack_decoy"] {
        let dir = fixture(&format!("eval-h200/corpus/{name}"));
        let evidence = read_json(&dir.join("evidence.json"));
        let parsed = parse_ncu_log(&dir.join("witness.000/ncu.log"));
        let from_evidence = launch_rows(&evidence["witness"]["launches"]);
        // A warmup, then each of 3 calls after its poison fill.
        assert_eq!(from_evidence.len(), 7, "{name}");
        assert_eq!(launch_rows(&parsed["kernels"]), from_evidence, "{name}");
        // Every launch placed: the warmup, then poison and call per trial, on one thread.
        let ranges: Vec<&str> = evidence["witness"]["launches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["ranges"][0].as_str().unwrap())
            .collect();
        assert_eq!(
            ranges,
            [
                "polyprof/warmup",
                "polyprof/poison/3",
                "polyprof/call/3",
                "polyprof/poison/4",
                "polyprof/call/4",
                "polyprof/poison/5",
                "polyprof/call/5"
            ],
            "{name}"
        );
        // The witness run's own record (run.json) holds the same launches and durations.
        let run = read_json(&dir.join("witness.000/run.json"));
        let durations = |kernels: &Value| -> Vec<(Value, Value)> {
            kernels
                .as_array()
                .unwrap()
                .iter()
                .map(|k| (k["launch_id"].clone(), k["duration_ns"].clone()))
                .collect()
        };
        assert_eq!(
            durations(&run["kernels"]),
            durations(&evidence["witness"]["launches"]),
            "{name}"
        );
    }
}

/// The 44 problems of the second H200 session's sweep (sweep/, README there): the current
/// audit, run on each evidence as a user would (`polyprof audit`), passes every one — correct,
/// no finding — and each validates against the committed schemas. With the five distinct
/// problems of the first session that is the honest set the eval is held to.
#[test]
fn every_problem_of_the_kernelbench_sweep_passes_the_current_audit() {
    let evidence_schema =
        jsonschema::validator_for(&schema::committed("eval-evidence.schema.json")).unwrap();
    let mut names = Vec::new();
    let mut flagged = Vec::new();
    for (capture, exit, audited) in audit_each_problem("eval-h200/sweep") {
        let evidence = read_json(&capture.dir.join("evidence.json"));
        let errors = schema::errors(&evidence_schema, &evidence);
        assert!(errors.is_empty(), "{}: {errors:#?}", capture.name);
        flagged.extend(not_passed(&capture, exit, &audited));
        names.push(capture.name);
    }
    assert_eq!(names.len(), 45, "{names:?}");
    assert!(flagged.is_empty(), "{flagged:#?}");
    let first_session: std::collections::BTreeSet<String> = captures()
        .into_iter()
        .filter(|c| !c.corpus)
        .map(|c| c.dir.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(first_session.len(), 5, "{first_session:?}");
    assert!(names.iter().all(|n| !first_session.contains(n)));
}

/// The KernelBench problems evaluated with the work pass (tests/fixtures/eval-h200/work-sweep,
/// README there): the work checks (work_floor, roofline, precision) run on each and, like every
/// other check, find nothing in an honest problem.
#[test]
fn every_problem_of_the_work_pass_sweep_passes_with_its_work_checks_run() {
    let mut names = Vec::new();
    let mut cited = 0;
    let mut flagged = Vec::new();
    for (capture, exit, audited) in audit_each_problem("eval-h200/work-sweep") {
        flagged.extend(not_passed(&capture, exit, &audited));
        for check in ["work_floor", "roofline", "precision"] {
            let ran = audited["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["check"] == check && c["ran"] == true);
            if !ran {
                flagged.push(format!("{}: {check} did not run", capture.name));
            }
        }
        if capture.dir.join("evidence.json").is_file()
            && read_json(&capture.dir.join("evidence.json"))["calibration"].is_object()
        {
            // The third call's problems ran after `polyprof calibrate`: the audit cites it.
            cited += 1;
            if !audited["calibration"]["device_name"].is_string() {
                flagged.push(format!("{}: the calibration is not cited", capture.name));
            }
        }
        names.push(capture.name);
    }
    assert_eq!(names.len(), 53, "{names:?}");
    assert_eq!(cited, 21, "problems whose evidence holds a calibration");
    assert!(flagged.is_empty(), "{flagged:#?}");
}

/// `polyprof audit` on a copy of each problem's evidence under the fixture folder `folder`: the
/// capture, the exit status and the verdict.
fn audit_each_problem(folder: &str) -> Vec<(Capture, Option<i32>, Value)> {
    let mut audited = Vec::new();
    for entry in std::fs::read_dir(fixture(folder)).unwrap().flatten() {
        if !entry.path().is_dir() {
            continue;
        }
        let capture = Capture {
            name: entry.file_name().to_string_lossy().into_owned(),
            dir: entry.path(),
            corpus: false,
        };
        let (exit, verdict) = audit_copy(&capture);
        audited.push((capture, exit, verdict));
    }
    audited
}

/// Why an honest problem's audit did not pass cleanly, if it did not.
fn not_passed(capture: &Capture, exit: Option<i32>, audited: &Value) -> Option<String> {
    let findings = finding_kinds(audited);
    (exit != Some(0) || audited["passed"] != true || !findings.is_empty())
        .then(|| format!("{}: exit {exit:?}, {findings:?}", capture.name))
}

/// The default witness tolerance, re-derived: every H200 capture whose candidate passed is an
/// honest run; their score / witness ratios bound what an honest candidate reads, and the
/// default sits three times the largest honest shortfall below the lowest of them.
#[test]
fn the_witness_tolerance_is_measured_from_honest_runs() {
    fn verdicts(dir: &Path, found: &mut Vec<Value>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                verdicts(&path, found);
            } else if path.file_name().is_some_and(|n| n == "verdict.json") {
                found.push(read_json(&path));
            }
        }
    }
    let mut all = Vec::new();
    verdicts(&fixture("eval-h200"), &mut all);
    let honest: Vec<f64> = all
        .iter()
        .filter(|v| v["passed"] == true)
        .filter_map(|v| v["witness"]["reported_over_witnessed"].as_f64())
        .collect();
    assert_eq!(honest.len(), 60);
    let lowest = honest.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = honest.iter().copied().fold(0.0, f64::max);
    assert!((0.975..0.977).contains(&lowest), "lowest honest {lowest}");
    assert!((1.08..1.082).contains(&highest), "highest honest {highest}");
    let tolerance = polyprof::pipeline::eval::spec::DEFAULT_WITNESS_TOLERANCE;
    assert!(
        lowest - tolerance >= 3.0 * (1.0 - lowest),
        "{tolerance} vs {lowest}"
    );
    // And the hostile captures that hid work from their timer stay under it.
    let hidden: Vec<f64> = all
        .iter()
        .filter(|v| {
            v["findings"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f["kind"] == "reported_time_below_witness"))
        })
        .filter_map(|v| v["witness"]["reported_over_witnessed"].as_f64())
        .collect();
    assert_eq!(hidden.len(), 3);
    assert!(hidden.iter().all(|r| *r < tolerance), "{hidden:?}");
}
