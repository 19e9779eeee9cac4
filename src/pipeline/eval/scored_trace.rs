//! The scored pass traced (docs/eval-harness.md, "The GPU timeline"): the candidate's worker runs
//! under the backend's GPU tracer for its whole life, every request but `setup` and `bye`
//! carries marker sizes drawn for it alone, and what was sent and what the tracer wrote go into
//! the evidence (`ScoredTrace`), where the audit judges the calls on the GPU timeline. With it,
//! the separate witness pass is not taken: the scored pass is the witnessed pass.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::protocol::Message;
use super::seeds::SeedSource;
use super::spec::{Device, EvalSpec};
use super::tracer;
use crate::eval::evidence::{RecordsFile, ScoredTrace, SentRequest};
use crate::eval::timeline::{MarkedRequest, RequestMarks};
use crate::profilers::tracer::GpuTracer;

/// The folder of the eval directory the tracer writes into (removed once read).
pub const TRACE_DIR: &str = "scored-trace";
/// The trusted worker's tracer folder, in its run's directory (never read).
pub const REFERENCE_TRACE_DIR: &str = "reference-trace";
/// The file of the eval directory its records are kept in (`model::gpu_trace_file`).
pub const RECORDS_FILE: &str = "scored-trace.json.gz";
/// Marker sizes: multiples of 16 bytes in [4 KiB, 1 MiB) (the worker's mark buffer is 1 MiB).
const MARK_MIN: u64 = 4 << 10;
const MARK_END: u64 = 1 << 20;
const MARK_STEP: u64 = 16;
/// A record file larger than this is not read (a flood of launches to exhaust the audit): the
/// timeline is then not judged, and a check that did not run fails `passed`.
const MAX_TRACE_BYTES: u64 = 256 << 20;

/// What loads the tracer into one worker: its variables, the folder it writes and the folder
/// its library is read from (both granted by the sandbox).
#[derive(Debug, Clone)]
pub struct TraceLoad {
    pub env: BTreeMap<String, String>,
    pub write: PathBuf,
    pub read: PathBuf,
}

/// The tracer of this eval's scored pass.
#[derive(Debug)]
pub struct ScoredTracing {
    tracer: &'static GpuTracer,
    library: PathBuf,
    dir: PathBuf,
    /// Every marker size drawn in this eval: never repeated, so each mark names one request.
    drawn: HashSet<u64>,
}

/// Whether `spec`'s scored pass is traced: `None` when it is not asked for or not possible (not
/// CUDA, `--scored-trace off`, a witness profiler without a tracer); else the tracer, built (at
/// first use, into the user's cache), or why it could not be.
pub async fn plan(spec: &EvalSpec) -> Option<Result<(&'static GpuTracer, PathBuf), String>> {
    if spec.device != Device::Cuda || !spec.options.scored_trace {
        return None;
    }
    let profiler = spec.options.witness_profiler.as_deref()?;
    let tracer = crate::profilers::tracers::gpu_tracer(profiler)?;
    let root = crate::pipeline::injection::default_root(Path::new("."));
    Some(
        tracer::build(tracer, &root, &spec.cancel)
            .await
            .map(|library| (tracer, library))
            .map_err(|e| e.to_string()),
    )
}

impl ScoredTracing {
    pub fn new(tracer: &'static GpuTracer, library: PathBuf, eval_dir: &Path) -> Self {
        ScoredTracing {
            tracer,
            library,
            dir: eval_dir.join(TRACE_DIR),
            drawn: HashSet::new(),
        }
    }

    /// The evidence's record before anything ran.
    pub fn evidence(&self) -> ScoredTrace {
        ScoredTrace {
            tracer: self.tracer.library.name.to_string(),
            dir: TRACE_DIR.to_string(),
            ..ScoredTrace::default()
        }
    }

    /// The variables and folders that load the tracer into the candidate's worker (its record
    /// folder created here).
    pub fn load(&self) -> Result<TraceLoad, tracer::TracerError> {
        self.load_into(&self.dir)
    }

    /// The same tracer for the trusted worker, into `dir` (never read): the reference is timed
    /// under the tracer's cost as the candidate is, so the speedup compares like with like.
    pub fn load_for_reference(&self, dir: &Path) -> Result<TraceLoad, tracer::TracerError> {
        self.load_into(dir)
    }

    fn load_into(&self, dir: &Path) -> Result<TraceLoad, tracer::TracerError> {
        Ok(TraceLoad {
            env: tracer::load_env(self.tracer, &self.library, dir)?,
            write: dir.to_path_buf(),
            read: self
                .library
                .parent()
                .map_or_else(|| self.library.clone(), Path::to_path_buf),
        })
    }

