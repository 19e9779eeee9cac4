//! Summary statistics of timing samples, shared by every lane and by the diff.
//!
//! Kept free of any other polyprof import so any module can use it. Percentiles use linear
//! interpolation between closest ranks (NumPy's default), so `median` of an even count is the
//! mean of the two middle values; `stddev` is the sample standard deviation (n − 1).

use serde::{Deserialize, Serialize};

/// Statistics of one set of samples, all in the samples' unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub count: usize,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub p90: f64,
    pub max: f64,
    /// Sample standard deviation (n − 1 in the denominator); 0 for a single sample.
    pub stddev: f64,
    /// Interquartile range, p75 − p25.
    pub iqr: f64,
}

/// Why samples could not be summarized.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("no samples to summarize; record at least one")]
    Empty,
    #[error("sample {index} is {value}, not a finite number; drop or fix it before summarizing")]
    NotFinite { index: usize, value: f64 },
}

impl Stats {
    /// Summarizes `samples` (any order). NaN or infinite samples are an error, not skipped,
    /// so a broken clock never hides inside a median.
    pub fn from_samples(samples: &[f64]) -> Result<Stats, StatsError> {
        if samples.is_empty() {
            return Err(StatsError::Empty);
        }
        if let Some((index, &value)) = samples.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(StatsError::NotFinite { index, value });
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let count = sorted.len();
        let mean = sorted.iter().sum::<f64>() / count as f64;
        let stddev = if count > 1 {
            let squares: f64 = sorted.iter().map(|v| (v - mean).powi(2)).sum();
            (squares / (count - 1) as f64).sqrt()
        } else {
            0.0
        };
        Ok(Stats {
            count,
            min: sorted[0],
            median: percentile_of_sorted(&sorted, 50.0),
            mean,
            p90: percentile_of_sorted(&sorted, 90.0),
            max: sorted[count - 1],
            stddev,
            iqr: percentile_of_sorted(&sorted, 75.0) - percentile_of_sorted(&sorted, 25.0),
        })
    }
}

/// The `pct`-th percentile (0–100) of ascending `sorted` samples by linear interpolation.
/// Returns NaN for an empty slice; `pct` is clamped to 0–100.
pub fn percentile_of_sorted(sorted: &[f64], pct: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let rank = pct.clamp(0.0, 100.0) / 100.0 * (n - 1) as f64;
            let low = rank.floor() as usize;
            let high = rank.ceil() as usize;
            sorted[low] + (sorted[high] - sorted[low]) * (rank - low as f64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn odd_count_matches_numpy() {
        // Reference values from Python: statistics.median/mean/stdev and numpy-style percentiles.
        let s = Stats::from_samples(&[5.0, 1.0, 3.0, 10.0, 2.0, 4.0, 6.0, 3.0, 2.0, 8.0]).unwrap();
        assert_eq!(s.count, 10);
        assert!(close(s.min, 1.0) && close(s.max, 10.0));
        assert!(close(s.median, 3.5), "{}", s.median);
        assert!(close(s.mean, 4.4));
        assert!(close(s.p90, 8.2), "{}", s.p90);
        assert!(close(s.iqr, 3.5), "{}", s.iqr);
        assert!((s.stddev - 2.875181153713043).abs() < 1e-6, "{}", s.stddev);
    }

    #[test]
    fn single_sample_has_zero_spread() {
        let s = Stats::from_samples(&[2.5]).unwrap();
        assert_eq!((s.min, s.median, s.p90, s.max), (2.5, 2.5, 2.5, 2.5));
        assert_eq!((s.stddev, s.iqr), (0.0, 0.0));
    }

    #[test]
    fn even_count_median_is_mean_of_middle_pair() {
        let s = Stats::from_samples(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert!(close(s.median, 2.5));
        assert!(close(s.p90, 3.7));
    }

    #[test]
    fn empty_and_non_finite_are_errors() {
        assert_eq!(Stats::from_samples(&[]), Err(StatsError::Empty));
        let err = Stats::from_samples(&[1.0, f64::NAN]).unwrap_err();
        assert!(matches!(err, StatsError::NotFinite { index: 1, .. }));
        assert!(Stats::from_samples(&[f64::INFINITY]).is_err());
    }

    #[test]
    fn percentile_edges() {
        assert!(percentile_of_sorted(&[], 50.0).is_nan());
        assert_eq!(percentile_of_sorted(&[1.0, 2.0], 0.0), 1.0);
        assert_eq!(percentile_of_sorted(&[1.0, 2.0], 100.0), 2.0);
        assert_eq!(percentile_of_sorted(&[1.0, 2.0], 250.0), 2.0);
    }
}
