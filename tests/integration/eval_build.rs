//! The build stage on `--device cpu` (docs/eval-harness.md, "The build stage"): a candidate
//! imported alone in a sandboxed build worker with no device visible before its judged turn. A
//! build that fails is the verdict, with its compiler's log, and no judged turn; a library the
//! build compiled (`cc`, then ctypes) is found by the judged worker and reused; in a run of
//! many, later candidates' builds start while earlier ones are judged.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use polyprof::eval::evidence::{EvalEvidence, FailureKind, Side, Stage};

use crate::support::eval::{documents, eval_cpu, eval_problem, problem, python_with_numpy};

/// `cc` on PATH (the C candidates compile with it); else the test says it is skipped.
fn have_cc() -> bool {
    if which::which("cc").is_ok() {
        return true;
    }
    crate::support::record_skip(
        &crate::support::this_test(),
        "no `cc` on PATH (the candidates build C libraries with it)",
    );
    false
}

/// A broken build's eval: failed in the build stage by the candidate, its log quoted and kept,
/// no judged turn (no trusted worker, no candidate worker), every check named as not run.
fn assert_build_failed(dir: &Path, says: &str) {
    let (evidence, verdict) = documents(dir);
    let failure = evidence.failure.as_ref().expect("a failure");
    assert_eq!(
        (failure.kind, failure.stage),
        (FailureKind::BuildFailed, Stage::Build),
        "{failure:?}"
    );
    assert!(failure.message.contains(says), "{}", failure.message);
    let log = dir.join(failure.log.as_deref().expect("the build log named"));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains(says), "{}: {text}", log.display());
    assert!(log.starts_with(dir.join("build.000")), "{}", log.display());
    // The judged turn never began: no device time, no trusted or candidate worker.
    assert!(evidence.judged.is_none());
    assert!(!dir.join("reference.000").exists() && !dir.join("candidate.000").exists());
    let build = evidence.build.as_ref().expect("the build recorded");
    assert_eq!(build.devices, "none");
    assert!(build.reused.is_none());
    assert!(!verdict.passed);
    assert!(!verdict.checks.is_empty());
    // Only the sandbox's check reads what was set before any candidate code ran.
    for check in verdict.checks.iter().filter(|c| c.check != "sandbox") {
        assert!(!check.ran, "{} ran after a failed build", check.check);
        assert!(check.why_not.is_some(), "{}", check.check);
    }
}

#[test]
fn a_build_that_fails_is_the_verdict_with_its_compiler_log() {
    if !have_cc() {
        return;
    }
    let Some(eval) = eval_problem("build_broken.py", &[]) else {
        return;
    };
    assert_eq!(
        eval.out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&eval.out.stderr)
    );
    assert_build_failed(&eval.dir, "undeclared_symbol_of_the_broken_build");
}

#[test]
fn a_candidate_that_raises_at_import_fails_its_build() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let candidate = tmp.path().join("raises_at_import.py");
    std::fs::write(
        &candidate,
        "raise ImportError('the toolchain of this candidate is missing on purpose')\n",
    )
    .unwrap();
    let dir = tmp.path().join("eval");
    let out = eval_cpu(&python, &problem("reference.py"), &candidate, &dir, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_build_failed(&dir, "missing on purpose");
}

#[test]
fn a_library_built_at_import_is_reused_by_the_judged_worker() {
    if !have_cc() {
        return;
    }
    let Some(eval) = eval_problem("build_c_library.py", &[]) else {
        return;
    };
    assert_eq!(
        eval.out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&eval.out.stdout)
    );
    let (evidence, verdict) = documents(&eval.dir);
    assert!(verdict.passed, "{:?}", evidence.failure);
    let build = evidence.build.as_ref().expect("the build recorded");
    // The source and the library, in the build folder; the judged import changed nothing there.
    assert_eq!(build.files, 2, "{build:?}");
    assert_eq!(build.reused, Some(true), "{build:?}");
    assert!(!build.ahead);
    let judged = evidence.judged.as_ref().expect("a judged turn");
    assert!(build.ended_at <= judged.started_at, "{build:?} {judged:?}");
    // The build worker saw no device (the variable set empty over whatever polyprof had).
    let log = std::fs::read_to_string(eval.dir.join("build.000/run.1.stderr.log")).unwrap();
    assert!(log.contains("VISIBLE-DEVICES ''"), "{log}");
}

/// `polyprof eval` of every candidate in `candidates` (warm, `build_jobs` builds at a time
/// ahead) into `out`.
fn judge_folder(
    python: &Path,
    candidates: &Path,
    out: &Path,
    build_jobs: &str,
) -> std::process::Output {
    eval_cpu(
        python,
        &problem("reference.py"),
        candidates,
        out,
        &["--build-jobs", build_jobs],
    )
}

