//! Whether the candidate's own kernels (those its source defines) did the calls' work. A source
//! that defines kernels none of which ran in a call is a decoy: the work was done by something
//! else (library calls, or outside the calls). With `require_candidate_kernels`, a candidate
//! whose own kernels never ran in a call is a finding even without a decoy.

use serde_json::json;

use super::{Facts, LISTED_IDS, LISTED_NAMES, Measure, RuleOutcome, finding, listed};
use crate::eval::calls::{Placement, launch_placement};
use crate::eval::candidate_match::matching_candidate;
use crate::eval::timeline_facts::TimelineFacts;
use crate::eval::verdict::FindingKind;
use crate::model::kernel_name::short_kernel_name;

pub const CHECK: &str = "candidate_kernels";

pub fn check(facts: &Facts) -> RuleOutcome {
    let witness = match (facts.witness, facts.timeline) {
        (Ok(witness), _) => witness,
        (Err(_), Ok(timeline)) => return from_timeline(facts, timeline),
        (Err(why), Err(_)) => return RuleOutcome::skipped(CHECK, why),
    };
    let evidence = facts.evidence;
    let candidates = &evidence.candidate_kernels;
    let required = evidence.settings.require_candidate_kernels;
    if candidates.is_empty() && !required {
        return RuleOutcome::skipped(
            CHECK,
            "the candidate's source defines no kernel, and none is required",
        );
    }
    if !witness.summary.candidate_kernels_launched.is_empty() {
        return RuleOutcome::ran(CHECK, Vec::new());
    }
    let mut in_calls: Vec<String> = Vec::new();
    for launch in witness.placed.call_launches() {
        if in_calls.len() < LISTED_NAMES && !in_calls.contains(&launch.short_name) {
            in_calls.push(launch.short_name.clone());
        }
    }
    // Where the candidate's kernels did run, if anywhere (a lazy export, a thread).
    let all_launches = evidence.witness.iter().flat_map(|w| &w.launches);
    let elsewhere: Vec<serde_json::Value> = all_launches
        .filter(|l| matching_candidate(&l.short_name, candidates).is_some())
        .map(|l| {
            let placement = match launch_placement(l) {
                Placement::Export(call) => format!("export of call {call}"),
                Placement::Worker(name) => name,
                Placement::Outside(reason) => reason.describe(),
                Placement::Call(call) => format!("call {call}"),
            };
            json!({ "launch_id": l.launch_id, "name": l.short_name, "where": placement })
        })
        .collect();
    let (elsewhere, elsewhere_left_out) = listed(&elsewhere, LISTED_IDS);
    let evidence_json = json!({
        "candidate_kernels": candidates,
        "kernels_in_calls": in_calls,
        "candidate_launches_elsewhere": elsewhere,
        "candidate_launches_left_out": elsewhere_left_out,
    });
    let findings = none_of_its_own(candidates, required, &in_calls, "", evidence_json);
    RuleOutcome::ran(CHECK, findings)
}

/// The same judgement from the scored pass's timeline: the kernels that ran inside its calls.
fn from_timeline(facts: &Facts, timeline: &TimelineFacts) -> RuleOutcome {
    let candidates = &facts.evidence.candidate_kernels;
    let required = facts.evidence.settings.require_candidate_kernels;
    if candidates.is_empty() && !required {
        return RuleOutcome::skipped(
            CHECK,
            "the candidate's source defines no kernel, and none is required",
        );
    }
    let names = timeline.call_kernel_names();
    if names
        .iter()
        .any(|n| matching_candidate(&short_kernel_name(n), candidates).is_some())
    {
        return RuleOutcome::ran(CHECK, Vec::new());
    }
    let in_calls: Vec<String> = names
        .iter()
        .take(LISTED_NAMES)
        .map(|n| short_kernel_name(n))
        .collect();
    let evidence_json = json!({"candidate_kernels": candidates, "kernels_in_calls": in_calls});
    let findings = none_of_its_own(
        candidates,
        required,
        &in_calls,
        " on the GPU timeline",
        evidence_json,
    );
    RuleOutcome::ran(CHECK, findings)
}

