//! `polyprof eval --reference R --candidate -`: candidate files read from stdin, one path a
//! line, each judged as it arrives through one warm evaluator (or cold with `--cold`) into
//! `OUTPUT_DIR/NNNNN-<stem>/`, and one JSON line per candidate on stdout, flushed at once, as
//! each is judged (as builds finish): `index` says which path it answers (its place among the
//! paths read, from 0). The Python `Evaluator` keeps one of these open (docs/eval.md).

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use polyprof::pipeline::eval::ahead::BuildQueue;
use polyprof::pipeline::eval::bystanders::Bystanders;
use polyprof::pipeline::eval::{EvalSpec, WarmEvaluator};

use super::eval_many::{
    Judging, Row, Waiting, build_window, judge_one, next_turn, prestart_next, row_of, top_up,
};
use super::run::cancel_on_signals;

/// Judge every candidate named on stdin until EOF (exit 0), or a signal (130). Lines that
/// arrive while a candidate is judged start their builds at once (`build_jobs` at a time).
pub async fn execute(
    root: PathBuf,
    judging: Judging,
    make_spec: impl Fn(&Path, PathBuf) -> EvalSpec,
) -> anyhow::Result<u8> {
    let Judging { warm, build_jobs } = judging;
    std::fs::create_dir_all(&root)
        .with_context(|| format!("cannot create the output directory {}", root.display()))?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let kill_now = tokio_util::sync::CancellationToken::new();
    cancel_on_signals(cancel.clone(), kill_now.clone());
    let mut evaluator = warm.then(|| WarmEvaluator::new(&root));
    let queue = (build_jobs > 0).then(|| BuildQueue::new(build_jobs));
    let window = build_window(build_jobs);
    let mut lines = stdin_lines();
    let mut waiting: VecDeque<Waiting> = VecDeque::new();
    let mut count: u32 = 0;
    let mut open = true;
    // The workers started ahead, held still while any candidate's timing block runs.
    let bystanders = Bystanders::default();
    let take = |line: String, count: &mut u32| -> Option<Waiting> {
        let path = line.trim();
        if path.is_empty() {
            return None;
        }
        let file = PathBuf::from(path);
        let stem = file
            .file_stem()
            .map_or_else(|| "candidate".into(), |s| s.to_string_lossy().into_owned());
        let order = *count as usize;
        let dir = root.join(format!("{count:05}-{stem}"));
        *count += 1;
        let mut spec = make_spec(&file, dir.clone());
        spec.cancel = cancel.clone();
        spec.kill_now = kill_now.clone();
        spec.bystanders = bystanders.clone();
        Some(Waiting {
            order,
            file,
            dir,
            spec,
            pending: None,
            prestarts: None,
        })
    };
    loop {
        if waiting.is_empty() {
            if !open {
                break;
            }
            let line = tokio::select! {
                line = lines.recv() => line.transpose().context("cannot read a candidate path from stdin")?,
                () = cancel.cancelled() => None,
            };
            match line {
                Some(line) => {
                    waiting.extend(take(line, &mut count));
                    top_up(&mut waiting, queue.as_ref(), window);
                }
                None => open = false,
            }
            continue;
        }
        // Judged as builds finish; each line names its candidate by `index`.
        let Some(next) = next_turn(&mut waiting, window).await else {
            continue;
        };
        if cancel.is_cancelled() {
            break;
        }
        top_up(&mut waiting, queue.as_ref(), window);
        let warm = evaluator.is_some();
        if warm {
            prestart_next(&mut waiting, window);
        }
        let started = std::time::Instant::now();
        let judged = judge_one(evaluator.as_mut(), &next.spec, next.pending);
        tokio::pin!(judged);
        // While it is judged, later lines are read and their builds started.
        let result = loop {
            tokio::select! {
                result = &mut judged => break result,
                line = lines.recv(), if open => match line {
                    Some(line) => {
                        let line = line.context("cannot read a candidate path from stdin")?;
                        waiting.extend(take(line, &mut count));
                        top_up(&mut waiting, queue.as_ref(), window);
                        if warm {
                            prestart_next(&mut waiting, window);
                        }
                    }
                    None => open = false,
                },
            }
        };
        let seconds = started.elapsed().as_secs_f64();
        let (row, reused) = match result {
            Ok(outcome) => {
                let reused = outcome
                    .evidence
                    .reference_timing
                    .as_ref()
                    .is_some_and(|t| !t.reused_blocks.is_empty());
                (row_of(&next.file, &outcome.dir, &outcome), reused)
            }
            Err(e) => (Row::not_run(&next.file, &next.dir, &e.to_string()), false),
        };
        let line = serde_json::json!({
            "index": next.order,
            "row": row,
            "seconds": seconds,
            "device_seconds": row.device_seconds,
            "reference_reused": reused,
        });
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &line).context("cannot print a row")?;
        writeln!(out)?;
        out.flush()?;
    }
    if let Some(evaluator) = evaluator {
        evaluator.close().await;
    }
    if cancel.is_cancelled() {
        return Ok(super::run::EXIT_CANCELLED);
    }
    Ok(0)
}

/// Stdin's lines from a thread of their own (a blocking read must not hold the runtime); the
/// channel closes at EOF.
fn stdin_lines() -> tokio::sync::mpsc::Receiver<std::io::Result<String>> {
    let (send, receive) = tokio::sync::mpsc::channel(16);
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let failed = line.is_err();
            if send.blocking_send(line).is_err() || failed {
                break;
            }
        }
    });
    receive
}
