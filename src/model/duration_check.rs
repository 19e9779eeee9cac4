//! A kernel's GPU duration of 0 ns (or less) is not a measurement: no kernel runs in no
//! time, and every rate derived from it (GB/s, FLOP/s, a speedup) is infinite. `parse` says so
//! where it reads the file, as an error-level diagnostic that keeps the records, and `diff`
//! refuses the same file for the same reason, so the two never disagree about one file.

use crate::model::parsed::{Diagnostic, ParsedOutput, Severity};
use crate::model::record::KernelRecord;

/// The diagnostic's kind.
pub const NON_POSITIVE_DURATION: &str = "non_positive_duration";

/// The launches seen so far whose duration is 0 ns or less: fed each record as a parser
/// streams it (records may never be held together), then [`flag`](Self::flag)ged.
#[derive(Debug, Default)]
pub struct DurationCheck {
    count: usize,
    first: Option<(String, u64)>,
}

impl DurationCheck {
    pub fn see(&mut self, kernel: &KernelRecord) {
        if !kernel.duration_ns.is_some_and(|ns| ns <= 0.0) {
            return;
        }
        self.count += 1;
        if self.first.is_none() {
            let name = if kernel.short_name.is_empty() {
                &kernel.name
            } else {
                &kernel.short_name
            };
            self.first = Some((name.clone(), kernel.launch_id));
        }
    }

    /// Add one error diagnostic to `parsed` when any launch seen had such a duration, naming
    /// how many and the first; `metric` is the profiler's duration metric.
    pub fn flag(self, parsed: &mut ParsedOutput, metric: &str) {
        let Some((name, launch)) = self.first else {
            return;
        };
        let count = self.count;
        parsed.diagnostics.push(Diagnostic {
            severity: Severity::Error,
            kind: NON_POSITIVE_DURATION.to_string(),
            message: format!(
                "{count} launch{} with a {metric} of 0 ns or less, first `{name}` (launch \
                 {launch}): not a measurement (every rate from it would be infinite); \
                 `polyprof diff` refuses this file",
                if count == 1 { "" } else { "es" },
            ),
            hint: Some(
                "profile again; a 0 ns duration comes from an edited file or a profiler fault"
                    .to_string(),
            ),
            metric: Some(metric.to_string()),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_diagnostic_names_the_count_and_the_first() {
        let kernel = |name: &str, ns: f64| KernelRecord {
            short_name: name.into(),
            duration_ns: Some(ns),
            ..KernelRecord::default()
        };
        let mut check = DurationCheck::default();
        for k in [kernel("ok", 10.0), kernel("zero", 0.0), kernel("neg", -1.0)] {
            check.see(&k);
        }
        let mut parsed = ParsedOutput::default();
        check.flag(&mut parsed, "gpu__time_duration.sum");
        assert_eq!(parsed.diagnostics.len(), 1);
        let d = &parsed.diagnostics[0];
        assert_eq!(d.severity, Severity::Error);
        assert!(
            d.message.starts_with("2 launches") && d.message.contains("`zero`"),
            "{}",
            d.message
        );
    }
}