/// Judge `candidates` into `out` (every candidate expected to pass, the run to exit 0), and
/// say whether builds ran ahead there (the candidate `first`'s evidence); `false`: the test is
/// recorded as skipped.
fn judged_ahead(
    python: &Path,
    candidates: &Path,
    out: &Path,
    build_jobs: &str,
    first: &str,
) -> bool {
    let run = judge_folder(python, candidates, out, build_jobs);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let (evidence, _) = documents(&out.join(first));
    if evidence.build.as_ref().is_some_and(|b| b.ahead) {
        return true;
    }
    crate::support::record_skip(
        &crate::support::this_test(),
        "the sandbox does not confine everything here: builds ran right before their turns",
    );
    false
}

/// What a test of a folder of C-building candidates needs: `cc`, a Python with numpy, and an
/// empty `candidates` folder in a temporary directory (`None`: skipped, and said so).
fn candidates_folder() -> Option<(std::path::PathBuf, tempfile::TempDir, std::path::PathBuf)> {
    if !have_cc() {
        return None;
    }
    let python = python_with_numpy()?;
    let tmp = tempfile::tempdir().unwrap();
    let candidates = tmp.path().join("candidates");
    std::fs::create_dir(&candidates).unwrap();
    Some((python, tmp, candidates))
}

fn build_and_judged(evidence: &EvalEvidence) -> (String, String, String) {
    let build = evidence.build.as_ref().expect("a build");
    let judged = evidence.judged.as_ref().expect("a judged turn");
    (
        build.started_at.clone(),
        judged.started_at.clone(),
        judged.ended_at.clone(),
    )
}

#[test]
fn builds_of_later_candidates_run_while_earlier_ones_are_judged() {
    let Some((python, tmp, candidates)) = candidates_folder() else {
        return;
    };
    for name in ["a.py", "b.py", "c.py"] {
        std::fs::copy(problem("build_c_library.py"), candidates.join(name)).unwrap();
    }
    std::fs::copy(problem("build_broken.py"), candidates.join("d_broken.py")).unwrap();
    let out = tmp.path().join("out");
    let run = judge_folder(&python, &candidates, &out, "1");
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert_build_failed(
        &out.join("d_broken"),
        "undeclared_symbol_of_the_broken_build",
    );
    let rows: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("evals.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    let seconds = |stem: &str| {
        rows.iter()
            .find(|r| r["dir"].as_str().is_some_and(|d| d.ends_with(stem)))
            .and_then(|r| r["device_seconds"].as_f64())
            .unwrap_or_else(|| panic!("no device_seconds for {stem}: {rows:?}"))
    };
    assert_eq!(seconds("d_broken"), 0.0);
    let mut spans = Vec::new();
    let mut started_ahead = Vec::new();
    for stem in ["a", "b", "c"] {
        let (evidence, verdict) = documents(&out.join(stem));
        assert!(verdict.passed, "{stem}: {:?}", evidence.failure);
        assert_eq!(
            evidence.build.as_ref().unwrap().reused,
            Some(true),
            "{stem}"
        );
        assert!(seconds(stem) > 0.0, "{stem}");
        if !evidence.build.as_ref().unwrap().ahead {
            crate::support::record_skip(
                &crate::support::this_test(),
                "the sandbox does not confine everything here: builds ran right before their turns",
            );
            return;
        }
        spans.push(build_and_judged(&evidence));
        started_ahead.push(evidence.judged.as_ref().unwrap().worker_started_ahead);
    }
    // Through the warm evaluator every candidate's scored worker was started ahead, each once
    // its build was done (held still while the candidate before it was timed). One build at a time keeps the builds, and so the turns, in
    // the directory's order (with two, the broken one's build may finish first and take the
    // one start a turn gives: seen on a loaded machine).
    assert_eq!(started_ahead, [true, true, true]);
    // Ordered by the evidence's own timestamps (RFC 3339 with nanoseconds, UTC: they compare
    // as text): each later build began before the judging of the one before it ended.
    for pair in spans.windows(2) {
        let (earlier, later) = (&pair[0], &pair[1]);
        assert!(
            later.0 < earlier.2,
            "a build started at {} only after the judging before it ended at {}",
            later.0,
            earlier.2
        );
    }
}

