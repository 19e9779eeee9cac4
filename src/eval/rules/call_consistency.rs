//! Every witnessed call makes the same computation on same-shaped inputs, so it should launch
//! the same kernels. A call that launches other kernels, more or fewer (or none: a result
//! replayed from an earlier call) did not do the work the others did.

use std::collections::BTreeMap;

use serde_json::json;

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::verdict::FindingKind;

pub const CHECK: &str = "call_consistency";

/// Kernel short name → launches in one call.
type KernelCounts = BTreeMap<String, usize>;

pub fn check(facts: &Facts) -> RuleOutcome {
    let witness = match facts.witness {
        Ok(witness) => witness,
        Err(why) => return RuleOutcome::skipped(CHECK, why),
    };
    let calls = &witness.placed.calls;
    if calls.len() < 2 {
        return RuleOutcome::skipped(
            CHECK,
            format!(
                "{} witnessed call(s); two are needed to compare",
                calls.len()
            ),
        );
    }
    let counts: Vec<(u32, KernelCounts)> = calls
        .iter()
        .map(|(&call, launches)| {
            let mut kernels = KernelCounts::new();
            for launch in launches {
                *kernels.entry(launch.short_name.clone()).or_default() += 1;
            }
            (call, kernels)
        })
        .collect();
    let usual = most_common(&counts);
    let differing: Vec<&(u32, KernelCounts)> = counts
        .iter()
        .filter(|(_, kernels)| kernels != usual)
        .collect();
    if differing.is_empty() {
        return RuleOutcome::ran(CHECK, Vec::new());
    }
    let launches = |kernels: &KernelCounts| kernels.values().sum::<usize>();
    let describe = |(call, kernels): &&(u32, KernelCounts)| json!({ "call": call, "launches": launches(kernels), "kernels": kernels });
    let message = format!(
        "{} of {} witnessed calls launched other kernels than the rest (call {}: {} launch(es); \
         most calls: {}): the calls did not all do the same work",
        differing.len(),
        counts.len(),
        differing[0].0,
        launches(&differing[0].1),
        launches(usual),
    );
    RuleOutcome::ran(
        CHECK,
        vec![finding(
            FindingKind::InconsistentCalls,
            CHECK,
            message,
            Measure {
                measured: differing.len() as f64,
                limit: 0.0,
                unit: "calls",
            },
            json!({
                "usual": { "launches": launches(usual), "kernels": usual },
                "differing": differing.iter().map(describe).collect::<Vec<_>>(),
            }),
        )],
    )
}

/// The kernel set most calls launched; on a tie, the earliest call's.
fn most_common(counts: &[(u32, KernelCounts)]) -> &KernelCounts {
    let mut best: Option<(&KernelCounts, usize)> = None;
    for (_, kernels) in counts {
        let n = counts.iter().filter(|(_, k)| k == kernels).count();
        if best.is_none_or(|(_, most)| n > most) {
            best = Some((kernels, n));
        }
    }
    best.map_or(&counts[0].1, |(kernels, _)| kernels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::evidence::TrialPhase;
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::{evidence, launch, trial};

    #[test]
    fn calls_launching_the_same_kernels_find_nothing() {
        let outcome = run(check, &evidence());
        assert!(outcome.check.ran && outcome.findings.is_empty());
    }

    #[test]
    fn a_call_that_launched_nothing_differs() {
        let mut e = evidence();
        // A third witnessed call that launched no kernel (its result replayed).
        e.trials.push(trial(12, TrialPhase::Witness, true));
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::InconsistentCalls]);
        let f = &outcome.findings[0];
        assert_eq!(f.measured, Some(1.0));
        assert_eq!(f.evidence["differing"][0]["call"], 12);
        assert_eq!(f.evidence["differing"][0]["launches"], 0);
        assert_eq!(f.evidence["usual"]["kernels"]["relu_kernel"], 1);
    }

    #[test]
    fn an_extra_kernel_in_one_call_differs() {
        let mut e = evidence();
        if let Some(w) = e.witness.as_mut() {
            w.launches
                .push(launch(9, "copy_kernel", &["polyprof/call/11"], 1_000.0));
        }
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::InconsistentCalls]);
        // Two calls, one each way: the earlier call's set is taken as the usual one.
        assert_eq!(outcome.findings[0].evidence["differing"][0]["call"], 11);
    }

    #[test]
    fn one_call_is_not_enough() {
        let mut e = evidence();
        e.trials.retain(|t| t.index != 11);
        if let Some(w) = e.witness.as_mut() {
            w.launches.retain(|l| l.launch_id < 4);
        }
        let outcome = run(check, &e);
        assert!(!outcome.check.ran);
    }
}
