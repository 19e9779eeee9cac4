//! Bytes in, records out: ncu's mixed output (stdout, `--log-file`, `--import` exports) parsed
//! into normalized kernel records, classified diagnostics and session facts. Pure functions.
//! The entry points and the reading loop live here; the concerns behind them in their own files:
//! `stream` (line by line, tokenizer), `parallel` (two-thread batches), `dispatch` (rows to page
//! tables), `checks` (end-of-input checks), `merge` (across files).

use crate::model::duration_check::DurationCheck;
use std::io::Read;

pub use super::checks::flag_empty;
pub use super::context::{Context, ESSENTIAL_METRICS, MetricFilter, ParseOptions};
pub use super::merge::merge;
pub use super::parallel::PARALLEL_MIN_ROWS;
use super::parallel::default_threads;
use super::row;
use super::stream::Parser;
use crate::model::input::{MAX_LINE_BYTES, line_too_long};
use crate::model::parsed::ParsedOutput;
use crate::model::record::KernelRecord;

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
    let mut durations = DurationCheck::default();
    let mut parsed = parse_reader_threads(reader, options, default_threads(), &mut |kernel| {
        durations.see(&kernel);
        sink(kernel)
    })?;
    durations.flag(&mut parsed, "gpu__time_duration.sum");
    Ok(parsed)
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
    // Bytes of the input already consumed: where the pending line starts.
    let mut offset = 0usize;
    loop {
        if filled == buffer.len() {
            // One line longer than the buffer: make room for it, up to the line limit, so an
            // endless newline-free input ends in an error instead of an allocation abort.
            if buffer.len() >= MAX_LINE_BYTES + PIECE {
                return Err(line_too_long(
                    &format!("the line at byte {offset}"),
                    MAX_LINE_BYTES,
                ));
            }
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
        offset += consumed;
    }
    Ok(parser.finish(sink))
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
        let runs = parser.batcher.runs;
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
                ..Default::default()
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
