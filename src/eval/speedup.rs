//! The speedup of a candidate over a reference from two sets of timing samples: the
//! Hodges–Lehmann estimate of the shift between their log times, with a distribution-free
//! confidence interval (Mann–Whitney, normal approximation), taken back with `exp`.
//!
//! Log times make the shift a ratio, so the figure is "reference time over candidate time"
//! whatever the scale. The differences `ln r_i − ln c_j` (all `m·n` pairs) are never
//! materialized: their k-th smallest is found by bisection on a value with a linear count, so
//! ten thousand samples a side cost a few milliseconds, not a gigabyte.

use super::verdict::Speedup;

/// `Speedup::method` of this estimator.
pub const METHOD: &str = "hodges_lehmann_log";
/// The confidence of the interval.
pub const CONFIDENCE: f64 = 0.95;
/// The standard normal quantile for a two-sided 95 % interval.
const Z_975: f64 = 1.959_963_984_540_054;

/// Why no speedup could be estimated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpeedupError {
    #[error("no {side} samples to compare; record at least one positive time per side")]
    NoSamples { side: &'static str },
    #[error(
        "{side} sample {index} is {value} ms, not a positive finite time; a speedup needs logs"
    )]
    NotPositive {
        side: &'static str,
        index: usize,
        value: f64,
    },
    #[error(
        "the speedup is beyond a finite number (reference and candidate times differ by more than 10^300)"
    )]
    Overflow,
}

/// Reference time over candidate time, from per-call samples of each (ms, any order).
pub fn hodges_lehmann_speedup(
    reference_ms: &[f64],
    candidate_ms: &[f64],
) -> Result<Speedup, SpeedupError> {
    let reference = sorted_logs(reference_ms, "reference")?;
    let candidate = sorted_logs(candidate_ms, "candidate")?;
    let differences = PairwiseDifferences {
        x: &reference,
        y: &candidate,
    };
    let total = differences.len();
    let point = if total % 2 == 1 {
        differences.kth(total.div_ceil(2))
    } else {
        (differences.kth(total / 2) + differences.kth(total / 2 + 1)) / 2.0
    };
    let (low, high) = match interval_ranks(reference.len(), candidate.len()) {
        Some((low, high)) => (differences.kth(low), differences.kth(high)),
        // Too few samples for a 95 % interval: the widest one the samples allow.
        None => (differences.kth(1), differences.kth(total)),
    };
    if ![point, low, high]
        .iter()
        .all(|v| v.exp().is_finite() && v.exp() > 0.0)
    {
        return Err(SpeedupError::Overflow);
    }
    Ok(Speedup {
        value: point.exp(),
        ci_low: low.exp(),
        ci_high: high.exp(),
        confidence: CONFIDENCE,
        method: METHOD.to_string(),
    })
}

fn sorted_logs(samples: &[f64], side: &'static str) -> Result<Vec<f64>, SpeedupError> {
    if samples.is_empty() {
        return Err(SpeedupError::NoSamples { side });
    }
    if let Some((index, &value)) = samples
        .iter()
        .enumerate()
        .find(|(_, v)| !(v.is_finite() && **v > 0.0))
    {
        return Err(SpeedupError::NotPositive { side, index, value });
    }
    let mut logs: Vec<f64> = samples.iter().map(|v| v.ln()).collect();
    logs.sort_by(f64::total_cmp);
    Ok(logs)
}

/// The 1-based ranks of the interval's ends among the `m·n` sorted differences:
/// `C = ⌊m·n/2 − z·√(m·n·(m+n+1)/12)⌋`, the interval `[D(C), D(m·n+1−C)]` (no tie correction).
/// `None` when `C < 1`: the samples are too few for the confidence asked.
pub fn interval_ranks(m: usize, n: usize) -> Option<(usize, usize)> {
    let (mf, nf) = (m as f64, n as f64);
    let pairs = mf * nf;
    let c = (pairs / 2.0 - Z_975 * (pairs * (mf + nf + 1.0) / 12.0).sqrt()).floor();
    if c < 1.0 {
        return None;
    }
    let c = c as usize;
    Some((c, m * n + 1 - c))
}

