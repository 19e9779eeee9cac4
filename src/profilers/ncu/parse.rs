//! Bytes in, records out: ncu's mixed output (stdout, `--log-file`, `--import` exports) parsed
//! into normalized kernel records, classified diagnostics and session facts. Pure functions.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;

pub use super::context::{Context, ESSENTIAL_METRICS, MetricFilter, ParseOptions};
use super::details::{self, DetailsTable};
use super::diagnostics;
pub use super::merge::merge;
use super::raw::{Built, RawTable};
use super::row::{self, Row, Splitter};
use super::scan::{self, Level, Segment};
use super::session::SessionTable;
use crate::model::parsed::{Diagnostic, ParsedOutput, Severity};
use crate::model::record::KernelRecord;

enum Table {
    None,
    Raw(RawTable),
    Details(DetailsTable),
    Session(SessionTable),
}

/// Parse ncu output into records, diagnostics and session facts.
pub fn parse(input: &[u8], options: &ParseOptions) -> ParsedOutput {
    let mut kernels = Vec::new();
    let mut parsed = parse_with(input, options, &mut |record| kernels.push(record));
    parsed.kernels = kernels;
    parsed
}

/// Like [`parse`], but hands each record to `sink` as soon as it is complete, so a caller that
/// writes records out one by one never holds them all. The returned output has no kernels.
pub fn parse_with(
    input: &[u8],
    options: &ParseOptions,
    sink: &mut dyn FnMut(KernelRecord),
) -> ParsedOutput {
    let mut parser = Parser::new(options, default_threads());
    parser.feed(input, true, sink);
    parser.finish(sink)
}

/// Like [`parse_with`], reading `reader` in pieces: a file is never held in memory whole. Only
/// reading can fail; what was parsed before a read error is lost with it. Uses two threads on
/// large raw pages (see [`parse_reader_threads`]).
pub fn parse_reader(
    reader: impl Read,
    options: &ParseOptions,
    sink: &mut dyn FnMut(KernelRecord),
) -> std::io::Result<ParsedOutput> {
    parse_reader_threads(reader, options, default_threads(), sink)
}

/// Consecutive launch rows of one raw page, within one piece of input, from which their records
/// are built on two threads. Building a record takes 2–5 µs and starting the helper thread
/// ~30 µs, so a run of this size loses under 5 % to it; small profiles take the simple path.
pub const PARALLEL_MIN_ROWS: usize = 200;

/// Two when the machine has at least two cores, else one.
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(2))
}

/// [`parse_reader`] with an explicit thread count: 1 builds every record on the calling thread;
/// 2 (or more, which means 2) builds the records of runs of at least [`PARALLEL_MIN_ROWS`]
/// consecutive raw-page launch rows on the calling thread and one helper, half each. The output
/// (records, their order, diagnostics, session) is the same either way; `sink` is only ever
/// called on the calling thread, in row order.
pub fn parse_reader_threads(
    mut reader: impl Read,
    options: &ParseOptions,
    threads: usize,
    sink: &mut dyn FnMut(KernelRecord),
) -> std::io::Result<ParsedOutput> {
    // Holds ~500 launch rows of a `--set full` page (~4 KB a row), enough to be worth splitting
    // between two threads, and small enough to stay in the CPU cache while it is parsed.
    const PIECE: usize = 2 << 20;
    let mut parser = Parser::new(options, threads);
    let mut buffer = vec![0u8; PIECE];
    let mut filled = 0;
    loop {
        if filled == buffer.len() {
            // One line longer than the buffer: make room for it.
            buffer.resize(buffer.len() * 2, 0);
        }
        let read = match reader.read(&mut buffer[filled..]) {
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        let piece = filled..filled + read;
        filled += read;
        let eof = read == 0;
        // Nothing new to parse until a line ends (keeps a huge line from being rescanned on
        // every read).
        if !eof && filled < buffer.len() && row::find_byte(&buffer[piece], b'\n').is_none() {
            continue;
        }
        let consumed = parser.feed(&buffer[..filled], eof, sink);
        if eof {
            break;
        }
        buffer.copy_within(consumed..filled, 0);
        filled -= consumed;
    }
    Ok(parser.finish(sink))
}

/// The line-by-line state machine behind [`parse_with`] and [`parse_reader`].
struct Parser<'o> {
    options: &'o ParseOptions,
    requested: HashSet<&'o str>,
    context: Context,
    table: Table,
    splitter: Splitter,
    messages: Vec<Segment>,
    started: bool,
    /// False only in tests that check the fast tokenizer against the csv crate.
    fast: bool,
    /// Build records of long runs of launch rows on two threads.
    parallel: bool,
    /// Line bounds of the run of launch rows being gathered (reused).
    batch: Vec<(usize, usize)>,
    /// Runs built on two threads so far (tests check the parallel path ran).
    parallel_runs: usize,
}

