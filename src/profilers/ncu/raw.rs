//! The raw page (`--page raw`): a header, a units row, then one wide row per profiled launch.
//!
//! Everything that depends only on the header (column kinds, record fields, which metrics are
//! kept, units) is resolved once per table; a launch row then only touches the columns that feed
//! something.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::ops::Range;

use super::context::{Context, MetricFilter};
use super::fields::{self, Field, IdentityIndex};
use super::nvtx;
use super::row::{Cells, Row};
use super::units::{normalize_unit, parse_number_bytes};
use crate::model::number::{self, Problem};
use crate::model::parsed::{Diagnostic, Severity};
use crate::model::record::{KernelRecord, Metric, MetricName, MetricValue};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Identity,
    /// A per-launch metric.
    Metric,
    /// A property of the device (`device__attribute_*`, topology), recorded once per device in
    /// the session instead of on every launch.
    Device,
}

#[derive(Debug, Clone)]
struct Column {
    /// Interned once per header: every launch's metric key is a clone of it.
    name: MetricName,
    kind: Kind,
    /// Normalized unit (borrowed from a static string when it is a known base unit) and the
    /// factor that brings values to it.
    unit: Cow<'static, str>,
    factor: f64,
    field: Option<Field>,
    keep: bool,
    /// Asked for by name: its slot in [`RawTable::requested_columns`], whose numeric values are
    /// noted for the n/a check.
    requested: Option<usize>,
}

/// State of one raw-page table while its rows stream by.
#[derive(Debug, Clone)]
pub struct RawTable {
    identity: IdentityIndex,
    columns: Vec<Column>,
    /// Metric columns read on every launch: they feed a field, were requested or are kept.
    active: Vec<usize>,
    /// Device columns, read on the first launch of each device.
    device_columns: Vec<usize>,
    /// Requested columns, and whether a numeric value of each was already noted.
    requested_columns: Vec<usize>,
    noted: Vec<bool>,
    kept: usize,
    units_read: bool,
    display_name: Option<usize>,
    /// The last NVTX column (`--nvtx`): a row with more cells than the header was split inside
    /// the NVTX cells, and its columns past this one are read from the right.
    last_range_column: Option<usize>,
}

/// A launch record built from its row alone ([`RawTable::build`], which can run on any thread),
/// with what [`RawTable::settle`] needs to do the row's bookkeeping afterwards, in row order.
#[derive(Debug)]
pub struct Built {
    record: KernelRecord,
    /// Where the row's `Device` cell (the key of the device's session facts) lies in its data.
    device: Option<Range<usize>>,
    /// Number of cells of the row (fewer than the header's: the row was cut off; more: a cell
    /// was split).
    cells: usize,
    /// Cells of normalized fields that hold no number a field may take: column, text, problem.
    bad: Vec<(usize, String, Problem)>,
}

fn is_device_column(name: &str) -> bool {
    name.starts_with("device__attribute_")
        || name.starts_with("nvlink__")
        || name.starts_with("numa__")
        || name.starts_with("c2clink__")
}