/// The findings of calls that ran none of the candidate's own kernels: decoys when its source
/// defines some, and `no_candidate_kernel` when they are required. `seen`: where the calls were
/// looked at ("" or " on the GPU timeline").
fn none_of_its_own(
    candidates: &[String],
    required: bool,
    in_calls: &[String],
    seen: &str,
    evidence_json: serde_json::Value,
) -> Vec<crate::eval::verdict::Finding> {
    let none_ran = || Measure {
        measured: 0.0,
        limit: 1.0,
        unit: "kernels",
    };
    let mut findings = Vec::new();
    if !candidates.is_empty() {
        findings.push(finding(
            FindingKind::DecoyKernels,
            CHECK,
            format!(
                "the candidate defines {} but none of them ran in a call{seen}; the calls ran {}",
                candidates.join(", "),
                or_nothing(in_calls)
            ),
            none_ran(),
            evidence_json.clone(),
        ));
    }
    if required {
        findings.push(finding(
            FindingKind::NoCandidateKernel,
            CHECK,
            format!(
                "no kernel of the candidate's own ran in a call{seen} (required); the calls ran {}",
                or_nothing(in_calls)
            ),
            none_ran(),
            evidence_json,
        ));
    }
    findings
}

fn or_nothing(names: &[String]) -> String {
    if names.is_empty() {
        "no kernel".to_string()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::h200_captures;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::{evidence, launch};

    /// The calls run a library kernel; the candidate's `relu_kernel` runs only in the export.
    fn decoy() -> crate::eval::EvalEvidence {
        let mut e = evidence();
        if let Some(w) = e.witness.as_mut() {
            for l in &mut w.launches {
                if l.ranges.iter().any(|r| r.starts_with("polyprof/call/")) {
                    l.short_name = "at::native::clamp_kernel<float>".into();
                }
            }
            w.launches
                .push(launch(8, "relu_kernel", &["polyprof/export/11"], 1_000.0));
        }
        e
    }

    #[test]
    fn own_kernels_in_the_calls_find_nothing() {
        let outcome = run(check, &evidence());
        assert!(outcome.check.ran && outcome.findings.is_empty());
    }

    #[test]
    fn defined_kernels_that_never_ran_in_a_call_are_decoys() {
        let outcome = run(check, &decoy());
        assert_eq!(kinds(&outcome), [FindingKind::DecoyKernels]);
        let f = &outcome.findings[0];
        assert_eq!(
            f.evidence["kernels_in_calls"],
            json!(["at::native::clamp_kernel<float>"])
        );
        // Warmup (launch 1) and the export (launch 8) ran it, never a call.
        let elsewhere = &f.evidence["candidate_launches_elsewhere"];
        assert_eq!(elsewhere[0]["where"], "polyprof/warmup");
        assert_eq!(elsewhere[1]["where"], "export of call 11");
    }

    #[test]
    fn required_own_kernels_are_a_finding_of_their_own() {
        let mut e = decoy();
        e.settings.require_candidate_kernels = true;
        assert_eq!(
            kinds(&run(check, &e)),
            [FindingKind::DecoyKernels, FindingKind::NoCandidateKernel]
        );
        // A plain-PyTorch candidate defines none: no decoy, but none of its own ran.
        e.candidate_kernels.clear();
        assert_eq!(kinds(&run(check, &e)), [FindingKind::NoCandidateKernel]);
        e.settings.require_candidate_kernels = false;
        assert!(!run(check, &e).check.ran);
    }

    #[test]
    fn on_the_h200_a_compiled_kernel_never_launched_is_a_decoy() {
        let outcome = run(check, &h200_captures::evidence("hack_decoy"));
        assert!(outcome.check.ran, "{outcome:?}");
        assert_eq!(kinds(&outcome), [FindingKind::DecoyKernels]);
        let f = &outcome.findings[0];
        assert_eq!(f.evidence["candidate_kernels"], json!(["relu_vec4_kernel"]));
        // torch's clamp ran in the calls instead.
        assert!(f.message.contains("launch_clamp_scalar"), "{}", f.message);
    }
}
