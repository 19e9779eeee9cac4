//! `polyprof eval --reference R --candidate -`: candidate files read from stdin, one path a
//! line, each judged as it arrives through one warm evaluator (or cold with `--cold`) into
//! `OUTPUT_DIR/NNNNN-<stem>/`, and one JSON line per candidate on stdout, flushed at once, in
//! the order they came. The Python `Evaluator` keeps one of these open (docs/eval.md).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use polyprof::pipeline::eval::{EvalSpec, WarmEvaluator, evaluate};

use super::eval_many::{Row, row_of};
use super::run::cancel_on_signals;

/// Judge every candidate named on stdin until EOF (exit 0), or a signal (130).
pub async fn execute(
    root: PathBuf,
    warm: bool,
    make_spec: impl Fn(&Path, PathBuf) -> EvalSpec,
) -> anyhow::Result<u8> {
    std::fs::create_dir_all(&root)
        .with_context(|| format!("cannot create the output directory {}", root.display()))?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let kill_now = tokio_util::sync::CancellationToken::new();
    cancel_on_signals(cancel.clone(), kill_now.clone());
    let mut evaluator = warm.then(|| WarmEvaluator::new(&root));
    let mut lines = stdin_lines();
    let mut count: u32 = 0;
    loop {
        let line = tokio::select! {
            line = lines.recv() => line.transpose().context("cannot read a candidate path from stdin")?,
            () = cancel.cancelled() => None,
        };
        let Some(line) = line else {
            break;
        };
        let path = line.trim();
        if path.is_empty() {
            continue;
        }
        let file = PathBuf::from(path);
        let stem = file
            .file_stem()
            .map_or_else(|| "candidate".into(), |s| s.to_string_lossy().into_owned());
        let dir = root.join(format!("{count:05}-{stem}"));
        count += 1;
        let mut spec = make_spec(&file, dir.clone());
        spec.cancel = cancel.clone();
        spec.kill_now = kill_now.clone();
        let started = std::time::Instant::now();
        let result = match evaluator.as_mut() {
            Some(evaluator) => evaluator.evaluate(&spec).await,
            None => evaluate(&spec).await,
        };
        let seconds = started.elapsed().as_secs_f64();
        let (row, reused) = match result {
            Ok(outcome) => {
                let reused = outcome
                    .evidence
                    .reference_timing
                    .as_ref()
                    .is_some_and(|t| !t.reused_blocks.is_empty());
                (row_of(&file, &outcome.dir, &outcome), reused)
            }
            Err(e) => (Row::not_run(&file, &dir, &e.to_string()), false),
        };
        let line = serde_json::json!({
            "row": row,
            "seconds": seconds,
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