/// The counter a metric name rolls up (`dram__bytes_read.sum` → `dram__bytes_read`).
fn counter(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

impl RawTable {
    /// `requested` are the run's requested metric names: kept in every mode but
    /// [`MetricFilter::Only`], together with ncu's other rollups of the same counters.
    pub fn new(header: &[String], filter: &MetricFilter, requested: &HashSet<&str>) -> Self {
        let identity = IdentityIndex::from_header(header);
        let requested_counters: HashSet<&str> = requested.iter().map(|n| counter(n)).collect();
        // `--nvtx` inserts its two columns among the identity columns.
        let range_columns = header.iter().filter(|h| nvtx::is_range_column(h)).count();
        let columns: Vec<Column> = header
            .iter()
            .enumerate()
            .map(|(index, name)| {
                let kind = if nvtx::is_range_column(name)
                    || (index < fields::IDENTITY_COLUMNS.len() + range_columns
                        && fields::IDENTITY_COLUMNS.contains(&name.as_str()))
                {
                    Kind::Identity
                } else if is_device_column(name) {
                    Kind::Device
                } else {
                    Kind::Metric
                };
                let field = fields::field_for_metric(name);
                let keep = kind == Kind::Metric
                    && match filter {
                        MetricFilter::Only(_) | MetricFilter::All => filter.keeps(name),
                        MetricFilter::Essential => {
                            filter.keeps(name) || requested_counters.contains(counter(name))
                        }
                    };
                Column {
                    name: MetricName::new(name),
                    kind,
                    unit: Cow::Borrowed(""),
                    factor: 1.0,
                    field,
                    keep,
                    requested: None,
                }
            })
            .collect();
        let mut columns = columns;
        let requested_columns: Vec<usize> = (0..columns.len())
            .filter(|&i| {
                columns[i].kind == Kind::Metric && requested.contains(columns[i].name.as_str())
            })
            .collect();
        for (slot, &index) in requested_columns.iter().enumerate() {
            columns[index].requested = Some(slot);
        }
        let active = (0..columns.len())
            .filter(|&i| {
                let c = &columns[i];
                c.kind == Kind::Metric && (c.keep || c.field.is_some() || c.requested.is_some())
            })
            .collect();
        let device_columns = (0..columns.len())
            .filter(|&i| columns[i].kind == Kind::Device)
            .collect();
        RawTable {
            identity,
            display_name: header
                .iter()
                .position(|h| h == "device__attribute_display_name"),
            kept: columns.iter().filter(|c| c.keep).count(),
            columns,
            active,
            device_columns,
            noted: vec![false; requested_columns.len()],
            requested_columns,
            units_read: false,
            last_range_column: header.iter().rposition(|h| nvtx::is_range_column(h)),
        }
    }

    /// Number of columns of the header.
    pub fn width(&self) -> usize {
        self.columns.len()
    }

    /// Metric column names, in header order.
    pub fn metric_names(&self) -> impl Iterator<Item = &str> {
        self.columns
            .iter()
            .filter(|c| c.kind != Kind::Identity)
            .map(|c| c.name.as_str())
    }

    /// The units row follows the header; its identity cells are empty.
    pub fn is_units_row(&self, row: &Row) -> bool {
        !self.units_read && row.get(0).is_some_and(|id| id.is_empty())
    }

    pub fn read_units(&mut self, row: &Row) {
        self.units_read = true;
        for (column, unit) in self.columns.iter_mut().zip(row.iter()) {
            let unit = String::from_utf8_lossy(unit);
            let unit = unit.trim();
            match normalize_unit(unit) {
                Some(base) => {
                    column.unit = Cow::Borrowed(base.unit);
                    column.factor = base.factor;
                }
                None => {
                    column.unit = Cow::Owned(unit.to_string());
                    column.factor = 1.0;
                }
            }
        }
    }

    /// One launch, built and settled (the sequential path).
    pub fn record(&mut self, row: &Row, context: &mut Context) -> KernelRecord {
        let mut seen = self.seen_flags();
        let built = self.build(row, &mut seen);
        self.absorb(&seen, context);
        let (record, new_device) = self.settle(built, row.data(), context);
        if let Some(device) = new_device {
            self.record_device(row, &device, context);
        }
        record
    }

    /// One launch's record from its row alone: reads the table, changes nothing else, so
    /// several threads can build rows of the same table at once. `seen` (one flag per requested
    /// column, see [`RawTable::seen_flags`]) marks requested columns that had a number.
    pub fn build(&self, row: &Row, seen: &mut [bool]) -> Built {
        let row = &self.aligned(row);
        let mut record = self.identity.record(row);
        if row.shift > 0 {
            // The split NVTX cells cannot be told apart: no ranges rather than wrong ones.
            record.ranges.clear();
            record.process_ranges.clear();
            record.thread_id = None;
        }
        let device = self.identity.device.and_then(|index| row.span(index));
        if let Some(name) = fields::cell(row, self.display_name).filter(|n| !n.is_empty()) {
            record.device = Some(name.into_owned());
        }
        let mut metrics: Vec<(MetricName, Metric)> = Vec::with_capacity(self.kept);
        let mut bad = Vec::new();
        for &index in &self.active {
            let Some(raw) = row.get(index).filter(|raw| !raw.is_empty()) else {
                continue;
            };
            let column = &self.columns[index];
            let number = parse_number_bytes(raw).map(|v| v * column.factor);
            if let Some(field) = column.field {
                match checked(number, raw) {
                    Ok(Some(value)) => fields::apply(&mut record, field, value),
                    Ok(None) => {}
                    Err(problem) => {
                        let text = String::from_utf8_lossy(raw).trim().to_string();
                        bad.push((index, text, problem));
                    }
                }
            }
            if let (Some(slot), Some(_)) = (column.requested, number) {
                seen[slot] = true;
            }
            if column.keep {
                let value = match number {
                    Some(v) => MetricValue::Number(v),
                    None => MetricValue::Text(String::from_utf8_lossy(raw).trim().to_string()),
                };
                metrics.push((
                    column.name.clone(),
                    Metric {
                        value,
                        unit: column.unit.clone(),
                    },
                ));
            }
        }
        // ncu sorts metric columns by name, so this is a linear bulk build.
        record.metrics = BTreeMap::from_iter(metrics);
        Built {
            record,
            device,
            cells: row.row.len(),
            bad,
        }
    }

    /// Flags for [`RawTable::build`]: the requested columns already noted.
    pub fn seen_flags(&self) -> Vec<bool> {
        self.noted.clone()
    }

    /// Fold flags filled by [`RawTable::build`] into the table; requested columns seen with a
    /// number for the first time are noted in the context. Order does not matter.
    pub fn absorb(&mut self, seen: &[bool], context: &mut Context) {
        for (slot, &index) in self.requested_columns.iter().enumerate() {
            if seen[slot] && !self.noted[slot] {
                self.noted[slot] = true;
                context.note_numeric(&self.columns[index].name);
            }
        }
    }

    /// The bookkeeping of one built row (`data` is its [`Row::data`]), to be called in row
    /// order: the cut-off-row warning, and on a device's first launch its key, for which the
    /// caller passes the row to [`RawTable::record_device`].
    pub fn settle(
        &self,
        built: Built,
        data: &[u8],
        context: &mut Context,
    ) -> (KernelRecord, Option<String>) {
        let Built {
            record,
            device,
            cells,
            bad,
        } = built;
        for (index, text, problem) in bad {
            let launch = format!(
                "launch {} of process {}",
                record.launch_id,
                record.process_id.map_or("?".to_string(), |p| p.to_string())
            );
            context.push_bad_number(&launch, &self.columns[index].name, &text, problem);
        }
        let device = device
            .and_then(|span| data.get(span))
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let device = device.trim();
        let new_device = context
            .first_sight_of_device(device)
            .then(|| device.to_string());
        if cells < self.width() {
            context.push_diagnostic(Diagnostic {
                severity: Severity::Warning,
                kind: "truncated_row".to_string(),
                message: format!(
                    "launch {} of process {} has {} of {} columns; ncu's output was cut off",
                    record.launch_id,
                    record.process_id.map_or("?".to_string(), |p| p.to_string()),
                    cells,
                    self.width()
                ),
                hint: Some("the profiler was probably killed while writing".to_string()),
                metric: None,
            });
        } else if cells > self.width() {
            let launch = format!(
                "launch {} of process {}",
                record.launch_id,
                record.process_id.map_or("?".to_string(), |p| p.to_string())
            );
            let message = if self.last_range_column.is_some() {
                format!(
                    "{launch} has {cells} cells for {} columns: a `\"` in an NVTX range name, \
                     which ncu writes unescaped, split its range cell; the columns after the \
                     ranges were read from the right and its ranges left out",
                    self.width()
                )
            } else {
                format!(
                    "{launch} has {cells} cells for {} columns; ncu's CSV quoting broke and \
                     its values may be misread",
                    self.width()
                )
            };
            context.push_diagnostic(Diagnostic {
                severity: Severity::Warning,
                kind: "split_row".to_string(),
                message,
                hint: Some("keep `\"` out of NVTX range names".to_string()),
                metric: None,
            });
        }
        (record, new_device)
    }

    /// The device's compute capability and attributes, once per device, into the session.
    pub fn record_device(&self, row: &Row, device_key: &str, context: &mut Context) {
        let row = &self.aligned(row);
        if let Some(cc) = fields::cell(row, self.identity.cc) {
            context.session_insert(
                format!("device.{device_key}.compute_capability"),
                cc.into_owned(),
            );
        }
        for &index in &self.device_columns {
            let column = &self.columns[index];
            let Some(raw) = row.get(index).filter(|raw| !raw.is_empty()) else {
                continue;
            };
            let value = match parse_number_bytes(raw).map(|v| v * column.factor) {
                Some(v) => format_number(v),
                None => String::from_utf8_lossy(raw).trim().to_string(),
            };
            let short = column
                .name
                .strip_prefix("device__attribute_")
                .unwrap_or(&column.name);
            context.session_insert(format!("device.{device_key}.{short}"), value);
        }
    }
}

impl RawTable {
    /// `row` with its columns past the NVTX columns shifted by the cells it has too many.
    fn aligned<'r, 'a>(&self, row: &'r Row<'a>) -> Aligned<'r, 'a> {
        let shift = match self.last_range_column {
            Some(_) => row.len().saturating_sub(self.width()),
            None => 0,
        };
        Aligned {
            row,
            after: self.last_range_column.unwrap_or(usize::MAX),
            shift,
        }
    }
}

/// A row read through the header's column indices, past a split NVTX cell.
struct Aligned<'r, 'a> {
    row: &'r Row<'a>,
    after: usize,
    shift: usize,
}

impl<'a> Aligned<'_, 'a> {
    fn at(&self, index: usize) -> usize {
        if index > self.after {
            index + self.shift
        } else {
            index
        }
    }

    fn get(&self, index: usize) -> Option<&'a [u8]> {
        self.row.get(self.at(index))
    }

    fn span(&self, index: usize) -> Option<Range<usize>> {
        self.row.span(self.at(index))
    }
}

impl Cells for Aligned<'_, '_> {
    fn cell_bytes(&self, index: usize) -> Option<&[u8]> {
        self.get(index)
    }
    fn cell_count(&self) -> usize {
        self.row.len() - self.shift
    }
}

/// A field cell's value as a field may hold it: `Ok(None)` when the cell says "not measured"
/// (`n/a`), the problem when it holds `-5`, `inf`, `1e308` or text.
pub fn checked(number: Option<f64>, raw: &[u8]) -> Result<Option<f64>, Problem> {
    match number {
        Some(value) => number::check(value).map(Some),
        None => {
            number::classify(&String::from_utf8_lossy(raw))?;
            Ok(None)
        }
    }
}

/// Integers without a trailing `.0`, other values as Rust prints them.
pub fn format_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}
