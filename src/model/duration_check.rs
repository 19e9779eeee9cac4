//! A kernel's GPU duration of 0 ns (or less) is not a measurement: no kernel runs in no
//! time, and every rate derived from it (GB/s, FLOP/s, a speedup) is infinite. `parse` says so
//! where it reads the file, as an error-level diagnostic that keeps the records, and `diff`
//! refuses the same file for the same reason, so the two never disagree about one file.

use crate::model::parsed::{Diagnostic, ParsedOutput, Severity};

/// The diagnostic's kind.
pub const NON_POSITIVE_DURATION: &str = "non_positive_duration";

/// Add one error diagnostic to `parsed` when any kernel's duration is 0 ns or less, naming
/// how many and the first; `metric` is the profiler's duration metric.
pub fn flag_non_positive_durations(parsed: &mut ParsedOutput, metric: &str) {
    let mut bad = parsed
        .kernels
        .iter()
        .filter(|k| k.duration_ns.is_some_and(|ns| ns <= 0.0));
    let Some(first) = bad.next() else {
        return;
    };
    let count = 1 + bad.count();
    let name = if first.short_name.is_empty() {
        &first.name
    } else {
        &first.short_name
    };
    parsed.diagnostics.push(Diagnostic {
        severity: Severity::Error,
        kind: NON_POSITIVE_DURATION.to_string(),
        message: format!(
            "{count} launch{} with a {metric} of 0 ns or less, first `{name}` (launch {}): not \
             a measurement; its rates are left unknown and `polyprof diff` refuses this file",
            if count == 1 { "" } else { "es" },
            first.launch_id,
            metric = metric,
            name = name,
        ),
        hint: Some(
            "profile again; a 0 ns duration comes from an edited file or a profiler fault"
                .to_string(),
        ),
        metric: Some(metric.to_string()),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::KernelRecord;

    #[test]
    fn one_diagnostic_names_the_count_and_the_first() {
        let kernel = |name: &str, ns: f64| KernelRecord {
            short_name: name.into(),
            duration_ns: Some(ns),
            ..KernelRecord::default()
        };
        let mut parsed = ParsedOutput {
            kernels: vec![kernel("ok", 10.0), kernel("zero", 0.0), kernel("neg", -1.0)],
            ..ParsedOutput::default()
        };
        flag_non_positive_durations(&mut parsed, "gpu__time_duration.sum");
        assert_eq!(parsed.diagnostics.len(), 1);
        let d = &parsed.diagnostics[0];
        assert_eq!(d.severity, Severity::Error);
        assert!(d.message.starts_with("2 launches") && d.message.contains("`zero`"), "{}", d.message);
    }
}