    /// Mark `request` (drawn now, just before it is sent) and record it as sent.
    pub fn mark(
        &mut self,
        request: &mut Message,
        random: &mut SeedSource,
        record: &mut ScoredTrace,
    ) -> std::io::Result<()> {
        let op = request.op().to_string();
        let marks = if op == "setup" || op == "bye" {
            None
        } else {
            let mut next = || random.random_u64();
            let marks = draw_marks(&mut next, &mut self.drawn)?;
            request.header.insert(
                "marks".into(),
                json!({"open": marks.open, "close": marks.close,
                       "call_open": marks.call_open, "call_close": marks.call_close}),
            );
            Some(marks)
        };
        record.requests.push(SentRequest {
            request: MarkedRequest {
                op,
                trial: request.get("trial").and_then(Value::as_u64),
                marks,
                poison_bytes: request.get("poison").map(poison_bytes).unwrap_or_default(),
            },
            reported_times_ms: None,
        });
        Ok(())
    }

    /// Every record file the tracer wrote, into `record` (or why they could not be read), then
    /// kept in one compressed file (`RECORDS_FILE`), and the tracer's folder (its raw files and
    /// module images) removed.
    pub fn read(&self, record: &mut ScoredTrace) {
        self.read_raw(record);
        if record.error.is_some() {
            return;
        }
        let kept =
            crate::model::gpu_trace_file::encode(&record.traces).and_then(|(bytes, sha256)| {
                let path = self.dir.with_file_name(RECORDS_FILE);
                crate::model::atomic_file::write_atomic(&path, &bytes)?;
                Ok(sha256)
            });
        match kept {
            Ok(sha256) => {
                record.records = Some(RecordsFile {
                    path: RECORDS_FILE.to_string(),
                    sha256,
                    activities: record
                        .traces
                        .iter()
                        .map(|t| t.activities.len() as u64)
                        .sum(),
                });
                let _ = std::fs::remove_dir_all(&self.dir);
            }
            Err(e) => {
                record.error = Some(format!("cannot keep the records in {RECORDS_FILE}: {e}"))
            }
        }
    }

    fn read_raw(&self, record: &mut ScoredTrace) {
        let too_large = std::fs::read_dir(&self.dir).ok().and_then(|entries| {
            entries.flatten().find_map(|entry| {
                let len = entry.metadata().ok()?.len();
                (len > MAX_TRACE_BYTES).then(|| (entry.file_name(), len))
            })
        });
        if let Some((name, len)) = too_large {
            record.error = Some(format!(
                "the record file {} holds {len} bytes, over the {MAX_TRACE_BYTES} read",
                name.to_string_lossy()
            ));
            return;
        }
        match tracer::read_traces(self.tracer, &self.dir) {
            Ok(traces) => record.traces = traces,
            Err(e) => record.error = Some(e.to_string()),
        }
    }
}

/// Every regular file of `dir` truncated to nothing (a tracer still appending to one goes on
/// from its new end).
pub fn empty_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_file())
            && let Ok(file) = std::fs::OpenOptions::new().write(true).open(entry.path())
        {
            let _ = file.set_len(0);
        }
    }
}

/// The times a `time` answer reported, onto the last request sent.
pub fn note_reported(record: &mut ScoredTrace, reply: &Message) {
    if let Some(sent) = record.requests.last_mut()
        && sent.request.op == "time"
    {
        sent.reported_times_ms = reply
            .get("times_ms")
            .and_then(|v| serde_json::from_value(v.clone()).ok());
    }
}

/// Four marker sizes never drawn before in this eval.
fn draw_marks(
    random: &mut dyn FnMut() -> std::io::Result<u64>,
    drawn: &mut HashSet<u64>,
) -> std::io::Result<RequestMarks> {
    let slots = (MARK_END - MARK_MIN) / MARK_STEP;
    let mut one = || -> std::io::Result<u64> {
        loop {
            let size = MARK_MIN + (random()? % slots) * MARK_STEP;
            if drawn.insert(size) {
                return Ok(size);
            }
        }
    };
    Ok(RequestMarks {
        open: one()?,
        close: one()?,
        call_open: one()?,
        call_close: one()?,
    })
}

