//! Long runs of raw-page launch rows built on two threads: the calling thread builds and settles
//! the first half while a helper builds the second, then the helper's records are settled in
//! order, so the output is the same as on one thread.

use super::context::Context;
use super::raw::{Built, RawTable};
use super::row::Splitter;
use super::scan;
use crate::model::record::KernelRecord;

/// Consecutive launch rows of one raw page, within one piece of input, from which their records
/// are built on two threads. Building a record takes 2–5 µs and starting the helper thread
/// ~30 µs, so a run of this size loses under 5 % to it; small profiles take the simple path.
pub const PARALLEL_MIN_ROWS: usize = 200;

/// Two when the machine has at least two cores, else one.
pub(super) fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(2))
}

/// The run of launch rows being gathered and what building runs on two threads needs.
#[derive(Default)]
pub(super) struct Batcher {
    /// Line bounds of the run of launch rows being gathered (reused).
    lines: Vec<(usize, usize)>,
    /// Its own tokenizer buffers (the calling thread's half).
    splitter: Splitter,
    /// Runs built on two threads so far (tests check the parallel path ran).
    pub(super) runs: usize,
}

impl Batcher {
    /// Gather the run of complete launch rows (`"<digit>…`) of `raw` starting at `pos`; when it
    /// has at least [`PARALLEL_MIN_ROWS`] rows, build its records on two threads and settle them
    /// in order. Returns where parsing continues (`pos` when the run was too short; the first
    /// row the fast tokenizer refused, for the csv-crate path, otherwise the run's end) and the
    /// run's end.
    pub(super) fn run(
        &mut self,
        input: &[u8],
        pos: usize,
        eof: bool,
        raw: &mut RawTable,
        context: &mut Context,
        sink: &mut dyn FnMut(KernelRecord),
    ) -> (usize, usize) {
        self.lines.clear();
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
            self.lines.push((next, next + line.len()));
            next = (end + 1).min(input.len());
        }
        let run_end = next;
        if self.lines.len() < PARALLEL_MIN_ROWS {
            return (pos, run_end);
        }
        self.runs += 1;
        let (mine, theirs) = self.lines.split_at(self.lines.len() / 2);
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