#[test]
fn candidates_from_stdin_build_ahead_and_a_failed_build_costs_no_device_time() {
    if !have_cc() {
        return;
    }
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(["eval", "--device", "cpu", "--trials", "2", "--blocks", "2"])
        .args(["--repeat", "3", "--warmup", "1"])
        .arg("--python")
        .arg(&python)
        .arg("--reference")
        .arg(problem("reference.py"))
        .args(["--candidate", "-", "--output-dir"])
        .arg(&out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for name in ["build_broken.py", "build_c_library.py"] {
        writeln!(stdin, "{}", problem(name).display()).unwrap();
    }
    drop(stdin);
    let done = child.wait_with_output().unwrap();
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let mut lines: Vec<serde_json::Value> = String::from_utf8_lossy(&done.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    // Answered as judged; each line names its stdin line.
    lines.sort_by_key(|l| l["index"].as_u64().expect("an index"));
    assert_eq!(lines[0]["row"]["failure"], "build_failed", "{lines:?}");
    assert_eq!(lines[0]["device_seconds"], 0.0);
    assert_eq!(lines[1]["row"]["passed"], true, "{lines:?}");
    assert!(lines[1]["device_seconds"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_slow_build_does_not_hold_the_device_while_a_later_candidate_is_ready() {
    let Some((python, tmp, candidates)) = candidates_folder() else {
        return;
    };
    // First in the directory's order, but its build takes 4 s; the second's takes none.
    let slow = std::fs::read_to_string(problem("build_c_library.py"))
        .unwrap()
        .replace("\nBUILD_DELAY_S = 0.0\n", "\nBUILD_DELAY_S = 4.0\n");
    assert!(
        slow.contains("BUILD_DELAY_S = 4.0"),
        "the delay was not set"
    );
    std::fs::write(candidates.join("a_slow.py"), slow).unwrap();
    std::fs::copy(problem("build_c_library.py"), candidates.join("b_quick.py")).unwrap();
    let out = tmp.path().join("out");
    if !judged_ahead(&python, &candidates, &out, "2", "a_slow") {
        return;
    }
    let (slow, _) = documents(&out.join("a_slow"));
    let (quick, _) = documents(&out.join("b_quick"));
    let (_, slow_judged, _) = build_and_judged(&slow);
    let (_, quick_judged, quick_ended) = build_and_judged(&quick);
    // The quick one was judged first, while the slow one still built; the rows keep the
    // directory's order.
    assert!(
        quick_ended <= slow_judged,
        "b_quick's turn ended at {quick_ended}, a_slow's began at {slow_judged}"
    );
    assert!(quick_judged < slow.build.as_ref().unwrap().ended_at);
    let rows: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("evals.json")).unwrap()).unwrap();
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["candidate"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(names, ["a_slow.py", "b_quick.py"]);
}

#[test]
fn the_next_candidates_worker_is_held_still_while_the_one_before_it_is_timed() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let candidates = tmp.path().join("candidates");
    std::fs::create_dir(&candidates).unwrap();
    // The first candidate's calls take a second each: its turn lasts seconds, so the second
    // candidate's worker, started once its build is done, has connected before the first
    // candidate's later timing blocks begin.
    let honest = std::fs::read_to_string(problem("honest.py")).unwrap();
    let slow = honest.replace(
        "    def forward(self, x):\n",
        "    def forward(self, x):\n        __import__(\"time\").sleep(1.0)\n",
    );
    assert_ne!(slow, honest, "the sleep was not put in");
    std::fs::write(candidates.join("a_slow.py"), slow).unwrap();
    std::fs::copy(problem("honest.py"), candidates.join("b_honest.py")).unwrap();
    let out = tmp.path().join("out");
    if !judged_ahead(&python, &candidates, &out, "1", "b_honest") {
        return;
    }
    let (slow, _) = documents(&out.join("a_slow"));
    let (next, _) = documents(&out.join("b_honest"));
    assert!(next.judged.as_ref().unwrap().worker_started_ahead);
    let held: Vec<u32> = slow.samples.iter().map(|b| b.bystanders_stopped).collect();
    // The last block begins at least 7 s into the first candidate's turn (3 trials and a block
    // of 4 calls, a second each, before it).
    assert_eq!(
        held.last().copied(),
        Some(1),
        "bystanders stopped per block of the first candidate: {held:?}"
    );
    // Nobody is held while the second candidate's own blocks run: its worker left the
    // bystanders when its turn took it (its reference blocks may be the first's, reused).
    let own: Vec<u32> = next
        .samples
        .iter()
        .filter(|b| b.side == Side::Candidate)
        .map(|b| b.bystanders_stopped)
        .collect();
    assert!(own.iter().all(|&n| n == 0), "{own:?}");
}
