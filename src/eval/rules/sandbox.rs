//! Whether the candidate's processes were confined (docs/eval-harness.md, "The sandbox"): the
//! kind, what it confined and what it let the candidate write, as recorded. Not confined is
//! said, never assumed: a candidate outside a sandbox could reach the verdict's inputs (the
//! harness, the reference, the trusted worker), so every other check rests on less.

use super::{Facts, RuleOutcome};
use crate::eval::evidence::{CONFINED, SandboxEvidence};

pub const CHECK: &str = "sandbox";

pub fn check(facts: &Facts) -> RuleOutcome {
    match not_confined(facts.evidence.sandbox.as_ref()) {
        None => RuleOutcome::ran(CHECK, Vec::new()),
        Some(why) => RuleOutcome::skipped(CHECK, format!("the candidate was not confined: {why}")),
    }
}

/// Why `sandbox` does not confine the candidate, or `None` when it does.
pub fn not_confined(sandbox: Option<&SandboxEvidence>) -> Option<String> {
    let Some(sandbox) = sandbox else {
        return Some("the evidence records no sandbox".to_string());
    };
    if sandbox.kind != "landlock" {
        return Some(
            sandbox
                .note
                .clone()
                .unwrap_or_else(|| format!("sandbox `{}`", sandbox.kind)),
        );
    }
    let missing: Vec<&str> = CONFINED
        .iter()
        .copied()
        .filter(|c| !sandbox.confines.iter().any(|have| have == c))
        .collect();
    if !missing.is_empty() {
        let abi = sandbox
            .abi
            .map(|a| format!(" (Landlock ABI {a})"))
            .unwrap_or_default();
        return Some(format!("no confinement of {}{abi}", missing.join(", ")));
    }
    if let Some(everything) = sandbox
        .write
        .iter()
        .find(|w| w.trim_end_matches('/').is_empty())
    {
        return Some(format!("it could write beneath `{everything}`"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn landlock() -> SandboxEvidence {
        SandboxEvidence {
            kind: "landlock".into(),
            abi: Some(7),
            confines: CONFINED.iter().map(|c| c.to_string()).collect(),
            read: vec!["/usr".into()],
            write: vec!["/tmp/polyprof-sandbox-x".into()],
            ..Default::default()
        }
    }

    #[test]
    fn only_a_full_landlock_confinement_counts() {
        assert_eq!(not_confined(Some(&landlock())), None);
        assert!(not_confined(None).unwrap().contains("no sandbox"));
        let off = SandboxEvidence {
            kind: "none".into(),
            note: Some("turned off (--sandbox off)".into()),
            ..Default::default()
        };
        assert_eq!(
            not_confined(Some(&off)).unwrap(),
            "turned off (--sandbox off)"
        );
        let mut old_kernel = landlock();
        old_kernel.abi = Some(3);
        old_kernel.confines.retain(|c| c == "filesystem");
        let why = not_confined(Some(&old_kernel)).unwrap();
        assert!(
            why.contains("network, signals, abstract_unix_sockets") && why.contains("ABI 3"),
            "{why}"
        );
        let mut root = landlock();
        root.write.push("/".into());
        assert!(not_confined(Some(&root)).unwrap().contains("`/`"));
    }
}
