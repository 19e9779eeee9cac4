//! Across files of one run: records of the same launch (raw, details and session pages, the
//! log) folded into one, and diagnostics that another file answers dropped.

use std::collections::HashMap;

use super::diagnostics;
use crate::model::parsed::ParsedOutput;
use crate::model::record::KernelRecord;

/// Fold `other` into `target`: launches are matched on (process id, launch id); fields already
/// set in `target` win, metrics and rules it lacks are added.
pub fn merge(target: &mut ParsedOutput, other: ParsedOutput) {
    let mut index: HashMap<(Option<u32>, u64), usize> = target
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| ((k.process_id, k.launch_id), i))
        .collect();
    for kernel in other.kernels {
        let key = (kernel.process_id, kernel.launch_id);
        match index.get(&key) {
            Some(&i) => merge_record(&mut target.kernels[i], kernel),
            None => {
                index.insert(key, target.kernels.len());
                target.kernels.push(kernel);
            }
        }
    }
    for diagnostic in other.diagnostics {
        diagnostics::push(&mut target.diagnostics, diagnostic);
    }
    for (key, value) in other.session {
        target.session.entry(key).or_insert(value);
    }
}

fn merge_record(target: &mut KernelRecord, other: KernelRecord) {
    // Identity, the normalized numbers (model::fields) and every precision's FLOPs.
    target.fill_missing(&other);
    if target.name.is_empty() {
        target.name = other.name;
        target.short_name = other.short_name;
    }
    for (name, metric) in other.metrics {
        target.metrics.entry(name).or_insert(metric);
    }
    for rule in other.rules {
        if !target.rules.contains(&rule) {
            target.rules.push(rule);
        }
    }
}

/// A metric absent from one page but present on another of the same run is not missing.
pub fn drop_cross_artifact_false_alarms(parsed: &mut ParsedOutput) {
    let present = |name: &str| parsed.kernels.iter().any(|k| k.metrics.contains_key(name));
    let keep: Vec<bool> = parsed
        .diagnostics
        .iter()
        .map(|d| d.kind != "metric_missing" || !d.metric.as_deref().is_some_and(&present))
        .collect();
    let mut flags = keep.into_iter();
    parsed.diagnostics.retain(|_| flags.next().unwrap_or(true));
}