/// The multiset `{x_i − y_j}` of two ascending slices, queried by rank.
struct PairwiseDifferences<'a> {
    x: &'a [f64],
    y: &'a [f64],
}

impl PairwiseDifferences<'_> {
    fn len(&self) -> usize {
        self.x.len() * self.y.len()
    }

    /// How many differences are ≤ `value` (linear: the threshold `x_i − value` only grows).
    fn count_at_most(&self, value: f64) -> usize {
        // For each x_i, the y_j ≥ x_i − value; `first` is the first such j, non-decreasing in i.
        let mut first = 0;
        let mut count = 0;
        for &x in self.x {
            while first < self.y.len() && self.y[first] < x - value {
                first += 1;
            }
            count += self.y.len() - first;
        }
        count
    }

    /// The smallest difference strictly above `value` (there is one when `value` is below the
    /// largest).
    fn smallest_above(&self, value: f64) -> f64 {
        let mut best = f64::INFINITY;
        for &x in self.x {
            // The largest y_j with x − y_j > value, i.e. y_j < x − value.
            let below = self.y.partition_point(|&y| y < x - value);
            if below > 0 {
                best = best.min(x - self.y[below - 1]);
            }
        }
        best
    }

    /// The `k`-th smallest difference, 1-based (`1 ≤ k ≤ len`).
    fn kth(&self, k: usize) -> f64 {
        let (Some(&x_min), Some(&x_max), Some(&y_min), Some(&y_max)) =
            (self.x.first(), self.x.last(), self.y.first(), self.y.last())
        else {
            return f64::NAN;
        };
        let smallest = x_min - y_max;
        if self.count_at_most(smallest) >= k {
            return smallest;
        }
        // Invariant: count(low) < k ≤ count(high).
        let mut low = smallest;
        let mut high = x_max - y_min;
        for _ in 0..200 {
            let middle = low + (high - low) / 2.0;
            if middle <= low || middle >= high {
                break;
            }
            if self.count_at_most(middle) >= k {
                high = middle;
            } else {
                low = middle;
            }
        }
        // The answer is the first difference above `low` (it is ≤ `high`).
        self.smallest_above(low)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
    }

    fn brute_kth(x: &[f64], y: &[f64], k: usize) -> f64 {
        let mut all: Vec<f64> = x
            .iter()
            .flat_map(|a| y.iter().map(move |b| a - b))
            .collect();
        all.sort_by(f64::total_cmp);
        all[k - 1]
    }

    #[test]
    fn kth_difference_matches_brute_force() {
        let mut x = vec![0.3, -1.2, 4.0, 2.5, 2.5, 0.0, 7.125];
        let mut y = vec![1.0, 1.0, -3.5, 0.25, 9.0];
        x.sort_by(f64::total_cmp);
        y.sort_by(f64::total_cmp);
        let d = PairwiseDifferences { x: &x, y: &y };
        for k in 1..=d.len() {
            assert_eq!(d.kth(k), brute_kth(&x, &y, k), "k = {k}");
        }
    }

    #[test]
    fn ties_are_ranked_like_any_value() {
        let (x, y) = ([1.0, 1.0, 1.0], [0.0, 0.0]);
        let d = PairwiseDifferences { x: &x, y: &y };
        assert_eq!((d.kth(1), d.kth(3), d.kth(6)), (1.0, 1.0, 1.0));
        let s = hodges_lehmann_speedup(&[2.0, 2.0], &[2.0, 2.0, 2.0]).unwrap();
        assert!(close(s.value, 1.0) && close(s.ci_low, 1.0) && close(s.ci_high, 1.0));
    }

    #[test]
    fn two_samples_each_by_hand() {
        // ln r = {0, ln 4}, ln c = {0, ln 2}: differences {0, −ln2, ln4, ln2} sorted
        // {−ln2, 0, ln2, ln4}; the median is (0 + ln2)/2, so the speedup is √2. With m = n = 2
        // no 95 % interval exists (C = ⌊2 − 1.96·√(4·5/12)⌋ < 1): the widest is [1/2, 4].
        let s = hodges_lehmann_speedup(&[1.0, 4.0], &[1.0, 2.0]).unwrap();
        assert!(close(s.value, 2f64.sqrt()), "{}", s.value);
        assert!(close(s.ci_low, 0.5) && close(s.ci_high, 4.0), "{s:?}");
        assert_eq!(s.method, METHOD);
        assert_eq!(s.confidence, 0.95);
    }

    #[test]
    fn a_constant_ratio_is_recovered_exactly() {
        // Every candidate time is a reference time halved: the shift of the logs is ln 2 at the
        // centre, and the interval holds it.
        let reference: Vec<f64> = (1..=20).map(|i| 1.0 + 0.01 * i as f64).collect();
        let candidate: Vec<f64> = reference.iter().map(|r| r / 2.0).collect();
        let s = hodges_lehmann_speedup(&reference, &candidate).unwrap();
        assert!(close(s.value, 2.0), "{}", s.value);
        assert!(s.ci_low < 2.0 && 2.0 < s.ci_high, "{s:?}");
        assert!(s.ci_low > 1.7 && s.ci_high < 2.35, "{s:?}");
    }

    #[test]
    fn interval_ranks_by_hand() {
        // m = n = 10: 50 − 1.96·√(100·21/12) = 50 − 25.93 = 24.07 → C = 24, upper 100 + 1 − 24.
        assert_eq!(interval_ranks(10, 10), Some((24, 77)));
        // m = n = 5: 12.5 − 1.96·√(25·11/12) = 12.5 − 9.38 = 3.12 → C = 3.
        assert_eq!(interval_ranks(5, 5), Some((3, 23)));
        assert_eq!(interval_ranks(2, 2), None);
        assert_eq!(interval_ranks(1, 30), None);
    }

    #[test]
    fn interval_of_five_each_by_hand() {
        // r = e^{1..5}, c = e^{0}·{1..5 shifted}: ln r = {1,2,3,4,5}, ln c = {0,0,0,0,0} + {0..4}
        // → ln c = {0,1,2,3,4}. Differences i − j for i in 1..=5, j in 0..=4: values −3..5 with
        // counts 1,2,3,4,5,4,3,2,1. Sorted ranks: D(3) = −2, D(13) = 1 (median), D(23) = 4.
        let r: Vec<f64> = (1..=5).map(|i| (i as f64).exp()).collect();
        let c: Vec<f64> = (0..=4).map(|i| (i as f64).exp()).collect();
        let s = hodges_lehmann_speedup(&r, &c).unwrap();
        assert!(close(s.value, 1f64.exp()), "{}", s.value);
        assert!(close(s.ci_low, (-2f64).exp()), "{}", s.ci_low);
        assert!(close(s.ci_high, 4f64.exp()), "{}", s.ci_high);
    }

    #[test]
    fn unusable_samples_are_errors() {
        assert_eq!(
            hodges_lehmann_speedup(&[], &[1.0]),
            Err(SpeedupError::NoSamples { side: "reference" })
        );
        let err = hodges_lehmann_speedup(&[1.0], &[0.5, 0.0]).unwrap_err();
        assert!(matches!(
            err,
            SpeedupError::NotPositive {
                side: "candidate",
                index: 1,
                ..
            }
        ));
        assert!(hodges_lehmann_speedup(&[f64::NAN], &[1.0]).is_err());
        assert_eq!(
            hodges_lehmann_speedup(&[1e300], &[1e-300]),
            Err(SpeedupError::Overflow)
        );
    }

    #[test]
    fn many_samples_stay_cheap_and_agree_with_the_median_ratio() {
        // 4,000 × 4,000 pairs (16 M) without materializing them.
        let reference: Vec<f64> = (0..4000).map(|i| 3.0 + (i % 97) as f64 * 1e-3).collect();
        let candidate: Vec<f64> = (0..4000).map(|i| 1.0 + (i % 89) as f64 * 1e-3).collect();
        let s = hodges_lehmann_speedup(&reference, &candidate).unwrap();
        assert!(s.value > 2.9 && s.value < 3.1, "{}", s.value);
        assert!(s.ci_low <= s.value && s.value <= s.ci_high);
    }
}
