//! `polyprof audit DIR`: judge a saved eval again, offline. Reads DIR/evidence.json, writes
//! DIR/verdict.json, prints the verdict. Exit 0 only when it passed, 1 when not, 2 when the
//! evidence cannot be read (or the verdict cannot be written).

use std::path::PathBuf;

use anyhow::Context;
use polyprof::eval::evidence_read::{attach_records, parse_evidence};
use polyprof::eval::judge;
use polyprof::model::atomic_file::write_atomic;

use super::eval_summary;
use super::output;

/// Exit code of a verdict that did not pass.
pub const EXIT_NOT_PASSED: u8 = 1;

/// Arguments of `polyprof audit`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The eval's output directory (holds evidence.json).
    pub dir: PathBuf,
    /// Print the verdict as JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let evidence_path = args.dir.join("evidence.json");
    // Regular files only: a FIFO named evidence.json would hang the read.
    let text = polyprof::model::input::read_regular(&evidence_path)
        .and_then(|bytes| {
            String::from_utf8(bytes).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text")
            })
        })
        .with_context(|| {
            format!(
                "cannot read {}; pass the directory `polyprof eval --output-dir` wrote",
                evidence_path.display()
            )
        })?;
    let mut evidence = parse_evidence(&text)
        .with_context(|| format!("cannot judge {}", evidence_path.display()))?;
    if let Some(records) = evidence.timeline.as_ref().and_then(|t| t.records.as_ref()) {
        // Only a plain name in the eval directory: the evidence cannot point the audit elsewhere.
        let path = std::path::Path::new(&records.path);
        let bytes = match path.file_name() {
            Some(name) if path.components().count() == 1 => {
                polyprof::model::input::read_regular(&args.dir.join(name))
                    .map_err(|e| format!("cannot read it: {e}"))
            }
            _ => Err("not a file name of the eval directory".to_string()),
        };
        attach_records(&mut evidence, bytes);
    }
    let verdict = judge(&evidence);
    let json = serde_json::to_string_pretty(&verdict)? + "\n";
    let verdict_path = args.dir.join("verdict.json");
    write_atomic(&verdict_path, json.as_bytes())
        .with_context(|| format!("cannot write {}", verdict_path.display()))?;
    if args.json {
        output::print(&json)?;
    } else {
        output::print(&eval_summary::render(&verdict))?;
    }
    Ok(if verdict.passed { 0 } else { EXIT_NOT_PASSED })
}
