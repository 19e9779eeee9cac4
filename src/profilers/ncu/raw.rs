//! The raw page (`--page raw`): a header, a units row, then one wide row per profiled launch.
//!
//! Everything that depends only on the header (column kinds, record fields, which metrics are
//! kept, units) is resolved once per table; a launch row then only touches the columns that feed
//! something.

use std::collections::{BTreeMap, HashSet};

use super::fields::{self, Field, IdentityIndex};
use super::parse::{Context, MetricFilter};
use super::row::Row;
use super::units::{normalize_unit, parse_number_bytes};
use crate::results::record::{KernelRecord, Metric, MetricValue};

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
    name: String,
    kind: Kind,
    /// Normalized unit and the factor that brings values to it.
    unit: String,
    factor: f64,
    field: Option<Field>,
    keep: bool,
    /// Asked for by name: its numeric values are noted for the n/a check.
    requested: bool,
    /// A numeric value of this requested column was already noted.
    noted: bool,
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
    kept: usize,
    units_read: bool,
    display_name: Option<usize>,
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
        let columns: Vec<Column> = header
            .iter()
            .enumerate()
            .map(|(index, name)| {
                let kind = if index < fields::IDENTITY_COLUMNS.len()
                    && fields::IDENTITY_COLUMNS.contains(&name.as_str())
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
                    name: name.clone(),
                    kind,
                    unit: String::new(),
                    factor: 1.0,
                    field,
                    keep,
                    requested: requested.contains(name.as_str()),
                    noted: false,
                }
            })
            .collect();
        let active = (0..columns.len())
            .filter(|&i| {
                let c = &columns[i];
                c.kind == Kind::Metric && (c.keep || c.field.is_some() || c.requested)
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
            units_read: false,
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
                    column.unit = base.unit.to_string();
                    column.factor = base.factor;
                }
                None => {
                    column.unit = unit.to_string();
                    column.factor = 1.0;
                }
            }
        }
    }

    /// One launch.
    pub fn record(&mut self, row: &Row, context: &mut Context) -> KernelRecord {
        let mut record = self.identity.record(row);
        let new_device = context.first_sight_of_device(record.device.as_deref().unwrap_or(""));
        if new_device {
            self.record_device(row, record.device.as_deref().unwrap_or(""), context);
        }
        if let Some(name) = fields::cell(row, self.display_name).filter(|n| !n.is_empty()) {
            record.device = Some(name.into_owned());
        }
        let mut metrics: Vec<(String, Metric)> = Vec::with_capacity(self.kept);
        for &index in &self.active {
            let Some(raw) = row.get(index).filter(|raw| !raw.is_empty()) else {
                continue;
            };
            let column = &mut self.columns[index];
            let number = parse_number_bytes(raw).map(|v| v * column.factor);
            if let (Some(field), Some(value)) = (column.field, number) {
                fields::apply(&mut record, field, value);
            }
            if column.requested && !column.noted && number.is_some() {
                column.noted = true;
                context.note_numeric(&column.name);
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
        record
    }

    /// The device's compute capability and attributes, once per device, into the session.
    fn record_device(&self, row: &Row, device_key: &str, context: &mut Context) {
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

/// Integers without a trailing `.0`, other values as Rust prints them.
pub fn format_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}
