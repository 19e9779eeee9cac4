//! `polyprof eval --candidate DIR`: every `*.py` of DIR (sorted) judged one after another
//! against the reference into `OUTPUT_DIR/<stem>/`, one summary table, and
//! `OUTPUT_DIR/evals.json` (one row per candidate).

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use comfy_table::{Cell, CellAlignment};
use polyprof::eval::ci_case;
use polyprof::pipeline::eval::ahead::{BuildQueue, Pending, may_run_ahead};
use polyprof::pipeline::eval::bystanders::Bystanders;
use polyprof::pipeline::eval::{EvalOutcome, EvalSpec, WarmEvaluator, evaluate, evaluate_prepared};
use polyprof::results::escape::terminal;
use serde::Serialize;

use super::eval_exit::{EXIT_EVAL_FAILED, EXIT_NOT_PASSED, EXIT_PASSED};
use super::run::cancel_on_signals;

/// File name of the rows in the output directory.
pub const EVALS_FILE: &str = "evals.json";

/// One candidate's row (`evals.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The candidate file, as found in the directory.
    pub candidate: String,
    /// Its eval directory.
    pub dir: String,
    pub passed: bool,
    /// `correct`, `incorrect`, `failed`; `not_run` when the eval could not begin.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup: Option<polyprof::model::batch::SpeedupSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score_ms: Option<f64>,
    pub findings: Vec<String>,
    /// Seconds of its judged turn (the trusted worker and the device); 0 when it never began
    /// (a failed build, an eval that could not begin).
    pub device_seconds: f64,
    /// Why it stopped early (`raised`, …) or could not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Whether the eval itself ran (not a harness or reference failure).
    #[serde(skip)]
    pub ran: bool,
}

impl Row {
    /// The row of a candidate whose eval could not begin.
    pub fn not_run(candidate: &Path, dir: &Path, why: &str) -> Row {
        Row {
            candidate: candidate.display().to_string(),
            dir: dir.display().to_string(),
            passed: false,
            status: "not_run".into(),
            speedup: None,
            score_ms: None,
            findings: Vec::new(),
            device_seconds: 0.0,
            failure: Some(why.to_string()),
            ran: false,
        }
    }
}

/// The `*.py` files of `dir`, sorted by name.
pub fn candidates(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list the candidate directory {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    if files.is_empty() {
        anyhow::bail!(
            "the candidate directory {} holds no `*.py` file; give a candidate file or a directory of them",
            dir.display()
        );
    }
    Ok(files)
}

/// The exit status of the whole directory: 0 when every candidate passed, 2 when none could
/// be evaluated, else 1.
pub fn exit_code(rows: &[Row]) -> u8 {
    if rows.iter().all(|r| r.passed) {
        EXIT_PASSED
    } else if rows.iter().all(|r| !r.ran) {
        EXIT_EVAL_FAILED
    } else {
        EXIT_NOT_PASSED
    }
}

pub fn row_of(candidate: &Path, dir: &Path, outcome: &EvalOutcome) -> Row {
    let verdict = &outcome.verdict;
    Row {
        candidate: candidate.display().to_string(),
        dir: dir.display().to_string(),
        passed: verdict.passed,
        status: snake(&verdict.status),
        speedup: verdict
            .timing
            .as_ref()
            .map(|t| polyprof::model::batch::SpeedupSummary {
                value: t.speedup.value,
                ci_low: t.speedup.ci_low,
                ci_high: t.speedup.ci_high,
            }),
        score_ms: verdict.timing.as_ref().map(|t| t.score_ms),
        findings: verdict.findings.iter().map(|f| snake(&f.kind)).collect(),
        device_seconds: outcome.evidence.judged.as_ref().map_or(0.0, |j| j.seconds),
        failure: verdict.failure.as_ref().map(|f| snake(&f.kind)),
        ran: !outcome.harness_failed(),
    }
}

/// The JSON spelling of a verdict's enum (`inputs_modified`).
fn snake<T: Serialize + std::fmt::Debug>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{value:?}"))
}

/// Where a run of many candidates goes: `output_dir`, else the next free
/// `OUTPUT_ROOT/evals.NNN` (the configured output root).
pub fn root_of(output_dir: Option<&Path>, output_root: &Path) -> anyhow::Result<PathBuf> {
    match output_dir {
        Some(dir) => Ok(dir.to_path_buf()),
        None => free_dir(output_root),
    }
}