impl<'o> Parser<'o> {
    fn new(options: &'o ParseOptions, threads: usize) -> Self {
        Parser {
            options,
            requested: options
                .requested
                .iter()
                .map(String::as_str)
                .filter(|name| is_checkable(name))
                .collect(),
            context: Context::default(),
            table: Table::None,
            splitter: Splitter::default(),
            messages: Vec::new(),
            started: false,
            fast: true,
            parallel: threads > 1,
            batch: Vec::new(),
            parallel_runs: 0,
        }
    }

    /// Parse the complete lines of `input` (all of it when `eof`); returns how many bytes were
    /// consumed. The rest must be fed again, with more input behind it.
    fn feed(&mut self, input: &[u8], eof: bool, sink: &mut dyn FnMut(KernelRecord)) -> usize {
        let mut pos = 0;
        if !self.started {
            if input.len() < 3 && !eof {
                return 0;
            }
            self.started = true;
            pos = scan::content_start(input);
        }
        // Runs of launch rows are tried on two threads from here on (a run too short to split
        // moves it past the run, so no line is gathered twice).
        let mut batch_from = pos;
        while pos < input.len() {
            if self.parallel
                && self.fast
                && pos >= batch_from
                && matches!(self.table, Table::Raw(_))
            {
                let (next, run_end) = self.parallel_run(input, pos, eof, sink);
                if next > pos {
                    // Done up to the run's end, or up to a row the fast tokenizer refused: that
                    // one takes the csv-crate path below, the rows after it are gathered again.
                    batch_from = next + 1;
                    pos = next;
                    continue;
                }
                batch_from = run_end.max(pos + 1);
            }
            let end = scan::line_end(input, pos);
            if end == input.len() && !eof {
                break;
            }
            let line = scan::trim_cr(&input[pos..end]);
            if scan::is_csv_line(line) {
                // ncu's rows take the fast path; anything unusual goes to the csv crate.
                let fast = if self.fast {
                    self.splitter.split(line)
                } else {
                    None
                };
                if let Some(row) = fast {
                    read_row(
                        &row,
                        &mut self.table,
                        self.options,
                        &self.requested,
                        &mut self.context,
                        sink,
                    );
                    pos = (end + 1).min(input.len());
                } else {
                    let (next, balanced) = scan::csv_extent(input, pos, end);
                    let complete = balanced && (next < input.len() || input.ends_with(b"\n"));
                    if !complete && !eof {
                        break;
                    }
                    read_with_csv_crate(
                        &input[pos..next],
                        &mut self.table,
                        self.options,
                        &self.requested,
                        &mut self.context,
                        sink,
                    );
                    pos = next;
                }
                continue;
            }
            self.messages.clear();
            scan::classify_line(pos, line, &mut self.messages);
            for segment in self.messages.drain(..) {
                if let Segment::Message(message) = segment {
                    note_message(&message, &mut self.context);
                    if let Some(diagnostic) = diagnostics::classify(&message) {
                        self.context.push_diagnostic(diagnostic);
                    }
                }
            }
            pos = (end + 1).min(input.len());
        }
        pos
    }

