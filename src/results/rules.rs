//! A profiler's rule results (ncu's `SOLBottleneck`, …) per kernel, and the short line the
//! table shows under a kernel's verdict.

use std::collections::BTreeMap;

use crate::model::record::RuleResult;
use crate::model::run::ProfileRun;

/// The rule results of each kernel, by short name and by full name, each result once (launches
/// of one kernel that gave the same advice in the same words count once).
pub fn by_kernel(run: &ProfileRun) -> BTreeMap<String, Vec<RuleResult>> {
    let mut map: BTreeMap<String, Vec<RuleResult>> = BTreeMap::new();
    for record in &run.kernels {
        if record.rules.is_empty() {
            continue;
        }
        for key in [record.short_name.as_str(), record.name.as_str()] {
            if key.is_empty() {
                continue;
            }
            let rules = map.entry(key.to_string()).or_default();
            for rule in &record.rules {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    map
}

/// Advice first (`OPT`, then `WRN`), information last.
fn rank(kind: &str) -> u8 {
    match kind {
        "ERR" | "OPT" => 0,
        "WRN" => 1,
        _ => 2,
    }
}

/// The rules in the order a reader wants them: advice (`OPT`, `WRN`) first, the largest
/// estimated speedup first, information last.
pub fn ranked(rules: &[RuleResult]) -> Vec<&RuleResult> {
    let mut sorted: Vec<&RuleResult> = rules.iter().collect();
    sorted.sort_by(|a, b| {
        rank(&a.kind).cmp(&rank(&b.kind)).then(
            b.estimated_speedup_pct
                .unwrap_or(-1.0)
                .total_cmp(&a.estimated_speedup_pct.unwrap_or(-1.0)),
        )
    });
    sorted
}

/// `ncu OPT HighPipeUtilization (est. 85 %), OPT SOLBottleneck, +3 more`: two rules, advice
/// with the largest estimated speedup first.
pub fn short_line(profiler: &str, rules: &[RuleResult]) -> Option<String> {
    if rules.is_empty() {
        return None;
    }
    let sorted = ranked(rules);
    let shown: Vec<String> = sorted
        .iter()
        .take(SHOWN)
        .map(|r| {
            let speedup = r
                .estimated_speedup_pct
                .filter(|p| *p >= 0.5)
                .map(|p| format!(" (est. {p:.0} %)"))
                .unwrap_or_default();
            format!("{} {}{speedup}", r.kind, r.name)
        })
        .collect();
    let more = match sorted.len() {
        n if n > SHOWN => format!(", +{} more", n - SHOWN),
        _ => String::new(),
    };
    Some(format!("{profiler} {}{more}", shown.join(", ")))
}

const SHOWN: usize = 2;

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: &str, kind: &str) -> RuleResult {
        RuleResult {
            section: "SpeedOfLight".into(),
            name: name.into(),
            kind: kind.into(),
            description: String::new(),
            estimated_speedup_pct: None,
            estimated_speedup_type: String::new(),
        }
    }

    #[test]
    fn advice_comes_first_and_the_line_stays_short() {
        let rules = [
            rule("SOLFPRoofline", "INF"),
            rule("SOLBottleneck", "OPT"),
            RuleResult {
                estimated_speedup_pct: Some(85.0),
                ..rule("HighPipeUtilization", "OPT")
            },
            rule("B", "INF"),
        ];
        assert_eq!(
            short_line("ncu", &rules).unwrap(),
            "ncu OPT HighPipeUtilization (est. 85 %), OPT SOLBottleneck, +2 more"
        );
        assert_eq!(short_line("ncu", &[]), None);
    }
}