/// Evaluate every candidate of `candidates_dir` into `root` (`root_of`); `make_spec` gives
/// one candidate's eval into its directory.
pub async fn execute(
    candidates_dir: &Path,
    root: PathBuf,
    json_out: bool,
    ci: &super::ci_output::CiArgs,
    reference: &Path,
    judging: Judging,
    make_spec: impl Fn(&Path, PathBuf) -> EvalSpec,
) -> anyhow::Result<u8> {
    let Judging { warm, build_jobs } = judging;
    let files = candidates(candidates_dir)?;
    std::fs::create_dir_all(&root)
        .with_context(|| format!("cannot create the output directory {}", root.display()))?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let kill_now = tokio_util::sync::CancellationToken::new();
    cancel_on_signals(cancel.clone(), kill_now.clone());
    let mut rows = Vec::new();
    let mut cases = Vec::new();
    // One trusted worker for the whole directory (docs/eval-harness.md, "The warm evaluator").
    let mut warm = warm.then(|| WarmEvaluator::new(&root));
    // Builds run `build_jobs` at a time, ahead of the judged turns, at most `window` ahead.
    let queue = (build_jobs > 0).then(|| BuildQueue::new(build_jobs));
    let window = build_window(build_jobs);
    // The workers started ahead, held still while any candidate's timing block runs.
    let bystanders = Bystanders::default();
    let mut waiting: VecDeque<Waiting> = files
        .iter()
        .enumerate()
        .map(|(order, file)| {
            let stem = file
                .file_stem()
                .map_or_else(|| "candidate".into(), |s| s.to_string_lossy().into_owned());
            let dir = root.join(&stem);
            let mut spec = make_spec(file, dir.clone());
            spec.cancel = cancel.clone();
            spec.kill_now = kill_now.clone();
            spec.bystanders = bystanders.clone();
            Waiting {
                order,
                file: file.clone(),
                dir,
                spec,
                pending: None,
                prestarts: None,
            }
        })
        .collect();
    top_up(&mut waiting, queue.as_ref(), window);
    if let (Some(evaluator), Some(first)) = (warm.as_mut(), waiting.front()) {
        // The trusted worker's start beside the builds. A start that cannot begin is left to the
        // first turn, which says why.
        if let Err(e) = evaluator.start_trusted_ahead(&first.spec).await {
            tracing::debug!(error = %e, "the trusted worker was not started ahead");
        }
    }
    if warm.is_some() {
        // The first candidate's worker starts as soon as its build is done.
        prestart_next(&mut waiting, window);
    }
    while let Some(Waiting {
        order,
        file,
        dir,
        spec,
        pending,
        ..
    }) = next_turn(&mut waiting, window).await
    {
        if cancel.is_cancelled() {
            break;
        }
        top_up(&mut waiting, queue.as_ref(), window);
        if warm.is_some() {
            prestart_next(&mut waiting, window);
        }
        let started = std::time::Instant::now();
        let result = judge_one(warm.as_mut(), &spec, pending).await;
        let seconds = started.elapsed().as_secs_f64();
        let row = match result {
            Ok(outcome) => {
                cases.push((
                    order,
                    ci_case::case(&file.display().to_string(), &outcome.verdict, Some(seconds)),
                ));
                row_of(&file, &outcome.dir, &outcome)
            }
            Err(e) => {
                cases.push((
                    order,
                    ci_case::not_run_case(&file.display().to_string(), &e.to_string()),
                ));
                Row::not_run(&file, &dir, &e.to_string())
            }
        };
        rows.push((order, row));
    }
    // Judged as their builds finished: reported in the directory's order.
    rows.sort_by_key(|(order, _)| *order);
    cases.sort_by_key(|(order, _)| *order);
    let rows: Vec<Row> = rows.into_iter().map(|(_, row)| row).collect();
    let cases = cases.into_iter().map(|(_, case)| case).collect();
    if let Some(evaluator) = warm {
        evaluator.close().await;
    }
    if ci.wanted() {
        ci.write(&ci_case::suite(&reference.display().to_string(), cases))?;
    }
    let json = serde_json::to_vec_pretty(&rows).context("cannot serialize the rows")?;
    let path = root.join(EVALS_FILE);
    polyprof::model::atomic_file::write_atomic(&path, &json)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let mut out = std::io::stdout().lock();
    if json_out {
        out.write_all(&json)?;
        writeln!(out)?;
    } else {
        super::width::fitted(&mut out, |buffer| print_table(buffer, &rows, &root))?;
    }
    out.flush()?;
    if cancel.is_cancelled() {
        return Ok(super::run::EXIT_CANCELLED);
    }
    Ok(exit_code(&rows))
}

