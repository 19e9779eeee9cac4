//! Best-effort live echo of the command's output. The readers hand over whole lines in large
//! chunks to a writer thread through a bounded queue; when the destination is slow or stuck (a
//! pipe nobody reads, a paused pager), chunks are dropped and counted instead of blocking the
//! supervisor. The logs on disk always have every byte.
//!
//! One writer thread serves both streams, so lines keep the order in which they arrived. The
//! command's stdout may go to a destination of its own (polyprof's stdout, as `time(1)` and
//! `ncu` do: `polyprof run -- ./app | grep x` greps the app); without one both streams go to
//! the main destination (polyprof's stderr).

use std::io::Write;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::time::{Duration, Instant};

/// Bytes that may wait for the writer before chunks are dropped.
pub const DEFAULT_QUEUE_BYTES: usize = 8 << 20;
/// How long one offer may wait for room in the queue before the echo starts dropping. Short:
/// the reader runs on the supervisor's thread, and timers must not wait longer than this.
const BACKPRESSURE_WAIT: Duration = Duration::from_millis(20);
/// A partial line longer than this is echoed without waiting for its newline.
const CARRY_MAX: usize = 64 * 1024;
/// Written chunks kept for reuse. A fresh 256 KiB chunk per read cost page faults, zeroing and
/// an munmap per chunk (a tenth of the echo's time to a file). The reader hands its read buffer
/// over whole and takes a written one back ([`EchoStream::feed_owned`]): no copy of the bytes.
/// As many as the default queue holds of the reader's 256 KiB buffers, and the two readers'
/// own: a buffer freed while the writer catches up and allocated again later is zeroed again.
const POOL_MAX: usize = 36;
/// Chunks larger than this are not kept (a rare huge line must not stay resident).
const POOL_CHUNK_MAX: usize = 1 << 20;

/// Where a chunk goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoTo {
    /// The destination of the command's stdout (the main one when there is none of its own).
    Stdout,
    /// The main destination: the command's stderr and polyprof's own notes.
    Main,
}

#[derive(Debug, Default)]
struct Counters {
    queued_bytes: AtomicUsize,
    dropped_bytes: AtomicU64,
    /// The main destination failed (a closed stderr): nothing more goes there.
    broken: AtomicBool,
    /// The stdout destination failed; `stdout_broken_pipe` when its reader closed it.
    stdout_broken: AtomicBool,
    stdout_broken_pipe: AtomicBool,
    /// Cancelled when the stdout destination's reader is gone.
    stdout_closed: std::sync::Mutex<Option<tokio_util::sync::CancellationToken>>,
    /// The writer did not keep up within the wait: drop until the queue drains to half.
    stalled: AtomicBool,
    /// Emptied chunks the writer hands back to the readers.
    pool: std::sync::Mutex<Vec<Vec<u8>>>,
}

impl Counters {
    fn reused(&self) -> Option<Vec<u8>> {
        self.pool.lock().ok().and_then(|mut pool| pool.pop())
    }

    /// An empty chunk with room for `len` bytes.
    fn take_chunk(&self, len: usize) -> Vec<u8> {
        let mut chunk = self.reused().unwrap_or_default();
        chunk.clear();
        chunk.reserve(len);
        chunk
    }

    /// A buffer of exactly `len` initialised bytes to read into (a reused one is not zeroed
    /// again).
    fn take_buffer(&self, len: usize) -> Vec<u8> {
        match self.reused() {
            Some(mut buffer) => {
                buffer.resize(len, 0);
                buffer
            }
            None => vec![0; len],
        }
    }

    /// Keep a written chunk for reuse; its bytes stay (a reader's buffer must not be zeroed).
    fn give_back(&self, chunk: Vec<u8>) {
        if chunk.capacity() > POOL_CHUNK_MAX {
            return;
        }
        if let Ok(mut pool) = self.pool.lock()
            && pool.len() < POOL_MAX
        {
            pool.push(chunk);
        }
    }
}

/// Bytes `range` of the buffer go to the destination.
type Message = (EchoTo, Vec<u8>, Range<usize>);

