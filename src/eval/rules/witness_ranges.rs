//! Launches where no call was running: in no polyprof range (another thread, work left
//! running after the call returned) or in the export of a call's outputs (work deferred until
//! the outputs are read, e.g. lazy outputs). Either is work the candidate's timer did not see.

use std::collections::BTreeMap;

use serde_json::json;

use super::{Facts, LISTED_IDS, LISTED_NAMES, Measure, RuleOutcome, finding, listed};
use crate::eval::evidence::WitnessLaunch;
use crate::eval::verdict::{Finding, FindingKind};

pub const CHECK: &str = "witness_ranges";

pub fn check(facts: &Facts) -> RuleOutcome {
    let witness = match facts.witness {
        Ok(witness) => witness,
        Err(why) => return RuleOutcome::skipped(CHECK, why),
    };
    let mut findings = Vec::new();
    let outside = &witness.placed.outside;
    if !outside.is_empty() {
        let launches: Vec<&WitnessLaunch> = outside.iter().map(|(l, _)| *l).collect();
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        for (_, reason) in outside {
            *reasons.entry(reason.describe()).or_default() += 1;
        }
        findings.push(launches_finding(
            FindingKind::KernelsOutsideCalls,
            format!(
                "{} kernel launch(es) ran outside the worker's ranges ({}): another thread or \
                 work the call left running",
                launches.len(),
                names(&launches).join(", ")
            ),
            &launches,
            json!({ "reasons": reasons }),
        ));
    }
    let exports = &witness.placed.exports;
    if !exports.is_empty() {
        let launches: Vec<&WitnessLaunch> = exports.values().flatten().copied().collect();
        findings.push(launches_finding(
            FindingKind::WorkAfterCall,
            format!(
                "{} kernel launch(es) ran while call outputs were exported, after the call \
                 returned ({}): the outputs were computed late",
                launches.len(),
                names(&launches).join(", ")
            ),
            &launches,
            json!({ "calls": exports.keys().collect::<Vec<_>>() }),
        ));
    }
    RuleOutcome::ran(CHECK, findings)
}

/// A finding about `launches`: their count, ids, first distinct names and GPU time.
fn launches_finding(
    kind: FindingKind,
    message: String,
    launches: &[&WitnessLaunch],
    mut evidence: serde_json::Value,
) -> Finding {
    let ids: Vec<u64> = launches.iter().map(|l| l.launch_id).collect();
    let (ids, more) = listed(&ids, LISTED_IDS);
    let gpu_ms: f64 = launches.iter().filter_map(|l| l.duration_ns).sum::<f64>() / 1e6;
    if let Some(map) = evidence.as_object_mut() {
        map.insert("launch_ids".into(), ids);
        map.insert("launch_ids_left_out".into(), more.into());
        map.insert("names".into(), json!(names(launches)));
        map.insert("gpu_ms".into(), json!(gpu_ms));
    }
    finding(
        kind,
        CHECK,
        message,
        Measure {
            measured: launches.len() as f64,
            limit: 0.0,
            unit: "launches",
        },
        evidence,
    )
}

/// The first distinct short names of `launches`.
fn names(launches: &[&WitnessLaunch]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for launch in launches {
        if names.len() == LISTED_NAMES {
            break;
        }
        if !names.contains(&launch.short_name) {
            names.push(launch.short_name.clone());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::{evidence, launch};

    #[test]
    fn launches_inside_the_worker_ranges_find_nothing() {
        let outcome = run(check, &evidence());
        assert!(outcome.check.ran && outcome.findings.is_empty());
    }

    #[test]
    fn a_background_thread_and_a_lazy_export_are_found() {
        let mut e = evidence();
        if let Some(w) = e.witness.as_mut() {
            w.launches.push(launch(6, "relu_kernel", &[], 150_000.0));
            w.launches
                .push(launch(7, "relu_kernel", &["polyprof/export/11"], 150_000.0));
        }
        let outcome = run(check, &e);
        assert_eq!(
            kinds(&outcome),
            [FindingKind::KernelsOutsideCalls, FindingKind::WorkAfterCall]
        );
        let outside = &outcome.findings[0];
        assert_eq!(outside.measured, Some(1.0));
        assert_eq!(outside.evidence["launch_ids"], json!([6]));
        assert_eq!(outside.evidence["names"], json!(["relu_kernel"]));
        assert_eq!(outside.evidence["reasons"]["no polyprof range"], 1);
        assert!((outside.evidence["gpu_ms"].as_f64().unwrap() - 0.15).abs() < 1e-12);
        assert_eq!(outcome.findings[1].evidence["calls"], json!([11]));
        assert_eq!(outcome.findings[1].evidence["launch_ids"], json!([7]));
    }

    #[test]
    fn a_harness_range_pushed_on_another_thread_is_outside() {
        let mut e = evidence();
        if let Some(w) = e.witness.as_mut() {
            let mut spoof = launch(6, "relu_kernel", &["polyprof/poison"], 150_000.0);
            spoof.thread_id = Some(9001);
            w.launches.push(spoof);
        }
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::KernelsOutsideCalls]);
        assert_eq!(
            outcome.findings[0].evidence["reasons"]["thread 9001, not the worker's (process 575)"],
            1
        );
    }

    #[test]
    fn without_witness_launches_it_does_not_run() {
        let mut e = evidence();
        if let Some(w) = e.witness.as_mut() {
            w.error = Some("ncu exited 1".into());
        }
        let outcome = run(check, &e);
        assert_eq!(
            outcome.check.why_not.as_deref(),
            Some("witness error: ncu exited 1")
        );
    }
}