/// How a run of many candidates is judged.
#[derive(Debug, Clone, Copy)]
pub struct Judging {
    /// Through one warm evaluator (else each cold).
    pub warm: bool,
    /// Builds run ahead this many at a time (0: each right before its own turn).
    pub build_jobs: usize,
}

/// One candidate waiting for its judged turn; its build perhaps under way.
pub struct Waiting {
    /// Its place in the order the candidates came in (rows are reported in it).
    pub order: usize,
    pub file: PathBuf,
    pub dir: PathBuf,
    pub spec: EvalSpec,
    /// Its build, once started ahead (`None`: not yet, or it builds right before its turn).
    pub pending: Option<Pending>,
    /// When its scored worker was started ahead of its turn, if it was.
    pub prestarts: Option<std::time::Instant>,
}

/// How many waiting candidates have their scored worker started ahead at once, through a warm
/// evaluator. A worker's interpreter and torch take about 3 s to load, and a candidate found
/// incorrect in its first trial ends its turn in 1.1-1.3 s, so a run of such candidates (the
/// common case in a training loop) needs about three workers loading at once. One was too few
/// (2-3 s setups after such turns, H100, 2026-12-07); with two, the third of three quick turns
/// in a row still waited 1.0-2.1 s in its setup on 7 of 10 problems (H100, 2026-12-07).
/// Each one ahead holds a process and its memory (no device context: it initializes none
/// before its `setup`), held still during timing blocks.
pub const PRESTART_DEPTH: usize = 3;

/// Through a warm evaluator, the scored workers of the candidates likeliest to be judged next
/// start as soon as their builds are done (`Pending::then_prestart`; held still while the
/// current candidate's timing blocks run), until `PRESTART_DEPTH` of the build window have one:
/// first those whose build has finished, then the first still building. Only one whose build
/// ran ahead (it is confined like its build).
pub fn prestart_next(waiting: &mut VecDeque<Waiting>, window: usize) {
    let states: Vec<Prestart> = waiting
        .iter()
        .take(window.max(1))
        .map(|w| Prestart {
            started: w.prestarts.is_some(),
            build: w.pending.as_ref().map(Pending::is_finished),
        })
        .collect();
    for i in prestart_picks(&states, PRESTART_DEPTH) {
        if let Some(next) = waiting.get_mut(i)
            && let Some(pending) = next.pending.take()
        {
            next.pending = Some(pending.then_prestart(next.spec.clone()));
            next.prestarts = Some(std::time::Instant::now());
        }
    }
}

/// A waiting candidate of the build window, as `prestart_picks` sees it.
#[derive(Debug, Clone, Copy)]
struct Prestart {
    /// Its scored worker is started (or starts once its build is done).
    started: bool,
    /// Its build ran ahead: finished (`true`) or not yet; `None`: it builds in its own turn.
    build: Option<bool>,
}

/// The positions whose scored workers start now, in that order, so that `depth` of `window`
/// have one: unstarted ones whose build ran ahead, those whose build has finished first, then
/// the earliest still building.
fn prestart_picks(window: &[Prestart], depth: usize) -> Vec<usize> {
    let started = window.iter().filter(|w| w.started).count();
    let unstarted_with = |built: bool| {
        (0..window.len()).filter(move |&i| !window[i].started && window[i].build == Some(built))
    };
    unstarted_with(true)
        .chain(unstarted_with(false))
        .take(depth.saturating_sub(started))
        .collect()
}

