//! What the ncu parser is asked to keep ([`MetricFilter`], [`ParseOptions`]) and what it
//! gathers while segments go by ([`Context`]). The page readers (`raw`, `details`, `session`)
//! and the dispatcher (`dispatch`) share it from here, so none of them imports another.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::diagnostics;
use crate::model::number;
use crate::model::parsed::Diagnostic;
use crate::model::record::KernelRecord;
use crate::model::verdict_metrics::{
    ALU_PIPE, DRAM_CLOCK, DRAM_SOL, FMA_PIPE, ISSUE_ACTIVE, LSU_PIPE, MEMORY_SOL, SM_CLOCK,
    TENSOR_PIPE,
};

/// Which metrics to keep in each record's `metrics` map, besides the normalized fields (duration,
/// DRAM bytes, occupancy, …), which are filled in every mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum MetricFilter {
    /// The launch facts the normalized fields do not carry ([`ESSENTIAL_METRICS`]: the
    /// occupancy limits, the shared memory carveout and per-block split, waves per SM), the
    /// kernel duration with its unit, the requested metrics and ncu's other rollups of the same
    /// counters (`dram__bytes_read.max` next to a requested `dram__bytes_read.sum`). The default:
    /// a 566-column `--set full` page is mostly counters nobody reads, and each kept cell costs
    /// ~150 bytes of map and strings against ~13 bytes of CSV.
    #[default]
    Essential,
    /// Every metric ncu printed (`polyprof parse --all-metrics`).
    All,
    /// Only these names (and no other, requested or not).
    Only(BTreeSet<String>),
}

/// What [`MetricFilter::Essential`] keeps (a trailing `_` is a prefix): eleven names on an H200
/// `--set full` page, one B-tree leaf per record; plus the clocks, speed-of-light splits and pipe
/// loads the roofline verdict reads (`results::roofline::RooflineInputs::from_record`, by the
/// names in `model::verdict_metrics`).
pub const ESSENTIAL_METRICS: &[&str] = &[
    "gpu__time_duration.sum",
    SM_CLOCK,
    DRAM_CLOCK,
    DRAM_SOL,
    MEMORY_SOL,
    TENSOR_PIPE,
    FMA_PIPE,
    ALU_PIPE,
    LSU_PIPE,
    ISSUE_ACTIVE,
    "launch__occupancy_limit_",
    "launch__shared_mem_config_size",
    "launch__shared_mem_per_block_driver",
    "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_static",
    "launch__waves_per_multiprocessor",
];

impl MetricFilter {
    /// Whether the name is kept for its own sake (requested names are added by the parser).
    pub fn keeps(&self, name: &str) -> bool {
        match self {
            MetricFilter::Essential => {
                ESSENTIAL_METRICS
                    .iter()
                    .any(|essential| match essential.strip_suffix('_') {
                        Some(_) => name.starts_with(essential),
                        None => name == *essential,
                    })
            }
            MetricFilter::All => true,
            MetricFilter::Only(names) => names.contains(name),
        }
    }
}

/// How to parse.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Which metrics land in each record's `metrics` map (default: [`MetricFilter::Essential`]).
    pub keep: MetricFilter,
    /// Metric names the run asked for: absent from the output is an error naming them; present
    /// but `n/a` on every launch is a warning.
    pub requested: Vec<String>,
    /// The short name a `--kernel` filter asked for when ncu was given only its function name
    /// (see `kernel_filter::widened_instance`): the other instances' launches are dropped.
    pub instance: Option<String>,
}

/// Everything gathered while the segments go by.
#[derive(Debug, Default)]
pub struct Context {
    pub(super) diagnostics: Vec<Diagnostic>,
    pub(super) session: BTreeMap<String, String>,
    pub(super) seen_devices: HashSet<String>,
    pub(super) details: Vec<KernelRecord>,
    pub(super) details_index: HashMap<(Option<u32>, u64), usize>,
    /// Metric names that appeared as raw columns or command-line rows.
    pub(super) metrics_seen: HashSet<String>,
    /// Requested metrics that had at least one numeric value.
    pub(super) numeric_seen: HashSet<String>,
    pub(super) tables_seen: usize,
    pub(super) kernels: usize,
    /// Cells of normalized fields that held no number a field may take.
    pub(super) bad_numbers: usize,
}

impl Context {
    pub fn session_insert(&mut self, key: String, value: String) {
        self.session.entry(key).or_insert(value);
    }

    /// True the first time a device id is seen (its attributes are recorded once).
    pub fn first_sight_of_device(&mut self, device: &str) -> bool {
        if self.seen_devices.contains(device) {
            return false;
        }
        self.seen_devices.insert(device.to_string());
        true
    }

    /// The details-page record of one launch, created on first sight.
    pub fn details_record(
        &mut self,
        key: (Option<u32>, u64),
        make: impl FnOnce() -> KernelRecord,
    ) -> &mut KernelRecord {
        let index = match self.details_index.get(&key) {
            Some(index) => *index,
            None => {
                self.details.push(make());
                let index = self.details.len() - 1;
                self.details_index.insert(key, index);
                index
            }
        };
        &mut self.details[index]
    }

    /// A requested metric had a numeric value somewhere.
    pub fn note_numeric(&mut self, name: &str) {
        if !self.numeric_seen.contains(name) {
            self.numeric_seen.insert(name.to_string());
        }
    }

    /// A metric name appeared in the output (raw column or command-line row).
    pub fn note_metric_seen(&mut self, name: &str) {
        if !self.metrics_seen.contains(name) {
            self.metrics_seen.insert(name.to_string());
        }
    }

    pub fn push_diagnostic(&mut self, diagnostic: Diagnostic) {
        diagnostics::push(&mut self.diagnostics, diagnostic);
    }

    /// A normalized field's cell that holds no number a field may take; the first few of the
    /// output are listed, the rest counted in the last one. The file is named by the caller,
    /// which knows it ([`number::NCU_OUTPUT`] stands for it here).
    pub fn push_bad_number(
        &mut self,
        row: &str,
        column: &str,
        text: &str,
        problem: number::Problem,
    ) {
        self.bad_numbers += 1;
        if self.bad_numbers <= number::REPORTED_PER_FILE {
            self.diagnostics.push(number::bad_number(
                number::NCU_OUTPUT,
                row,
                column,
                text,
                problem,
            ));
        } else if self.bad_numbers == number::REPORTED_PER_FILE + 1 {
            self.diagnostics.push(Diagnostic {
                severity: crate::model::parsed::Severity::Error,
                kind: number::BAD_NUMBER.to_string(),
                message: format!(
                    "`{}`: more bad numbers than the {} listed",
                    number::NCU_OUTPUT,
                    number::REPORTED_PER_FILE
                ),
                hint: None,
                metric: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::verdict_metrics::PIPE_LOADS;

    #[test]
    fn the_default_filter_keeps_what_the_verdict_reads() {
        for name in PIPE_LOADS
            .iter()
            .chain(&[DRAM_SOL, MEMORY_SOL, SM_CLOCK, DRAM_CLOCK])
        {
            assert!(MetricFilter::Essential.keeps(name), "{name}");
        }
    }
}