    /// Gather the run of complete launch rows (`"<digit>…`) starting at `pos`; when it has at
    /// least [`PARALLEL_MIN_ROWS`] rows, build its records on two threads and settle them in
    /// order. Returns where parsing continues (`pos` when the run was too short; the first row
    /// the fast tokenizer refused, for the csv-crate path, otherwise the run's end) and the
    /// run's end.
    fn parallel_run(
        &mut self,
        input: &[u8],
        pos: usize,
        eof: bool,
        sink: &mut dyn FnMut(KernelRecord),
    ) -> (usize, usize) {
        self.batch.clear();
        let mut next = pos;
        while next < input.len() {
            let end = scan::line_end(input, next);
            if end == input.len() && !eof {
                break;
            }
            let line = scan::trim_cr(&input[next..end]);
            // Headers start `"ID"`, units rows `""`, session tables with a word: a launch row
            // starts with its numeric ID.
            if !scan::is_csv_line(line) || !line.get(1).is_some_and(u8::is_ascii_digit) {
                break;
            }
            self.batch.push((next, next + line.len()));
            next = (end + 1).min(input.len());
        }
        let run_end = next;
        if self.batch.len() < PARALLEL_MIN_ROWS {
            return (pos, run_end);
        }
        let Table::Raw(raw) = &mut self.table else {
            return (pos, run_end);
        };
        self.parallel_runs += 1;
        let (mine, theirs) = self.batch.split_at(self.batch.len() / 2);
        let context = &mut self.context;
        let splitter = &mut self.splitter;
        let table: &RawTable = raw;
        // This thread builds and settles the first half while the helper builds the second.
        let (refused, mine_seen, (theirs_built, theirs_seen)) = std::thread::scope(|scope| {
            let helper = scope.spawn(|| build_rows(table, input, theirs));
            let mut seen = table.seen_flags();
            let mut refused = None;
            for &(start, end) in mine {
                let Some(row) = splitter.split(&input[start..end]) else {
                    refused = Some(start);
                    break;
                };
                let built = table.build(&row, &mut seen);
                let (record, new_device) = table.settle(built, row.data(), context);
                if let Some(device) = new_device {
                    table.record_device(&row, &device, context);
                }
                context.kernels += 1;
                sink(record);
            }
            let theirs = helper
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (refused, seen, theirs)
        });
        raw.absorb(&mine_seen, context);
        if let Some(start) = refused {
            // The helper's rows come after the refused one: they are parsed again in order.
            return (start, run_end);
        }
        let done = theirs_built.len();
        for (built, &(start, end)) in theirs_built.into_iter().zip(theirs) {
            let (record, new_device) = raw.settle(built, &input[start..end], context);
            if let Some(device) = new_device {
                // A device's first launch (rare): its row is tokenized again for the facts.
                if let Some(row) = splitter.split(&input[start..end]) {
                    raw.record_device(&row, &device, context);
                }
            }
            context.kernels += 1;
            sink(record);
        }
        raw.absorb(&theirs_seen, context);
        match theirs.get(done) {
            Some(&(start, _)) => (start, run_end),
            None => (run_end, run_end),
        }
    }

    fn finish(self, sink: &mut dyn FnMut(KernelRecord)) -> ParsedOutput {
        finish(self.context, &self.requested, sink)
    }
}

/// Facts from routine `==PROF==` lines.
fn note_message(message: &scan::Message, context: &mut Context) {
    if message.level != Level::Prof {
        return;
    }
    if let Some(rest) = message.text.strip_prefix("Connected to process ") {
        let (pid, exe) = rest.split_once(' ').unwrap_or((rest, ""));
        let exe = exe.trim().trim_start_matches('(').trim_end_matches(')');
        context.session_insert(format!("process.{pid}"), exe.to_string());
    } else if let Some(path) = message.text.strip_prefix("Report: ") {
        context.session_insert("report_path".to_string(), path.trim().to_string());
    }
}

/// Rows the fast tokenizer refused (escaped quotes, quoted newlines, unquoted fields).
fn read_with_csv_crate(
    block: &[u8],
    table: &mut Table,
    options: &ParseOptions,
    requested: &HashSet<&str>,
    context: &mut Context,
    sink: &mut dyn FnMut(KernelRecord),
) {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(block);
    let mut record = csv::ByteRecord::new();
    let mut splitter = Splitter::default();
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(error) => {
                context.push_diagnostic(Diagnostic {
                    severity: Severity::Error,
                    kind: "csv_error".to_string(),
                    message: format!("unreadable CSV in ncu output: {error}"),
                    hint: None,
                    metric: None,
                });
                break;
            }
        }
        let row = splitter.from_record(&record);
        read_row(&row, table, options, requested, context, sink);
    }
}

