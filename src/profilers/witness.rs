//! Witness settings: the cheapest pass of a profiler that still times every kernel launch and
//! records the annotation ranges open on the launching thread. The eval harness runs its
//! candidate under these to check, from outside the candidate's process, what it reports.

use super::ProfilerSettings;
use super::ncu::options::{ClockControl, Preset};

/// Profilers that can witness an eval: they time every launch and record its ranges.
pub const WITNESS_PROFILERS: [&str; 1] = ["ncu"];

/// The witness settings of `profiler`, or `None` when it cannot witness.
///
/// ncu: `gpu__time_duration.sum` alone (one pass, no replay), NVTX ranges recorded, clocks
/// left as they are (the score time is taken at the clocks the GPU runs at; ncu's base-clock
/// lock made compute kernels 1.29–1.32× slower on the H200).
pub fn witness_settings(profiler: &str) -> Option<ProfilerSettings> {
    match profiler {
        "ncu" => {
            let mut settings = ProfilerSettings::default();
            settings.ncu.preset = Preset::Metrics(vec![super::ncu::options::DURATION.to_string()]);
            settings.ncu.clock_control = ClockControl::None;
            settings.ncu.nvtx = true;
            Some(settings)
        }
        _ => None,
    }
}

/// The clock policy the witness of `profiler` runs under, as the evidence records it: `none`
/// (clocks left as the GPU runs them, like the timing) or `base` (locked); `None` when the
/// profiler does not witness.
pub fn witness_clock_control(profiler: &str) -> Option<&'static str> {
    witness_settings(profiler).map(|settings| settings.ncu.clock_control.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ncu_witness_is_one_metric_with_nvtx_at_free_clocks() {
        let settings = witness_settings("ncu").expect("ncu witnesses");
        assert_eq!(
            settings.ncu.metric_names(),
            vec!["gpu__time_duration.sum".to_string()]
        );
        assert_eq!(settings.ncu.clock_control, ClockControl::None);
        assert!(settings.ncu.nvtx);
        assert!(settings.ncu.extra_args.is_empty());
        assert_eq!(witness_clock_control("ncu"), Some("none"));
    }

    #[test]
    fn profilers_without_ranges_do_not_witness() {
        assert!(witness_settings("none").is_none());
        assert!(witness_settings("vtune").is_none());
        assert_eq!(witness_clock_control("vtune"), None);
    }
}
