//! The stream: ncu's mixed output read line by line. CSV rows take the fast tokenizer (or the
//! csv crate when it refuses one) and go to the table dispatcher; long runs of launch rows go to
//! the two-thread batcher; other lines are classified as ncu messages and diagnostics.

use std::collections::HashSet;

use super::checks::{finish, is_checkable};
use super::context::{Context, ParseOptions};
use super::diagnostics;
use super::dispatch::{Table, note_message, read_row, read_with_csv_crate};
use super::parallel::Batcher;
use super::row::Splitter;
use super::scan::{self, Segment};
use crate::model::parsed::ParsedOutput;
use crate::model::record::KernelRecord;

/// The line-by-line state machine behind `parse::parse_with` and `parse::parse_reader`.
pub(super) struct Parser<'o> {
    options: &'o ParseOptions,
    requested: HashSet<&'o str>,
    context: Context,
    table: Table,
    splitter: Splitter,
    messages: Vec<Segment>,
    started: bool,
    /// False only in tests that check the fast tokenizer against the csv crate.
    pub(super) fast: bool,
    /// Build records of long runs of launch rows on two threads.
    parallel: bool,
    /// Runs of launch rows gathered and built on two threads.
    pub(super) batcher: Batcher,
}

impl<'o> Parser<'o> {
    pub(super) fn new(options: &'o ParseOptions, threads: usize) -> Self {
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
            batcher: Batcher::default(),
        }
    }

    /// Parse the complete lines of `input` (all of it when `eof`); returns how many bytes were
    /// consumed. The rest must be fed again, with more input behind it.
    pub(super) fn feed(
        &mut self,
        input: &[u8],
        eof: bool,
        sink: &mut dyn FnMut(KernelRecord),
    ) -> usize {
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
                && let Table::Raw(raw) = &mut self.table
            {
                let (next, run_end) =
                    self.batcher
                        .run(input, pos, eof, raw, &mut self.context, sink);
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

    pub(super) fn finish(self, sink: &mut dyn FnMut(KernelRecord)) -> ParsedOutput {
        finish(self.context, &self.requested, sink)
    }
}
