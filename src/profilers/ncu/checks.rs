//! What is judged once the input is done: the details page's records released, short session
//! facts derived, requested metrics that never appeared (or never had a number) reported, and an
//! output with nothing in it flagged.

use std::collections::{BTreeMap, HashSet};

use super::context::Context;
use super::diagnostics;
use crate::model::parsed::{Diagnostic, ParsedOutput, Severity};
use crate::model::record::KernelRecord;

/// Names the missing-metric check can judge (regex and breakdown requests expand to others).
pub(super) fn is_checkable(name: &str) -> bool {
    !name.contains(':') && name.contains("__")
}

/// Release the records held back, derive session facts and check the requested metrics.
pub(super) fn finish(
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
        memory_commands: Vec::new(),
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