/// The records of `lines` (launch rows of `table`), built on a helper thread; stops at the
/// first line the fast tokenizer refuses. Also returns the requested columns seen with a number.
fn build_rows(table: &RawTable, input: &[u8], lines: &[(usize, usize)]) -> (Vec<Built>, Vec<bool>) {
    let mut splitter = Splitter::default();
    let mut seen = table.seen_flags();
    let mut built = Vec::with_capacity(lines.len());
    for &(start, end) in lines {
        let Some(row) = splitter.split(&input[start..end]) else {
            break;
        };
        built.push(table.build(&row, &mut seen));
    }
    (built, seen)
}

fn read_row(
    row: &Row,
    table: &mut Table,
    options: &ParseOptions,
    requested: &HashSet<&str>,
    context: &mut Context,
    sink: &mut dyn FnMut(KernelRecord),
) {
    if is_launch_header(row) {
        let header = strings(row);
        context.tables_seen += 1;
        if details::is_details_header(&header) {
            *table = Table::Details(DetailsTable::new(&header));
        } else {
            let raw = RawTable::new(&header, &options.keep, requested);
            context
                .metrics_seen
                .extend(raw.metric_names().map(str::to_string));
            *table = Table::Raw(raw);
        }
        return;
    }
    if is_session_header(row)
        && let Some(session) = SessionTable::from_header(&strings(row))
    {
        *table = Table::Session(session);
        return;
    }
    match table {
        Table::None => {}
        Table::Session(session) => session.apply(&strings(row), context),
        Table::Details(details) => details.apply(&row.to_byte_record(), context),
        Table::Raw(raw) => {
            if raw.is_units_row(row) {
                raw.read_units(row);
                return;
            }
            let record = raw.record(row, context);
            context.kernels += 1;
            sink(record);
        }
    }
}

/// Cheap pre-check on the first cell before building strings for [`SessionTable::from_header`].
fn is_session_header(row: &Row) -> bool {
    matches!(
        row.get(0),
        Some(b"Launch Attribute" | b"Session Attribute" | b"Process Id" | b"Device Attribute")
    )
}

fn is_launch_header(row: &Row) -> bool {
    row.get(0) == Some(b"ID") && row.get(1) == Some(b"Process ID")
}

fn strings(row: &Row) -> Vec<String> {
    row.iter()
        .map(|f| String::from_utf8_lossy(f).trim().to_string())
        .collect()
}

/// Names the missing-metric check can judge (regex and breakdown requests expand to others).
fn is_checkable(name: &str) -> bool {
    !name.contains(':') && name.contains("__")
}

fn finish(
    mut context: Context,
    requested: &HashSet<&str>,
    sink: &mut dyn FnMut(KernelRecord),
) -> ParsedOutput {
    let details = std::mem::take(&mut context.details);
    context.kernels += details.len();
    for record in details {
        sink(record);
    }
    derive_session_facts(&mut context.session);
    if context.tables_seen > 0 && context.kernels > 0 {
        let mut missing: Vec<&str> = requested
            .iter()
            .filter(|name| !context.metrics_seen.contains(**name))
            .copied()
            .collect();
        missing.sort_unstable();
        for name in missing {
            context.push_diagnostic(Diagnostic {
                severity: Severity::Error,
                kind: "metric_missing".to_string(),
                message: format!("requested metric `{name}` is not in ncu's output"),
                hint: Some(format!(
                    "ncu ignores unknown metric names silently; check `{name}` with \
                     `ncu --query-metrics` for this GPU"
                )),
                metric: Some(name.to_string()),
            });
        }
        let mut unavailable: Vec<&str> = requested
            .iter()
            .filter(|name| {
                context.metrics_seen.contains(**name) && !context.numeric_seen.contains(**name)
            })
            .copied()
            .collect();
        unavailable.sort_unstable();
        for name in unavailable {
            context.push_diagnostic(Diagnostic {
                severity: Severity::Warning,
                kind: "metric_not_available".to_string(),
                message: format!(
                    "requested metric `{name}` has no numeric value (n/a) on any launch"
                ),
                hint: Some("this GPU or ncu version cannot collect it".to_string()),
                metric: Some(name.to_string()),
            });
        }
    }
    ParsedOutput {
        kernels: Vec::new(),
        diagnostics: context.diagnostics,
        session: context.session,
        device: None,
    }
}

