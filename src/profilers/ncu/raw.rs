//! The raw page (`--page raw`): a header, a units row, then one wide row per profiled launch.

use std::collections::{BTreeMap, HashSet};

use super::fields::{self, Field, IdentityIndex};
use super::parse::{Context, MetricFilter};
use super::units::{normalize_unit, parse_number};
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
}

/// State of one raw-page table while its rows stream by.
#[derive(Debug, Clone)]
pub struct RawTable {
    identity: IdentityIndex,
    columns: Vec<Column>,
    units_read: bool,
    display_name: Option<usize>,
}

fn is_device_column(name: &str) -> bool {
    name.starts_with("device__attribute_")
        || name.starts_with("nvlink__")
        || name.starts_with("numa__")
        || name.starts_with("c2clink__")
}

impl RawTable {
    pub fn new(header: &[String], filter: &MetricFilter, requested: &HashSet<&str>) -> Self {
        let identity = IdentityIndex::from_header(header);
        let columns = header
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
                Column {
                    name: name.clone(),
                    kind,
                    unit: String::new(),
                    factor: 1.0,
                    field: fields::field_for_metric(name),
                    keep: kind == Kind::Metric && filter.keeps(name),
                    requested: requested.contains(name.as_str()),
                }
            })
            .collect();
        RawTable {
            identity,
            display_name: header
                .iter()
                .position(|h| h == "device__attribute_display_name"),
            columns,
            units_read: false,
        }
    }

    /// Metric column names, in header order.
    pub fn metric_names(&self) -> impl Iterator<Item = &str> {
        self.columns
            .iter()
            .filter(|c| c.kind != Kind::Identity)
            .map(|c| c.name.as_str())
    }

    /// The units row follows the header; its identity cells are empty.
    pub fn is_units_row(&self, row: &csv::ByteRecord) -> bool {
        !self.units_read && row.get(0).is_some_and(|id| id.is_empty())
    }

    pub fn read_units(&mut self, row: &csv::ByteRecord) {
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
    pub fn record(&self, row: &csv::ByteRecord, context: &mut Context) -> KernelRecord {
        let mut record = self.identity.record(row);
        let device_key = record.device.clone().unwrap_or_default();
        let new_device = context.first_sight_of_device(&device_key);
        if let Some(name) = fields::cell(row, self.display_name).filter(|n| !n.is_empty()) {
            record.device = Some(name.into_owned());
        }
        if new_device && let Some(cc) = fields::cell(row, self.identity.cc) {
            context.session_insert(
                format!("device.{device_key}.compute_capability"),
                cc.into_owned(),
            );
        }
        let mut metrics: Vec<(String, Metric)> = Vec::new();
        for (column, raw) in self.columns.iter().zip(row.iter()) {
            if column.kind == Kind::Identity
                || raw.is_empty()
                || (column.kind == Kind::Metric
                    && !column.keep
                    && column.field.is_none()
                    && !column.requested)
                || (column.kind == Kind::Device && !new_device)
            {
                // Cells nobody will read are not even converted.
                continue;
            }
            let text = std::str::from_utf8(raw).ok();
            let number = text.and_then(parse_number).map(|v| v * column.factor);
            match column.kind {
                Kind::Device => {
                    if new_device {
                        let value = match number {
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
                Kind::Metric => {
                    if let (Some(field), Some(value)) = (column.field, number) {
                        fields::apply(&mut record, field, value);
                    }
                    if column.requested && number.is_some() {
                        context.note_numeric(&column.name);
                    }
                    if column.keep {
                        let value = match number {
                            Some(v) => MetricValue::Number(v),
                            None => {
                                MetricValue::Text(String::from_utf8_lossy(raw).trim().to_string())
                            }
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
                Kind::Identity => {}
            }
        }
        // ncu sorts metric columns by name, so this is a linear bulk build.
        record.metrics = BTreeMap::from_iter(metrics);
        record
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
