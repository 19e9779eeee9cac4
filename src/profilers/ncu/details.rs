//! The details page (`--page details`, ncu's default): long rows, one per (launch, section,
//! metric), plus rule rows with advice and estimated speedups.
//!
//! Rows are ragged: metric rows stop after `Metric Value` (16 fields with a trailing comma), rule
//! rows have all 20. `--print-details all` inserts a `Body Item Label` column.

use super::context::Context;
use super::fields::{self, IdentityIndex};
use super::units::{parse_number, to_base};
use crate::model::record::{Metric, MetricValue, RuleResult};

/// The section under which `--metrics` requests appear; its metric names are ncu's own.
pub const COMMAND_LINE_SECTION: &str = "Command line profiler metrics";

#[derive(Debug, Clone)]
pub struct DetailsTable {
    identity: IdentityIndex,
    section: Option<usize>,
    body_label: Option<usize>,
    metric_name: Option<usize>,
    metric_unit: Option<usize>,
    metric_value: Option<usize>,
    rule_name: Option<usize>,
    rule_type: Option<usize>,
    rule_description: Option<usize>,
    speedup_type: Option<usize>,
    speedup: Option<usize>,
}

/// Does this header belong to the details page?
pub fn is_details_header(header: &[String]) -> bool {
    header.iter().any(|h| h == "Section Name") && header.iter().any(|h| h == "Metric Name")
}

impl DetailsTable {
    pub fn new(header: &[String]) -> Self {
        let find = |name: &str| header.iter().position(|h| h == name);
        DetailsTable {
            identity: IdentityIndex::from_header(header),
            section: find("Section Name"),
            body_label: find("Body Item Label"),
            metric_name: find("Metric Name"),
            metric_unit: find("Metric Unit"),
            metric_value: find("Metric Value"),
            rule_name: find("Rule Name"),
            rule_type: find("Rule Type"),
            rule_description: find("Rule Description"),
            speedup_type: find("Estimated Speedup Type"),
            speedup: find("Estimated Speedup"),
        }
    }

    /// Fold one row into its launch's record in `context`.
    pub fn apply(&self, row: &csv::ByteRecord, context: &mut Context) {
        let get = |index| fields::cell(row, index).unwrap_or_default();
        let section = get(self.section);
        let rule = get(self.rule_name);
        let key = self.identity.key(row);
        let identity = &self.identity;
        if !rule.is_empty() {
            let rule = RuleResult {
                section: section.to_string(),
                name: rule.to_string(),
                kind: get(self.rule_type).to_string(),
                description: get(self.rule_description).to_string(),
                estimated_speedup_pct: parse_number(&get(self.speedup)),
                estimated_speedup_type: get(self.speedup_type).to_string(),
            };
            context
                .details_record(key, || identity.record(row))
                .rules
                .push(rule);
            return;
        }
        let label = get(self.metric_name);
        if label.is_empty() {
            return;
        }
        let unit = get(self.metric_unit);
        let raw_value = get(self.metric_value);
        let number = parse_number(&raw_value);
        let command_line = section == COMMAND_LINE_SECTION;
        if command_line {
            context.note_metric_seen(&label);
            if number.is_some() {
                context.note_numeric(&label);
            }
        }
        let (value, unit) = match number {
            Some(number) => {
                let (value, unit) = to_base(number, &unit);
                (MetricValue::Number(value), unit)
            }
            None => (
                MetricValue::Text(raw_value.to_string()),
                unit.to_string().into(),
            ),
        };
        let field = if command_line {
            fields::field_for_metric(&label)
        } else {
            fields::field_for_label(&section, &label)
        };
        if let Some(field) = field {
            let measured = match &value {
                MetricValue::Number(number) => crate::model::number::check(*number).map(Some),
                MetricValue::Text(text) => crate::model::number::classify(text).map(|_| None),
            };
            match measured {
                Ok(Some(number)) => fields::apply(
                    context.details_record(key, || identity.record(row)),
                    field,
                    number,
                ),
                Ok(None) => {}
                Err(problem) => {
                    let launch = format!(
                        "launch {} of process {}",
                        key.1,
                        key.0.map_or("?".to_string(), |p| p.to_string())
                    );
                    context.push_bad_number(&launch, &label, &raw_value, problem);
                }
            }
        }
        let record = context.details_record(key, || identity.record(row));
        let body = get(self.body_label);
        let mut name = if command_line {
            label.to_string()
        } else if body.is_empty() {
            format!("{section}: {label}")
        } else {
            format!("{section}: {body}: {label}")
        };
        let metric = Metric { value, unit };
        // Some sections repeat a label (the roofline chart lists `SM Frequency` per chart);
        // identical repeats are dropped, different values get a `#n` suffix.
        let base = name.clone();
        let mut n = 1;
        while let Some(existing) = record.metrics.get(name.as_str()) {
            if *existing == metric {
                return;
            }
            n += 1;
            name = format!("{base} #{n}");
        }
        record.metrics.insert(name.into(), metric);
    }
}