/// An output with no launch, no ncu message of warning level or above and no session table is
/// suspicious (ncu killed before writing, or not ncu output at all): say so. Call it once on the
/// merged result of all artifacts of a run.
pub fn flag_empty(parsed: &mut ParsedOutput, kernels: usize) {
    let has_warning = parsed
        .diagnostics
        .iter()
        .any(|d| d.severity >= Severity::Warning);
    let has_session = parsed
        .session
        .keys()
        .any(|k| k.starts_with("session.") || k.starts_with("launch."));
    if kernels == 0 && !has_warning && !has_session {
        diagnostics::push(
            &mut parsed.diagnostics,
            Diagnostic {
                severity: Severity::Warning,
                kind: "no_data".to_string(),
                message: "no ncu CSV table and no ncu warning or error in the output".to_string(),
                hint: Some(
                    "ncu may have been killed before writing, or this is not ncu CSV output"
                        .to_string(),
                ),
                metric: None,
            },
        );
    }
}

/// Short keys for the facts every caller wants, from whichever table carried them.
fn derive_session_facts(session: &mut BTreeMap<String, String>) {
    let mut derived = Vec::new();
    for (key, value) in session.iter() {
        let Some(rest) = key.strip_prefix("device.") else {
            continue;
        };
        let Some((device, attribute)) = rest.split_once('.') else {
            continue;
        };
        match attribute {
            "display_name" => derived.push(("device_name".to_string(), value.clone())),
            "compute_capability" => derived.push(("compute_capability".to_string(), value.clone())),
            "compute_capability_major" => {
                if let Some(minor) =
                    session.get(&format!("device.{device}.compute_capability_minor"))
                {
                    derived.push(("compute_capability".to_string(), format!("{value}.{minor}")));
                }
            }
            _ => {}
        }
    }
    for (key, value) in derived {
        session.entry(key).or_insert(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ncu fixture of the repository, with its name.
    fn fixtures() -> Vec<(String, Vec<u8>)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut files = Vec::new();
        let mut dirs = vec![root.join("ncu-h200"), root.join("ncu-cc120")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_none_or(|e| e != "gz") {
                    files.push((path.display().to_string(), std::fs::read(&path).unwrap()));
                }
            }
        }
        assert!(files.len() > 20, "fixtures not found");
        files
    }

    fn run(input: &[u8], options: &ParseOptions, fast: bool) -> ParsedOutput {
        run_threads(input, options, fast, 1).0
    }

    /// The output, and how many runs of rows were built on two threads.
    fn run_threads(
        input: &[u8],
        options: &ParseOptions,
        fast: bool,
        threads: usize,
    ) -> (ParsedOutput, usize) {
        let mut kernels = Vec::new();
        let mut parser = Parser::new(options, threads);
        parser.fast = fast;
        parser.feed(input, true, &mut |k| kernels.push(k));
        let runs = parser.parallel_runs;
        let mut parsed = parser.finish(&mut |k| kernels.push(k));
        parsed.kernels = kernels;
        (parsed, runs)
    }

    /// `input` with every run of launch rows (`"<digit>…` lines) repeated until it has at least
    /// `rows` rows, launch IDs renumbered from the run's first one so launches stay distinct.
    fn replicate(input: &[u8], rows: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut run: Vec<&[u8]> = Vec::new();
        let flush = |run: &mut Vec<&[u8]>, out: &mut Vec<u8>| {
            for i in 0..if run.is_empty() {
                0
            } else {
                rows.div_ceil(run.len()) * run.len()
            } {
                let line = run[i % run.len()];
                let rest = &line[line.windows(2).position(|w| w == b"\",").unwrap_or(0)..];
                out.extend_from_slice(format!("\"{}", 100_000 + i).as_bytes());
                out.extend_from_slice(rest);
                out.push(b'\n');
            }
            run.clear();
        };
        for line in input.split_inclusive(|&b| b == b'\n') {
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            if body.first() == Some(&b'"') && body.get(1).is_some_and(u8::is_ascii_digit) {
                run.push(body);
            } else {
                flush(&mut run, &mut out);
                out.extend_from_slice(line);
            }
        }
        flush(&mut run, &mut out);
        out
    }

    #[test]
    fn two_threads_give_the_same_output_on_every_fixture() {
        let options = ParseOptions {
            requested: [
                "dram__bytes_read.sum",
                "gpu__time_duration.sum",
                "sm__absent.sum",
            ]
            .map(str::to_string)
            .to_vec(),
            ..Default::default()
        };
        let mut parallel_runs = 0;
        for (name, bytes) in fixtures() {
            let input = replicate(&bytes, PARALLEL_MIN_ROWS + 101);
            let (one, none) = run_threads(&input, &options, true, 1);
            let (two, runs) = run_threads(&input, &options, true, 2);
            assert_eq!(none, 0);
            assert_eq!(one, two, "{name}");
            parallel_runs += runs;
        }
        assert!(parallel_runs >= 5, "{parallel_runs}");
    }

    #[test]
    fn two_threads_handle_refused_rows_new_devices_and_a_cut_off_row() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/ncu-h200/raw_page.stdout");
        let input = replicate(&std::fs::read(path).unwrap(), 3000);
        let text = String::from_utf8(input).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let first = lines.iter().position(|l| l.starts_with("\"1000")).unwrap();
        let edit = |line: &mut String, column: usize, value: &str| {
            let mut cells: Vec<&str> = line[1..line.len() - 1].split("\",\"").collect();
            cells[column] = value;
            *line = format!("\"{}\"", cells.join("\",\""));
        };
        // Kernel names with an escaped quote (csv-crate path) in the first and second half.
        for at in [first + 300, first + 2200] {
            edit(&mut lines[at], 4, "k<\"\"q\"\">(int)");
        }
        // A second and a third device first seen in the helper's half (and in the first half).
        edit(&mut lines[first + 2500], 9, "1");
        edit(&mut lines[first + 10], 9, "2");
        let mut input = lines.join("\n").into_bytes();
        // The last row cut off mid-cell.
        input.truncate(input.len() - 700);
        for keep in [MetricFilter::Essential, MetricFilter::All] {
            let options = ParseOptions {
                keep,
                requested: vec!["dram__bytes_read.sum".to_string()],
            };
            let (one, _) = run_threads(&input, &options, true, 1);
            let (two, runs) = run_threads(&input, &options, true, 2);
            assert!(runs >= 2, "{runs}");
            assert_eq!(one, two);
            assert!(one.diagnostics.iter().any(|d| d.kind == "truncated_row"));
            assert!(one.session.contains_key("device.1.compute_capability"));
            assert!(one.session.contains_key("device.2.compute_capability"));
            assert!(one.kernels.iter().any(|k| k.name == "k<\"q\">(int)"));
            // And through the reader, in pieces of the default size and tiny ones.
            for step in [usize::MAX, 4096] {
                let mut kernels = Vec::new();
                let mut read = parse_reader_threads(
                    Trickle(&input, step.min(input.len())),
                    &options,
                    2,
                    &mut |k| kernels.push(k),
                )
                .unwrap();
                read.kernels = kernels;
                assert_eq!(read, one, "pieces of {step}");
            }
        }
    }

    #[test]
    fn fast_tokenizer_agrees_with_the_csv_crate_on_every_fixture() {
        let options = ParseOptions {
            keep: MetricFilter::All,
            ..Default::default()
        };
        let mut fast_rows = 0;
        for (name, bytes) in fixtures() {
            let fast = run(&bytes, &options, true);
            assert_eq!(fast, run(&bytes, &options, false), "{name}");
            fast_rows += fast.kernels.len();
        }
        assert!(fast_rows > 50);
    }

    /// A reader that hands out a few bytes at a time, so pieces end mid-line, mid-field and
    /// mid-byte-order-mark.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(self.0.len()).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn reading_in_pieces_gives_the_same_output() {
        let options = ParseOptions::default();
        let mut inputs = fixtures();
        // A quoted newline and an escaped quote (csv-crate path) cut across pieces.
        inputs.push((
            "odd".to_string(),
            b"\xEF\xBB\xBF==PROF== x\n\"ID\",\"Process ID\",\"Kernel Name\",\"m\"\n\"\",\"\",\"\",\"ns\"\n\"0\",\"7\",\"k<\"\"a\nb\"\">\",\"1,024\"\n\"1\",\"7\",\"k\",\"5\""
                .to_vec(),
        ));
        for (name, bytes) in inputs {
            let whole = parse(&bytes, &options);
            for step in [1, 7, 4096] {
                let mut kernels = Vec::new();
                let mut pieces =
                    parse_reader(Trickle(&bytes, step), &options, &mut |k| kernels.push(k))
                        .unwrap();
                pieces.kernels = kernels;
                assert_eq!(pieces, whole, "{name} in pieces of {step}");
            }
        }
    }
}