/// Handle to the echo writer; cheap to clone.
#[derive(Clone)]
pub struct Echo {
    tx: SyncSender<Message>,
    counters: Arc<Counters>,
    queue_bytes: usize,
    /// The command's stdout has a destination of its own (polyprof's stdout).
    stdout_apart: bool,
}

impl std::fmt::Debug for Echo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Echo")
    }
}

impl Echo {
    /// An echo onto `out` (polyprof's stderr in the CLI), on a thread of its own.
    pub fn spawn<W: Write + Send + 'static>(out: W, queue_bytes: usize) -> std::io::Result<Echo> {
        Echo::spawn_with_status(out, queue_bytes, None)
    }

    /// The same, with a status line under the echo (for a terminal): elapsed time, `label`,
    /// and the last line seen, redrawn a few times a second.
    pub fn spawn_with_status<W: Write + Send + 'static>(
        out: W,
        queue_bytes: usize,
        label: Option<String>,
    ) -> std::io::Result<Echo> {
        Echo::spawn_split(None::<std::io::Sink>, out, queue_bytes, label)
    }

    /// An echo with the command's stdout onto `stdout` (when given) and everything else onto
    /// `main`; the status line, if any, is drawn on `main`.
    pub fn spawn_split<S: Write + Send + 'static, W: Write + Send + 'static>(
        stdout: Option<S>,
        mut main: W,
        queue_bytes: usize,
        label: Option<String>,
    ) -> std::io::Result<Echo> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Message>(1024);
        let counters = Arc::new(Counters::default());
        let shared = counters.clone();
        let stdout_apart = stdout.is_some();
        let mut stdout = stdout;
        std::thread::Builder::new()
            .name("polyprof-echo".into())
            .spawn(move || {
                let mut status = label.map(StatusLine::new);
                loop {
                    let (to, buffer, range) = match rx.recv_timeout(STATUS_EVERY) {
                        Ok(message) => message,
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                            if let Some(status) = &mut status
                                && !shared.broken.load(Ordering::Relaxed)
                            {
                                let _ = status.draw(&mut main);
                            }
                            continue;
                        }
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                    };
                    let chunk = buffer.get(range).unwrap_or_default();
                    if chunk.is_empty() {
                        // The run is over: take the status line away.
                        if let Some(status) = &mut status {
                            let _ = status.clear(&mut main);
                        }
                        status = None;
                        continue;
                    }
                    match (to, &mut stdout) {
                        (EchoTo::Stdout, Some(out)) => {
                            if !shared.stdout_broken.load(Ordering::Relaxed) {
                                write_aside(&mut status, &mut main, out, chunk, &shared);
                            }
                        }
                        _ => {
                            if !shared.broken.load(Ordering::Relaxed) {
                                let written = match &mut status {
                                    Some(status) => status.write_through(&mut main, chunk),
                                    None => main.write_all(chunk),
                                };
                                if written.is_err() {
                                    // A closed stderr: stop echoing, quietly; the logs have
                                    // everything.
                                    shared.broken.store(true, Ordering::Relaxed);
                                }
                            }
                        }
                    }
                    shared
                        .queued_bytes
                        .fetch_sub(chunk.len(), Ordering::Relaxed);
                    shared.give_back(buffer);
                }
            })?;
        Ok(Echo {
            tx,
            counters,
            queue_bytes,
            stdout_apart,
        })
    }

    /// Whether the stdout destination was closed by its reader (`polyprof run … | head`).
    pub fn stdout_broken_pipe(&self) -> bool {
        self.counters.stdout_broken_pipe.load(Ordering::Relaxed)
    }

    /// Cancel `token` when the stdout destination's reader is gone (at once if it is already).
    pub fn cancel_when_stdout_closes(&self, token: tokio_util::sync::CancellationToken) {
        if let Ok(mut slot) = self.counters.stdout_closed.lock() {
            if self.stdout_broken_pipe() {
                token.cancel();
            }
            *slot = Some(token);
        }
    }

    /// Hand `bytes` to the writer. When the queue is full, wait for the writer a little (a
    /// file or a terminal that is merely slower than the child keeps every byte); once it did
    /// not keep up within that wait, drop and count until the queue has drained to half, so a
    /// stuck destination costs one short wait, not one per chunk.
    pub fn offer(&self, bytes: &[u8]) {
        self.offer_to(EchoTo::Main, bytes);
    }

    /// [`Echo::offer`] to the destination `to`.
    pub fn offer_to(&self, to: EchoTo, bytes: &[u8]) {
        if bytes.is_empty() || self.closed(to) {
            return;
        }
        let mut chunk = self.counters.take_chunk(bytes.len());
        chunk.extend_from_slice(bytes);
        let range = 0..chunk.len();
        if let Some(unsent) = self.send(to, chunk, range) {
            self.counters.give_back(unsent);
        }
    }

    /// Hand bytes `range` of `buffer` to the writer without copying them. Returns the buffer
    /// when it was not taken (the destination is closed, or the bytes were dropped).
    pub fn offer_owned(&self, to: EchoTo, buffer: Vec<u8>, range: Range<usize>) -> Option<Vec<u8>> {
        if range.is_empty() || self.closed(to) {
            return Some(buffer);
        }
        self.send(to, buffer, range)
    }

    /// A buffer of `len` bytes to read into, written out and handed back by the writer when it
    /// can be.
    pub fn take_buffer(&self, len: usize) -> Vec<u8> {
        self.counters.take_buffer(len)
    }

    fn closed(&self, to: EchoTo) -> bool {
        let closed = match to {
            EchoTo::Main => &self.counters.broken,
            EchoTo::Stdout => &self.counters.stdout_broken,
        };
        closed.load(Ordering::Relaxed)
    }

    /// Queue `buffer[range]`, waiting a little for room (see [`Echo::offer`]); the buffer comes
    /// back when the bytes were dropped.
    fn send(&self, to: EchoTo, mut buffer: Vec<u8>, range: Range<usize>) -> Option<Vec<u8>> {
        let len = range.len();
        let queued = || self.counters.queued_bytes.load(Ordering::Relaxed);
        if self.counters.stalled.load(Ordering::Relaxed) {
            if queued() > self.queue_bytes / 2 {
                self.drop_bytes(len);
                return Some(buffer);
            }
            self.counters.stalled.store(false, Ordering::Relaxed);
        }
        let mut waited_since: Option<Instant> = None;
        loop {
            if queued() + len <= self.queue_bytes {
                self.counters.queued_bytes.fetch_add(len, Ordering::Relaxed);
                match self.tx.try_send((to, buffer, range.clone())) {
                    Ok(()) => return None,
                    Err(TrySendError::Full((_, back, _))) => {
                        self.counters.queued_bytes.fetch_sub(len, Ordering::Relaxed);
                        buffer = back;
                    }
                    Err(TrySendError::Disconnected((_, back, _))) => {
                        self.counters.queued_bytes.fetch_sub(len, Ordering::Relaxed);
                        self.drop_bytes(len);
                        return Some(back);
                    }
                }
            }
            let since = *waited_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= BACKPRESSURE_WAIT {
                self.counters.stalled.store(true, Ordering::Relaxed);
                self.drop_bytes(len);
                return Some(buffer);
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn drop_bytes(&self, n: usize) {
        self.counters
            .dropped_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Bytes that were not echoed because the destination did not keep up.
    pub fn dropped_bytes(&self) -> u64 {
        self.counters.dropped_bytes.load(Ordering::Relaxed)
    }

    /// Remove the status line (if any) once what is queued has been written.
    pub fn end_status(&self) {
        let _ = self.tx.try_send((EchoTo::Main, Vec::new(), 0..0));
    }

    /// Wait until the writer has caught up, at most `limit` (a stuck destination is not waited
    /// for). True when everything queued was written.
    pub fn flush(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.counters.queued_bytes.load(Ordering::Relaxed) > 0 {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }
}

/// Write a chunk of the command's stdout to its own destination; a status line on `main` is
/// taken away first and drawn again after it (both may be the same terminal).
fn write_aside(
    status: &mut Option<StatusLine>,
    main: &mut impl Write,
    out: &mut impl Write,
    chunk: &[u8],
    shared: &Counters,
) {
    if let Some(status) = status {
        let _ = status.clear(main);
    }
    let written = out.write_all(chunk).and_then(|()| match status {
        Some(_) => out.flush(),
        None => Ok(()),
    });
    if let Err(e) = written {
        shared.stdout_broken.store(true, Ordering::Relaxed);
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            shared.stdout_broken_pipe.store(true, Ordering::Relaxed);
            if let Ok(slot) = shared.stdout_closed.lock()
                && let Some(token) = slot.as_ref()
            {
                token.cancel();
            }
        }
    }
    if let Some(status) = status {
        status.note(chunk);
        let _ = status.draw(main);
    }
}

/// How often the status line is redrawn when nothing else is written.
const STATUS_EVERY: Duration = Duration::from_millis(250);
/// Characters of the last line shown in the status line.
const STATUS_LINE_CHARS: usize = 60;

/// A one-line status under the echo on a terminal: `[12.3 s] label · last line`.
struct StatusLine {
    start: Instant,
    label: String,
    last: String,
    shown: bool,
}

impl StatusLine {
    fn new(label: String) -> Self {
        StatusLine {
            start: Instant::now(),
            // A label comes from a job file as often as from the user: no control character of
            // it reaches the terminal (the line's own escapes are the only ones sent).
            label: label.chars().filter(|c| !c.is_control()).collect(),
            last: String::new(),
            shown: false,
        }
    }

    fn clear(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        if self.shown {
            // Carriage return, then erase the line (ANSI EL).
            out.write_all(b"\r\x1b[2K")?;
            out.flush()?;
            self.shown = false;
        }
        Ok(())
    }

    fn draw(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        let text = format!(
            "\r\x1b[2K[{:.1} s] {}{}{}",
            self.start.elapsed().as_secs_f64(),
            self.label,
            if self.last.is_empty() { "" } else { " · " },
            self.last
        );
        out.write_all(text.as_bytes())?;
        out.flush()?;
        self.shown = true;
        Ok(())
    }

    /// Echo `chunk` above the status line and remember its last line.
    fn write_through(&mut self, out: &mut impl Write, chunk: &[u8]) -> std::io::Result<()> {
        self.clear(out)?;
        out.write_all(chunk)?;
        self.note(chunk);
        self.draw(out)
    }

    /// Remember the last line of `chunk` for the status line.
    fn note(&mut self, chunk: &[u8]) {
        let body = chunk.strip_suffix(b"\n").unwrap_or(chunk);
        let last = body.rsplit(|&b| b == b'\n').next().unwrap_or_default();
        let last = last.rsplit(|&b| b == b'\r').next().unwrap_or_default();
        self.last = String::from_utf8_lossy(last)
            .chars()
            .filter(|c| !c.is_control())
            .take(STATUS_LINE_CHARS)
            .collect();
    }
}

/// One stream's side of the echo: passes on whole lines so the two streams do not interleave
/// in the middle of a line.
#[derive(Debug)]
pub struct EchoStream {
    echo: Echo,
    to: EchoTo,
    carry: Vec<u8>,
}

impl EchoStream {
    pub fn new(echo: Echo, to: EchoTo) -> Self {
        EchoStream {
            echo,
            to,
            carry: Vec::new(),
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        match chunk.iter().rposition(|&b| b == b'\n') {
            Some(last) => {
                let mut whole = &chunk[..=last];
                if !self.carry.is_empty() {
                    // Finish the carried line with a small copy; the rest goes as it is.
                    let first = whole.iter().position(|&b| b == b'\n').unwrap_or(last);
                    self.carry.extend_from_slice(&whole[..=first]);
                    self.echo.offer_to(self.to, &self.carry);
                    self.carry.clear();
                    whole = &whole[first + 1..];
                }
                self.echo.offer_to(self.to, whole);
                self.carry.extend_from_slice(&chunk[last + 1..]);
            }
            None => self.carry.extend_from_slice(chunk),
        }
        if self.carry.len() > CARRY_MAX {
            self.echo.offer_to(self.to, &self.carry);
            self.carry.clear();
        }
    }

    /// [`EchoStream::feed`] of bytes `range` of the reader's `buffer`: the whole lines in it
    /// are handed to the writer in the buffer itself, which is replaced by one the writer is
    /// done with (the same length), so the bytes are not copied.
    pub fn feed_owned(&mut self, buffer: &mut Vec<u8>, range: Range<usize>) {
        let Some(last) = buffer[range.clone()].iter().rposition(|&b| b == b'\n') else {
            return self.feed(&buffer[range]);
        };
        let mut start = range.start;
        let end = range.start + last + 1;
        if !self.carry.is_empty() {
            // Finish the carried line with a small copy; the rest goes as it is.
            let first = buffer[start..end]
                .iter()
                .position(|&b| b == b'\n')
                .unwrap_or(last);
            self.carry.extend_from_slice(&buffer[start..=start + first]);
            self.echo.offer_to(self.to, &self.carry);
            self.carry.clear();
            start += first + 1;
        }
        let rest = end..range.end;
        self.carry.extend_from_slice(&buffer[rest]);
        if start < end {
            let replacement = self.echo.take_buffer(buffer.len());
            let full = std::mem::replace(buffer, replacement);
            if let Some(unsent) = self.echo.offer_owned(self.to, full, start..end) {
                // Not taken: keep reading into it rather than into a second buffer.
                self.echo
                    .counters
                    .give_back(std::mem::replace(buffer, unsent));
            }
        }
        if self.carry.len() > CARRY_MAX {
            self.echo.offer_to(self.to, &self.carry);
            self.carry.clear();
        }
    }

    /// The stream ended: echo a last line that had no newline. On a destination shared with
    /// polyprof's own lines it gets one, so they start on a line of their own; the command's
    /// stdout on its own destination gets exactly its bytes (`polyprof run -- cat f > out`
    /// writes what `cat f > out` does).
    pub fn finish(mut self) {
        if !self.carry.is_empty() {
            if !(self.to == EchoTo::Stdout && self.echo.stdout_apart) {
                self.carry.push(b'\n');
            }
            self.echo.offer_to(self.to, &self.carry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_status_line_sends_no_control_character_of_its_label_or_last_line() {
        let mut status = StatusLine::new("job \x1b]52;c;cHduZWQ=\x07\x1b[2J".into());
        let mut out = Vec::new();
        // (The command's own output is echoed as it is, like the command run bare; the status
        // line drawn under it is polyprof's.)
        status.note(b"step \x1b]0;title\x07 done\n");
        status.draw(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        // The line's own escape (carriage return, erase line) and nothing else.
        assert_eq!(text.matches('\x1b').count(), 1, "{text:?}");
        assert!(!text.contains('\x07'), "{text:?}");
        assert!(text.contains("job ]52;c;cHduZWQ=[2J"), "{text:?}");
    }

    /// A writer that never returns until released: a pipe nobody reads.
    struct Stuck(std::sync::mpsc::Receiver<()>);
    impl Write for Stuck {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.recv();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn whole_lines_pass_and_the_last_partial_line_gets_a_newline() {
        let sink = Sink::default();
        let echo = Echo::spawn(sink.clone(), 1 << 20).unwrap();
        let mut stream = EchoStream::new(echo.clone(), EchoTo::Main);
        for chunk in [&b"ab"[..], b"c\nde", b"f\n", b"tail"] {
            stream.feed(chunk);
        }
        stream.finish();
        assert!(echo.flush(Duration::from_secs(5)));
        assert_eq!(&*sink.0.lock().unwrap(), b"abc\ndef\ntail\n");
        assert_eq!(echo.dropped_bytes(), 0);
    }

    #[test]
    fn owned_buffers_pass_whole_lines_in_order_and_come_back_the_same_length() {
        let sink = Sink::default();
        let echo = Echo::spawn(sink.clone(), 1 << 20).unwrap();
        let mut stream = EchoStream::new(echo.clone(), EchoTo::Main);
        let mut buffer = vec![0u8; 64];
        let mut sent = Vec::new();
        for piece in [&b"ab"[..], b"c\nde", b"f\ng\nh", b"\n", b"tail"] {
            // The bytes sit at an offset in the buffer, as at a page boundary in the reader.
            buffer[8..8 + piece.len()].copy_from_slice(piece);
            stream.feed_owned(&mut buffer, 8..8 + piece.len());
            assert_eq!(buffer.len(), 64);
            sent.extend_from_slice(piece);
        }
        stream.finish();
        assert!(echo.flush(Duration::from_secs(5)));
        assert_eq!(&*sink.0.lock().unwrap(), b"abc\ndef\ng\nh\ntail\n");
        assert_eq!(echo.dropped_bytes(), 0);
    }

    #[test]
    fn the_status_line_is_drawn_under_the_echo_and_removed_at_the_end() {
        let sink = Sink::default();
        let echo = Echo::spawn_with_status(sink.clone(), 1 << 20, Some("run".into())).unwrap();
        echo.offer(b"one\ntwo\n");
        echo.end_status();
        assert!(echo.flush(Duration::from_secs(5)));
        std::thread::sleep(Duration::from_millis(50));
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(text.starts_with("one\ntwo\n"), "{text:?}");
        assert!(text.contains("run · two"), "{text:?}");
        assert!(text.ends_with("\r\x1b[2K"), "{text:?}");
    }

    /// A writer whose reader is gone (`polyprof run … | head`).
    struct Closed;
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn stdout_goes_to_its_own_destination_and_the_status_line_stays_on_the_main_one() {
        let (out, main) = (Sink::default(), Sink::default());
        let echo = Echo::spawn_split(Some(out.clone()), main.clone(), 1 << 20, Some("run".into()))
            .unwrap();
        let mut stdout = EchoStream::new(echo.clone(), EchoTo::Stdout);
        let mut stderr = EchoStream::new(echo.clone(), EchoTo::Main);
        stdout.feed(b"out 1\n");
        stderr.feed(b"err 1\n");
        stdout.feed(b"out 2\nno newline");
        stderr.feed(b"err 2, no newline");
        stdout.finish();
        stderr.finish();
        echo.end_status();
        assert!(echo.flush(Duration::from_secs(5)));
        std::thread::sleep(Duration::from_millis(50));
        // Its own destination gets the command's bytes exactly: no newline added at the end.
        assert_eq!(&*out.0.lock().unwrap(), b"out 1\nout 2\nno newline");
        let main = String::from_utf8(main.0.lock().unwrap().clone()).unwrap();
        assert!(main.contains("err 1\n"), "{main:?}");
        assert!(main.contains("err 2, no newline\n"), "{main:?}");
        assert!(!main.contains("out 1\n"), "{main:?}");
        // The status line shows the last line of either stream, on the main destination.
        assert!(main.contains("run · out 2"), "{main:?}");
        assert!(!echo.stdout_broken_pipe());
    }

    #[test]
    fn a_closed_stdout_stops_its_echo_and_is_reported_while_stderr_goes_on() {
        let main = Sink::default();
        let echo = Echo::spawn_split(Some(Closed), main.clone(), 1 << 20, None).unwrap();
        echo.offer_to(EchoTo::Stdout, b"lost\n");
        assert!(echo.flush(Duration::from_secs(5)));
        echo.offer_to(EchoTo::Stdout, b"not tried\n");
        echo.offer(b"err\n");
        assert!(echo.flush(Duration::from_secs(5)));
        assert!(echo.stdout_broken_pipe());
        assert_eq!(&*main.0.lock().unwrap(), b"err\n");
    }

    #[test]
    fn a_stuck_destination_drops_and_counts_instead_of_blocking() {
        let (release, wait) = std::sync::mpsc::channel();
        let echo = Echo::spawn(Stuck(wait), 1000).unwrap();
        let started = Instant::now();
        for _ in 0..10_000 {
            echo.offer(&[b'x'; 100]);
        }
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(echo.dropped_bytes() >= 10_000 * 100 - 1100);
        assert!(!echo.flush(Duration::from_millis(10)));
        drop(release);
    }
}