/// The next candidate to judge: of the build window, the one whose worker started ahead earliest
/// (its interpreter and torch have had longest to load) among those whose build is done, else
/// the first whose build is done or that builds in its own turn; else the first to finish its
/// build. The device never waits on a slow build (a compile error that takes nvcc 20 s) while a
/// later candidate is ready. `None`: nothing is waiting.
pub async fn next_turn(waiting: &mut VecDeque<Waiting>, window: usize) -> Option<Waiting> {
    /// How often unfinished builds are looked at while every candidate waits on one.
    const POLL: std::time::Duration = std::time::Duration::from_millis(20);
    loop {
        if waiting.is_empty() {
            return None;
        }
        let turns: Vec<Turn> = waiting
            .iter()
            .take(window.max(1))
            .map(|w| Turn {
                prestarted: w.prestarts,
                ready: w.pending.as_ref().is_none_or(Pending::is_finished),
            })
            .collect();
        if let Some(i) = turn_pick(&turns) {
            return waiting.remove(i);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A waiting candidate of the build window, as `turn_pick` sees it.
#[derive(Debug, Clone, Copy)]
struct Turn {
    /// When its scored worker started ahead, if it did.
    prestarted: Option<std::time::Instant>,
    /// Its build is done, or it builds in its own turn.
    ready: bool,
}

/// The position of the next turn: the earliest started ahead of the ready ones, else the
/// first ready one. A worker started at the beginning of the current turn is not loaded yet
/// (2 s setups on an H100 when it went first because it came first in the directory).
fn turn_pick(window: &[Turn]) -> Option<usize> {
    let ready = || window.iter().enumerate().filter(|(_, w)| w.ready);
    ready()
        .filter_map(|(i, w)| w.prestarted.map(|at| (at, i)))
        .min()
        .map(|(_, i)| i)
        .or_else(|| ready().map(|(i, _)| i).next())
}

/// How many waiting candidates may be built ahead at once: twice the build jobs, so the next
/// turns never wait for a build while the build folders waiting on disk stay few (a torch
/// extension's can hold tens of MB).
pub fn build_window(build_jobs: usize) -> usize {
    build_jobs.saturating_mul(2)
}

/// Start the builds of the first `window` waiting candidates, in order, where builds may run
/// ahead ([`may_run_ahead`]); the others build right before their turns.
pub fn top_up(waiting: &mut VecDeque<Waiting>, queue: Option<&BuildQueue>, window: usize) {
    let Some(queue) = queue else {
        return;
    };
    for candidate in waiting.iter_mut().take(window) {
        if candidate.pending.is_none() && may_run_ahead(&candidate.spec) {
            candidate.pending = Some(queue.submit(candidate.spec.clone()));
        }
    }
}

/// Judge one candidate (warm or cold), its build taken from `pending` when it ran ahead.
pub async fn judge_one(
    warm: Option<&mut WarmEvaluator>,
    spec: &EvalSpec,
    pending: Option<Pending>,
) -> polyprof::model::error::Result<EvalOutcome> {
    let prepared = match pending {
        Some(pending) => Some(pending.ready().await?),
        None => None,
    };
    match (warm, prepared) {
        (Some(evaluator), Some(prepared)) => evaluator.evaluate_prepared(spec, prepared).await,
        (Some(evaluator), None) => evaluator.evaluate(spec).await,
        (None, Some(prepared)) => evaluate_prepared(spec, prepared).await,
        (None, None) => evaluate(spec).await,
    }
}

/// The first `evals.NNN` under `parent` that does not exist yet.
fn free_dir(parent: &Path) -> anyhow::Result<PathBuf> {
    (0..1000)
        .map(|n| parent.join(format!("evals.{n:03}")))
        .find(|p| !p.exists())
        .with_context(|| {
            format!(
                "no free evals.NNN under {}; give --output-dir",
                parent.display()
            )
        })
}

/// One row per candidate: status, speedup with its interval, score, findings.
pub fn print_table(out: &mut impl Write, rows: &[Row], root: &Path) -> std::io::Result<()> {
    let mut table = super::width::table();
    table.set_header([
        "candidate",
        "status",
        "speedup (CI)",
        "score ms",
        "findings",
    ]);
    for r in rows {
        let name = Path::new(&r.candidate)
            .file_name()
            .map_or_else(|| r.candidate.clone(), |n| n.to_string_lossy().into_owned());
        let status = match (&r.failure, r.passed) {
            (_, true) => "passed".to_string(),
            (Some(f), false) => format!("{} ({f})", r.status),
            (None, false) => format!("not passed ({})", r.status),
        };
        let speedup = r.speedup.map_or("-".to_string(), |s| {
            format!("{:.2}× [{:.2}–{:.2}]", s.value, s.ci_low, s.ci_high)
        });
        // Candidate file names and failures are the candidates': shown, never sent.
        table.add_row(vec![
            Cell::new(terminal::line(&name)),
            Cell::new(terminal::line(&status)),
            Cell::new(speedup).set_alignment(CellAlignment::Right),
            Cell::new(r.score_ms.map_or("-".to_string(), |ms| format!("{ms:.4}")))
                .set_alignment(CellAlignment::Right),
            Cell::new(if r.findings.is_empty() {
                "-".to_string()
            } else {
                r.findings.join(", ")
            }),
        ]);
    }
    super::width::keep_whole(&mut table, 0);
    writeln!(out, "{}", super::width::render(&table))?;
    let passed = rows.iter().filter(|r| r.passed).count();
    writeln!(
        out,
        "polyprof eval: {passed} of {} candidate(s) passed; each eval in {}/<name>/, rows in {}",
        rows.len(),
        root.display(),
        root.join(EVALS_FILE).display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(passed: bool, ran: bool) -> Row {
        Row {
            candidate: "d/c.py".into(),
            dir: "o/c".into(),
            passed,
            status: if passed { "correct" } else { "failed" }.into(),
            speedup: None,
            score_ms: None,
            findings: Vec::new(),
            device_seconds: 0.0,
            failure: None,
            ran,
        }
    }

    #[test]
    fn exit_status_over_a_directory() {
        assert_eq!(exit_code(&[row(true, true), row(true, true)]), EXIT_PASSED);
        assert_eq!(
            exit_code(&[row(true, true), row(false, true)]),
            EXIT_NOT_PASSED
        );
        assert_eq!(
            exit_code(&[row(true, true), row(false, false)]),
            EXIT_NOT_PASSED
        );
        assert_eq!(
            exit_code(&[row(false, false), row(false, false)]),
            EXIT_EVAL_FAILED
        );
    }

    fn slot(started: bool, build: Option<bool>) -> Prestart {
        Prestart { started, build }
    }

    #[test]
    fn workers_start_ahead_up_to_the_depth_built_ones_first() {
        let built = slot(false, Some(true));
        let building = slot(false, Some(false));
        let started = slot(true, Some(false));
        let own_turn = slot(false, None);
        let window = [building, own_turn, built, building];
        // Two to start: the built one first, then the earliest still building.
        assert_eq!(prestart_picks(&window, 2), [2, 0]);
        // Three (the default): then the next still building; never one that builds in its turn.
        assert_eq!(prestart_picks(&window, PRESTART_DEPTH), [2, 0, 3]);
        // One already started: the rest of the depth.
        assert_eq!(prestart_picks(&[started, building, built], 2), [2]);
        assert_eq!(prestart_picks(&[started, building, built], 3), [2, 1]);
        // Enough started, or nothing built ahead: none.
        assert!(prestart_picks(&[started, started, built], 2).is_empty());
        assert!(prestart_picks(&[started, started, started, built], PRESTART_DEPTH).is_empty());
        assert!(prestart_picks(&[own_turn, own_turn], PRESTART_DEPTH).is_empty());
        assert!(prestart_picks(&[], PRESTART_DEPTH).is_empty());
    }

    #[test]
    fn the_turn_goes_to_the_worker_started_earliest_then_to_the_first_ready() {
        let origin = std::time::Instant::now();
        let at = |s: u64| Some(origin + std::time::Duration::from_secs(s));
        let turn = |prestarted, ready| Turn { prestarted, ready };
        // Started at 7 s (this turn) and at 3 s (a turn earlier): the one at 3 s goes first.
        assert_eq!(
            turn_pick(&[turn(at(7), true), turn(at(3), true), turn(None, true)]),
            Some(1)
        );
        // The earliest is still building: the earliest of the ready ones.
        assert_eq!(
            turn_pick(&[turn(at(9), true), turn(at(3), false), turn(at(5), true)]),
            Some(2)
        );
        // None started ahead: the first ready one; none ready: none.
        assert_eq!(turn_pick(&[turn(None, false), turn(None, true)]), Some(1));
        assert_eq!(turn_pick(&[turn(at(1), false), turn(None, false)]), None);
    }

    #[test]
    fn candidates_are_the_sorted_python_files() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.py", "a.py", "notes.txt"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub.py")).unwrap();
        let names: Vec<String> = candidates(dir.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.py", "b.py"]);
        let empty = tempfile::tempdir().unwrap();
        assert!(
            candidates(empty.path())
                .unwrap_err()
                .to_string()
                .contains("no `*.py`")
        );
    }
}
