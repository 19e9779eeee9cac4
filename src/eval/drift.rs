//! The warm evaluator's drift probe, the pure half: whether one reference block timed now, with
//! no candidate process alive, still agrees with the stored reference blocks a warm evaluator
//! would reuse (docs/eval-harness.md, "The warm evaluator").

use super::evidence::{Conditions, DriftProbe, Side, TimingBlock};

/// The probe's median must lie within this factor either way of the stored blocks' medians
/// (10 % beyond the lowest and the highest of them): the stored blocks' own spread is what one
/// eval's interleaved blocks vary by, and 10 % is far narrower than any speedup worth a finding.
pub const DRIFT_BOUND: f64 = 1.10;

/// Clocks read before the probe may differ from the range read before the stored blocks by
/// this share at most.
const CLOCK_SLACK: f64 = 0.02;

/// Compare `times_ms` (the probe block) with the reference blocks of `stored`. `None` when
/// either side has no usable time (then nothing can be reused). `clocks_changed`: the device's
/// clocks moved since (`clocks_changed`), which counts as drift whatever the times say.
pub fn probe(
    stored: &[TimingBlock],
    times_ms: &[f64],
    bound: f64,
    taken_at: String,
    clocks_changed: bool,
) -> Option<DriftProbe> {
    let mut medians: Vec<f64> = stored
        .iter()
        .filter(|b| b.side == Side::Reference)
        .filter_map(|b| median(&b.times_ms))
        .collect();
    let stored_median_ms = median_of(&mut medians)?;
    // Sorted by `median_of`.
    let (low, high) = (*medians.first()?, *medians.last()?);
    let median_ms = median(times_ms)?;
    let ratio = median_ms / stored_median_ms;
    let inside = median_ms <= high * bound && median_ms >= low / bound;
    Some(DriftProbe {
        taken_at,
        times_ms: times_ms.to_vec(),
        median_ms,
        stored_median_ms,
        stored_low_ms: low,
        stored_high_ms: high,
        ratio,
        bound,
        drifted: !inside || clocks_changed,
    })
}

/// Whether the SM or memory clock read `now` lies outside the range read before the stored
/// blocks (with a little slack). No reading on either side: no change seen.
pub fn clocks_changed(stored: &[TimingBlock], now: Option<&Conditions>) -> bool {
    let Some(now) = now else {
        return false;
    };
    let outside = |pick: fn(&Conditions) -> Option<f64>| {
        let Some(value) = pick(now) else {
            return false;
        };
        let seen: Vec<f64> = stored
            .iter()
            .filter_map(|b| b.conditions_before.as_ref().and_then(pick))
            .collect();
        let low = seen.iter().copied().fold(f64::INFINITY, f64::min);
        let high = seen.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        !seen.is_empty()
            && (value < low * (1.0 - CLOCK_SLACK) || value > high * (1.0 + CLOCK_SLACK))
    };
    outside(|c| c.sm_clock_mhz) || outside(|c| c.mem_clock_mhz)
}

/// The median of the positive, finite values (a zero or negative time is no kernel's).
fn median(values: &[f64]) -> Option<f64> {
    let mut usable: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    median_of(&mut usable)
}

fn median_of(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clocked(mhz: f64) -> Conditions {
        Conditions {
            sm_clock_mhz: Some(mhz),
            mem_clock_mhz: None,
            max_sm_clock_mhz: None,
            temperature_c: None,
            power_w: None,
            throttle_reasons: Vec::new(),
            other_processes: Vec::new(),
        }
    }

    fn block(side: Side, times: &[f64], sm: Option<f64>) -> TimingBlock {
        TimingBlock {
            side,
            block: 0,
            method: "host".into(),
            batch: 1,
            times_ms: times.to_vec(),
            device_state: None,
            conditions_before: sm.map(clocked),
            conditions_after: None,
            input_trials: Vec::new(),
            warmup_trial: None,
            checked_calls: Vec::new(),
            other_side_stopped: None,
            bystanders_stopped: 0,
        }
    }

    #[test]
    fn a_probe_inside_the_bound_keeps_the_stored_blocks() {
        let stored = [
            block(Side::Reference, &[1.0, 1.1, 0.9], None),
            block(Side::Candidate, &[9.0], None),
            block(Side::Reference, &[1.2, 1.0, 1.0], None),
        ];
        let p = probe(&stored, &[1.05, 1.04, 0.0], DRIFT_BOUND, "t".into(), false).unwrap();
        // Stored medians 1.0 and 1.0; the candidate's block is not the reference's.
        assert_eq!(p.stored_median_ms, 1.0);
        assert!((p.median_ms - 1.045).abs() < 1e-12, "{p:?}");
        assert!(!p.drifted);
    }

    #[test]
    fn a_probe_within_the_stored_spread_and_its_bound_is_no_drift() {
        let stored = [
            block(Side::Reference, &[1.0], None),
            block(Side::Reference, &[1.3], None),
        ];
        let p = probe(&stored, &[1.4], DRIFT_BOUND, "t".into(), false).unwrap();
        assert!(!p.drifted, "{p:?}");
        assert_eq!((p.stored_low_ms, p.stored_high_ms), (1.0, 1.3));
        let p = probe(&stored, &[1.5], DRIFT_BOUND, "t".into(), false).unwrap();
        assert!(p.drifted, "{p:?}");
        let p = probe(&stored, &[0.9], DRIFT_BOUND, "t".into(), false).unwrap();
        assert!(p.drifted, "{p:?}");
    }

    #[test]
    fn a_probe_outside_the_bound_either_way_or_with_moved_clocks_is_drift() {
        let stored = [block(Side::Reference, &[2.0, 2.0], Some(1980.0))];
        for times in [[2.3, 2.3], [1.7, 1.7]] {
            let p = probe(&stored, &times, DRIFT_BOUND, "t".into(), false).unwrap();
            assert!(p.drifted, "{p:?}");
        }
        let p = probe(&stored, &[2.0], DRIFT_BOUND, "t".into(), true).unwrap();
        assert!(p.drifted);
        let now = clocked;
        assert!(clocks_changed(&stored, Some(&now(1755.0))));
        assert!(!clocks_changed(&stored, Some(&now(1990.0))));
        assert!(!clocks_changed(&stored, None));
    }

    #[test]
    fn nothing_usable_to_compare_is_no_probe() {
        let stored = [block(Side::Reference, &[0.0], None)];
        assert!(probe(&stored, &[1.0], DRIFT_BOUND, "t".into(), false).is_none());
        let stored = [block(Side::Reference, &[1.0], None)];
        assert!(probe(&stored, &[], DRIFT_BOUND, "t".into(), false).is_none());
    }
}