/// The bytes of every poison block a request asks for (`nbytes` of each tensor spec, at any
/// depth: a pooled block lists one list per input set).
fn poison_bytes(poison: &Value) -> Vec<u64> {
    match poison {
        Value::Array(items) => items.iter().flat_map(poison_bytes).collect(),
        Value::Object(spec) => spec
            .get("nbytes")
            .and_then(Value::as_u64)
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_aligned_in_range_and_never_repeat() {
        let mut drawn = HashSet::new();
        // A source that keeps repeating itself: repeats are drawn again, not reused.
        let mut values = [7u64, 7, 7, 8, 9, 10, 11].into_iter().cycle();
        let mut next = || Ok(values.next().unwrap_or(0));
        let first = draw_marks(&mut next, &mut drawn).unwrap();
        let sizes = [first.open, first.close, first.call_open, first.call_close];
        assert_eq!(
            sizes,
            [4096 + 7 * 16, 4096 + 8 * 16, 4096 + 9 * 16, 4096 + 10 * 16]
        );
        let mut source = SeedSource::open().unwrap();
        for _ in 0..200 {
            let mut next = || source.random_u64();
            let m = draw_marks(&mut next, &mut drawn).unwrap();
            for size in [m.open, m.close, m.call_open, m.call_close] {
                assert!((MARK_MIN..MARK_END).contains(&size) && size % MARK_STEP == 0);
            }
        }
        assert_eq!(drawn.len(), 4 * 201);
    }

    #[test]
    fn every_request_but_setup_and_bye_is_marked_and_recorded() {
        let tracer = crate::profilers::tracers::gpu_tracer("ncu").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut tracing = ScoredTracing::new(tracer, dir.path().join("lib.so"), dir.path());
        let mut record = tracing.evidence();
        let mut random = SeedSource::open().unwrap();
        let poison = json!([{"dtype": "float32", "shape": [4], "nbytes": 16}]);
        let mut requests = vec![
            Message::request("setup", json!({"device": "cuda"})),
            Message::request("call", json!({"trial": 3, "poison": poison})),
            Message::request("time", json!({"trial": 3, "poison": [poison, poison]})),
            Message::request("bye", json!({})),
        ];
        for request in &mut requests {
            tracing.mark(request, &mut random, &mut record).unwrap();
        }
        let marked: Vec<bool> = requests.iter().map(|r| r.get("marks").is_some()).collect();
        assert_eq!(marked, [false, true, true, false]);
        let sent = &record.requests;
        assert_eq!(sent[1].request.trial, Some(3));
        assert_eq!(sent[1].request.poison_bytes, [16]);
        assert_eq!(sent[2].request.poison_bytes, [16, 16]);
        assert_eq!(
            sent[1].request.marks.map(|m| m.open),
            requests[1].get("marks").and_then(|m| m["open"].as_u64())
        );
        let reply = Message::request("time", json!({"times_ms": [0.5, 0.25]}));
        note_reported(&mut record, &reply);
        assert_eq!(record.requests[3].reported_times_ms, None, "bye was last");
        record.requests.truncate(3);
        note_reported(&mut record, &reply);
        assert_eq!(record.requests[2].reported_times_ms, Some(vec![0.5, 0.25]));
    }

    #[test]
    fn record_files_are_read_into_the_evidence_and_a_huge_one_is_refused() {
        let tracer = crate::profilers::tracers::gpu_tracer("ncu").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let tracing = ScoredTracing::new(tracer, dir.path().join("lib.so"), dir.path());
        let load = tracing.load().unwrap();
        assert_eq!(load.write, dir.path().join(TRACE_DIR));
        assert_eq!(load.read, dir.path());
        assert!(load.env.contains_key("CUDA_INJECTION64_PATH"));
        std::fs::write(
            load.write.join("trace-77.tsv"),
            "K\t1\t10\t20\t0\t7\t1\t1\t1\t32\t1\t1\t0\t0\t8\t0\tk\n",
        )
        .unwrap();
        let mut record = tracing.evidence();
        tracing.read(&mut record);
        assert_eq!(record.error, None);
        assert_eq!(record.traces.len(), 1);
        assert_eq!(record.traces[0].pid, 77);
        // Kept in one file, whose digest the evidence holds; the raw folder is gone.
        let kept = record.records.clone().unwrap();
        assert_eq!(kept.activities, 1);
        let bytes = std::fs::read(dir.path().join(&kept.path)).unwrap();
        let back = crate::model::gpu_trace_file::decode(&bytes, &kept.sha256).unwrap();
        assert_eq!(back, record.traces);
        assert!(!load.write.exists());
        std::fs::create_dir_all(&load.write).unwrap();
        let huge = std::fs::File::create(load.write.join("trace-78.tsv")).unwrap();
        huge.set_len(MAX_TRACE_BYTES + 1).unwrap();
        let mut record = tracing.evidence();
        tracing.read(&mut record);
        assert!(record.error.unwrap().contains("trace-78.tsv"));
    }
}
