//! Everything done with one stream's bytes: the raw log, the verbatim copy, line splitting, end
//! marker detection, bounded head and tail lines, live delivery. Synchronous; the reader task
//! feeds it chunks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::mpsc;

use super::echo::{Echo, EchoStream, EchoTo};
use super::logfile::{CopyWriter, LogWriter};
use super::marker::Detector;
use super::options::{Line, LineSink, RunOptions, StreamKind};
use super::splitter::{LineSplitter, LineVisitor, Piece, block_lines};
use crate::model::outcome::{MarkerSeen, StreamCapture};

/// Bytes of one line kept in memory in the head or tail.
pub const KEEP_LINE_BYTES: usize = 8 * 1024;
/// Raw bytes kept from the end of the stream to rebuild the tail lines.
const TAIL_RING_BYTES: usize = 64 * 1024;
const NONE: u64 = u64::MAX;
/// An unfinished line longer than this is not checked for the end marker until it ends.
const PARTIAL_MARKER_MAX: usize = 4096;

/// State shared by both streams of one run and the supervisor.
#[derive(Debug)]
pub struct Shared {
    pub start: Instant,
    first_output_ns: AtomicU64,
    last_output_ns: AtomicU64,
    marker_found: AtomicBool,
    marker_tx: mpsc::UnboundedSender<MarkerSeen>,
}

impl Shared {
    pub fn new(start: Instant, marker_tx: mpsc::UnboundedSender<MarkerSeen>) -> Self {
        Shared {
            start,
            first_output_ns: AtomicU64::new(NONE),
            last_output_ns: AtomicU64::new(0),
            marker_found: AtomicBool::new(false),
            marker_tx,
        }
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn saw_output(&self) {
        let now = self.now_ns();
        self.last_output_ns.store(now, Ordering::Relaxed);
        if self.first_output_ns.load(Ordering::Relaxed) == NONE {
            let _ = self.first_output_ns.compare_exchange(
                NONE,
                now,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    pub fn first_output_s(&self) -> Option<f64> {
        let ns = self.first_output_ns.load(Ordering::Relaxed);
        (ns != NONE).then(|| ns as f64 / 1e9)
    }

    /// When the last output arrived (or the start), as an instant.
    pub fn last_output(&self) -> Instant {
        self.start + std::time::Duration::from_nanos(self.last_output_ns.load(Ordering::Relaxed))
    }
}

/// The last bytes of a stream.
#[derive(Debug)]
struct TailRing {
    buf: Vec<u8>,
    pos: usize,
    total: u64,
}

impl TailRing {
    fn push(&mut self, mut bytes: &[u8]) {
        let cap = TAIL_RING_BYTES;
        self.total += bytes.len() as u64;
        if bytes.len() >= cap {
            bytes = &bytes[bytes.len() - cap..];
            self.buf.clear();
            self.buf.extend_from_slice(bytes);
            self.pos = 0;
            return;
        }
        if self.buf.len() < cap {
            let take = (cap - self.buf.len()).min(bytes.len());
            self.buf.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if bytes.is_empty() {
                return;
            }
        }
        let first = (cap - self.pos).min(bytes.len());
        self.buf[self.pos..self.pos + first].copy_from_slice(&bytes[..first]);
        self.buf[..bytes.len() - first].copy_from_slice(&bytes[first..]);
        self.pos = (self.pos + bytes.len()) % cap;
    }

    /// The bytes in order, and whether older bytes were dropped.
    fn linear(&self) -> (Vec<u8>, bool) {
        let mut out = Vec::with_capacity(self.buf.len());
        out.extend_from_slice(&self.buf[self.pos..]);
        out.extend_from_slice(&self.buf[..self.pos]);
        (out, self.total > self.buf.len() as u64)
    }
}

fn keep_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.len() <= KEEP_LINE_BYTES {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    format!(
        "{}…[{} more bytes]",
        String::from_utf8_lossy(&bytes[..KEEP_LINE_BYTES]),
        bytes.len() - KEEP_LINE_BYTES
    )
}

/// The part of the state the splitter hands lines to.
struct Consumer {
    kind: StreamKind,
    shared: Arc<Shared>,
    detector: Arc<Detector>,
    head: Vec<String>,
    head_max: usize,
    /// Index of the line being delivered (lines completed so far).
    line_index: u64,
    sink: Option<LineSink>,
    sink_dropped: u64,
}

impl Consumer {
    fn marker_wanted(&self) -> bool {
        self.detector.is_active() && !self.shared.marker_found.load(Ordering::Relaxed)
    }

    fn report_marker(&self, hit: super::marker::MarkerHit) {
        if !self.shared.marker_found.swap(true, Ordering::Relaxed) {
            let _ = self.shared.marker_tx.send(MarkerSeen {
                line: hit.line,
                passed: hit.passed,
                at_s: self.shared.now_ns() as f64 / 1e9,
            });
        }
    }

    fn keep_head(&mut self, bytes: &[u8]) {
        let index = self.line_index as usize;
        if index >= self.head_max {
            return;
        }
        match self.head.get_mut(index) {
            // Another piece of a long line already in the head.
            Some(entry) if entry.len() < KEEP_LINE_BYTES => {
                let room = KEEP_LINE_BYTES - entry.len();
                entry.push_str(&keep_text(&bytes[..bytes.len().min(room)]));
            }
            Some(_) => {}
            None => self.head.push(keep_text(bytes)),
        }
    }

    fn deliver(&mut self, bytes: &[u8], piece: Piece) {
        let Some(sink) = &self.sink else { return };
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let line = Line {
            stream: self.kind,
            text: String::from_utf8_lossy(bytes).into_owned(),
            piece: piece.split,
            continues: piece.continues,
            at_s: self.shared.now_ns() as f64 / 1e9,
        };
        match sink {
            LineSink::Callback(callback) => callback(&line),
            LineSink::Channel(tx) => {
                if tx.try_send(line).is_err() {
                    self.sink_dropped += 1;
                }
            }
        }
    }
}

impl LineVisitor for Consumer {
    fn line(&mut self, bytes: &[u8], piece: Piece) {
        if self.marker_wanted()
            && let Some(hit) = self.detector.check_line(bytes)
        {
            self.report_marker(hit);
        }
        self.keep_head(bytes);
        self.deliver(bytes, piece);
        if !piece.continues {
            self.line_index += 1;
        }
    }

    fn block(&mut self, block: &[u8], lines: u64) {
        if self.marker_wanted()
            && let Some(hit) = self.detector.scan_block(block)
        {
            self.report_marker(hit);
        }
        if (self.line_index as usize) < self.head_max || self.sink.is_some() {
            let start = self.line_index;
            for line in block_lines(block) {
                if (self.line_index as usize) >= self.head_max && self.sink.is_none() {
                    break;
                }
                self.keep_head(line);
                self.deliver(line, Piece::default());
                self.line_index += 1;
            }
            self.line_index = start;
        }
        self.line_index += lines;
    }
}

/// One stream being captured.
pub struct StreamState {
    splitter: LineSplitter,
    consumer: Consumer,
    tail: TailRing,
    tail_max: usize,
    log: Option<LogWriter>,
    copy: Option<CopyWriter>,
    echo: Option<EchoStream>,
    total_bytes: u64,
    warnings: Vec<String>,
}

/// Construction parameters of a [`StreamState`].
pub struct StreamSetup {
    pub kind: StreamKind,
    pub shared: Arc<Shared>,
    pub detector: Arc<Detector>,
    pub line_limit: usize,
    pub head_lines: usize,
    pub tail_lines: usize,
    pub log: Option<LogWriter>,
    pub copy: Option<CopyWriter>,
    pub sink: Option<LineSink>,
    pub echo: Option<Echo>,
}

impl StreamSetup {
    /// The setup of one stream of a run: limits, sink and echo from `opts`, the run's shared
    /// state and marker detector (local pipes and container log frames both use it).
    pub fn for_run(
        opts: &RunOptions,
        kind: StreamKind,
        shared: &Arc<Shared>,
        detector: &Arc<Detector>,
        log: Option<LogWriter>,
        copy: Option<CopyWriter>,
    ) -> Self {
        StreamSetup {
            kind,
            shared: shared.clone(),
            detector: detector.clone(),
            line_limit: opts.line_limit,
            head_lines: opts.head_lines,
            tail_lines: opts.tail_lines,
            log,
            copy,
            sink: opts.line_sink.clone(),
            echo: opts.echo.clone(),
        }
    }
}

impl StreamState {
    pub fn new(setup: StreamSetup) -> Self {
        StreamState {
            splitter: LineSplitter::new(setup.line_limit),
            consumer: Consumer {
                kind: setup.kind,
                shared: setup.shared,
                detector: setup.detector,
                head: Vec::new(),
                head_max: setup.head_lines,
                line_index: 0,
                sink: setup.sink,
                sink_dropped: 0,
            },
            tail: TailRing {
                buf: Vec::new(),
                pos: 0,
                total: 0,
            },
            tail_max: setup.tail_lines,
            log: setup.log,
            copy: setup.copy,
            echo: setup.echo.map(|echo| {
                let to = match setup.kind {
                    StreamKind::Stdout => EchoTo::Stdout,
                    StreamKind::Stderr => EchoTo::Main,
                };
                EchoStream::new(echo, to)
            }),
            total_bytes: 0,
            warnings: Vec::new(),
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        self.keep(chunk);
        if let Some(echo) = &mut self.echo {
            echo.feed(chunk);
        }
        self.splitter.feed(chunk, &mut self.consumer);
    }

    /// [`StreamState::feed`] of bytes `range` of the reader's `buffer`, which the echo may take
    /// (see [`EchoStream::feed_owned`]): `buffer` is then another one of the same length.
    pub fn feed_owned(&mut self, buffer: &mut Vec<u8>, range: std::ops::Range<usize>) {
        let chunk = &buffer[range.clone()];
        if chunk.is_empty() {
            return;
        }
        self.keep(chunk);
        self.splitter.feed(chunk, &mut self.consumer);
        if let Some(echo) = &mut self.echo {
            echo.feed_owned(buffer, range);
        }
    }

    /// The log, the verbatim copy, the tail and the counts.
    fn keep(&mut self, chunk: &[u8]) {
        self.consumer.shared.saw_output();
        self.total_bytes += chunk.len() as u64;
        // Raw bytes first: whatever happens next, they are on disk.
        if let Some(log) = &mut self.log {
            log.write(chunk);
        }
        if let Some(copy) = &mut self.copy {
            copy.write(chunk);
        }
        if self.tail_max > 0 {
            self.tail.push(chunk);
        }
    }

    /// Whether an unfinished line is waiting that could hold the end marker.
    pub fn partial_pending(&self) -> bool {
        let partial = self.splitter.partial();
        !partial.is_empty() && partial.len() <= PARTIAL_MARKER_MAX && self.consumer.marker_wanted()
    }

    /// The writer paused in the middle of a line: a summary printed without its newline before
    /// a hang would never be completed, so check the unfinished line as it stands.
    pub fn check_partial(&mut self) {
        if self.partial_pending()
            && let Some(hit) = self.consumer.detector.check_line(self.splitter.partial())
        {
            self.consumer.report_marker(hit);
        }
    }

    pub fn warn(&mut self, message: String) {
        self.warnings.push(message);
    }

    /// Close the logs and summarize. Returns the capture and any warnings.
    pub fn finish(mut self) -> (StreamCapture, Vec<String>) {
        self.splitter.finish(&mut self.consumer);
        if let Some(echo) = self.echo.take() {
            echo.finish();
        }
        let kind = self.consumer.kind.name();
        let mut warnings = self.warnings;
        let mut capture = StreamCapture {
            total_bytes: self.total_bytes,
            lines: self.splitter.lines(),
            long_lines_split: self.splitter.split_any(),
            ..Default::default()
        };
        if let Some(log) = self.log {
            let summary = log.finish();
            capture.log_truncated = summary.truncated;
            capture.log_path = Some(summary.path);
            warnings.extend(summary.error.map(|e| format!("{kind} log incomplete: {e}")));
        }
        if let Some(copy) = self.copy {
            warnings.extend(copy.error.map(|e| format!("{kind} copy incomplete: {e}")));
        }
        if self.consumer.sink_dropped > 0 {
            warnings.push(format!(
                "{} {kind} lines were not delivered to the full line channel (they are in the log)",
                self.consumer.sink_dropped
            ));
        }
        capture.head = self.consumer.head;
        capture.tail = tail_lines(&self.tail, capture.lines, capture.head.len(), self.tail_max);
        capture.lines_omitted = capture
            .lines
            .saturating_sub((capture.head.len() + capture.tail.len()) as u64);
        (capture, warnings)
    }
}

/// The last `max` lines not already in the head, rebuilt from the tail ring.
fn tail_lines(ring: &TailRing, total_lines: u64, in_head: usize, max: usize) -> Vec<String> {
    if max == 0 || total_lines <= in_head as u64 {
        return Vec::new();
    }
    let (bytes, cut) = ring.linear();
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let segments: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let count = segments.len() as u64;
    let first_index = total_lines.saturating_sub(count);
    let wanted = (total_lines - in_head as u64).min(max as u64) as usize;
    let skip = segments.len().saturating_sub(wanted);
    segments
        .iter()
        .enumerate()
        .skip(skip)
        .filter(|(i, _)| first_index + *i as u64 >= in_head as u64)
        .map(|(i, segment)| {
            let text = keep_text(segment);
            if i == 0 && cut {
                format!("…{text}")
            } else {
                text
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::plan::EndMarker;

    fn state(
        head: usize,
        tail: usize,
        limit: usize,
        marker: &EndMarker,
    ) -> (StreamState, mpsc::UnboundedReceiver<MarkerSeen>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::new(Instant::now(), tx));
        let state = StreamState::new(StreamSetup {
            kind: StreamKind::Stdout,
            shared,
            detector: Arc::new(Detector::new(marker).unwrap()),
            line_limit: limit,
            head_lines: head,
            tail_lines: tail,
            log: None,
            copy: None,
            sink: None,
            echo: None,
        });
        (state, rx)
    }

    #[test]
    fn head_and_tail_do_not_overlap_and_count_the_rest() {
        let input: String = (0..100).map(|i| format!("line {i}\n")).collect();
        for chunk in [1, 7, 100, 5000] {
            let (mut s, _) = state(3, 4, 1 << 20, &EndMarker::None);
            for c in input.as_bytes().chunks(chunk) {
                s.feed(c);
            }
            let (cap, _) = s.finish();
            assert_eq!(cap.head, ["line 0", "line 1", "line 2"], "chunk {chunk}");
            assert_eq!(cap.tail, ["line 96", "line 97", "line 98", "line 99"]);
            assert_eq!((cap.lines, cap.lines_omitted), (100, 93));
        }
        let (mut s, _) = state(3, 4, 1 << 20, &EndMarker::None);
        s.feed(b"a\nb\nc\nd\ne");
        let (cap, _) = s.finish();
        assert_eq!(
            (cap.head.len(), cap.tail.clone()),
            (3, vec!["d".to_string(), "e".to_string()])
        );
        assert_eq!(cap.lines_omitted, 0);
    }

    #[test]
    fn marker_is_found_in_blocks_and_in_split_lines() {
        for chunk in [1, 3, 64, 1000] {
            let (mut s, mut rx) = state(1, 1, 1 << 20, &EndMarker::Pytest);
            let input = b"collected 2 items\n\n=== 2 passed in 0.01s ===\nafter\n";
            for c in input.chunks(chunk) {
                s.feed(c);
            }
            let seen = rx.try_recv().unwrap();
            assert_eq!(seen.line, "=== 2 passed in 0.01s ===");
            assert!(seen.passed);
            assert!(rx.try_recv().is_err());
        }
    }

    #[test]
    fn summary_after_a_carriage_return_or_without_newline_is_found() {
        let (mut s, mut rx) = state(1, 1, 1 << 20, &EndMarker::Pytest);
        s.feed(b"[ 50%]\r[100%]\r=== 2 passed in 0.01s ===\n");
        assert_eq!(rx.try_recv().unwrap().line, "=== 2 passed in 0.01s ===");
        let (mut s, mut rx) = state(1, 1, 1 << 20, &EndMarker::Pytest);
        s.feed(b"collected 1 item\n=== 1 failed in 0.01s ===");
        assert!(rx.try_recv().is_err(), "not before the writer pauses");
        assert!(s.partial_pending());
        s.check_partial();
        let seen = rx.try_recv().unwrap();
        assert!(!seen.passed);
    }

    #[test]
    fn huge_line_memory_is_bounded() {
        let (mut s, _) = state(2, 2, 1000, &EndMarker::None);
        let chunk = vec![b'x'; 4096];
        for _ in 0..100 {
            s.feed(&chunk);
        }
        s.feed(b"\nend\n");
        let (cap, _) = s.finish();
        assert!(cap.long_lines_split);
        assert_eq!(cap.lines, 2);
        assert_eq!(cap.head[0].len(), KEEP_LINE_BYTES);
        assert_eq!(cap.head[1], "end");
        assert!(cap.tail.is_empty());
    }
}
