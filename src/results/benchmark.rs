//! `KernelBenchmark`: the result of timing one kernel many times on the GPU.
//!
//! Built from per-call GPU times in milliseconds, whatever clock the lane used (Metal
//! command-buffer timestamps, CUDA events, …). Throughputs are computed from the median so one
//! slow outlier does not move them.

use serde::{Deserialize, Serialize};

use super::stats::{Stats, StatsError};

/// One kernel timed `calls` times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelBenchmark {
    pub name: String,
    /// Timed calls (warm-ups excluded).
    pub calls: usize,
    /// GPU time of each timed call, in milliseconds, in call order.
    pub gpu_times_ms: Vec<f64>,
    /// Statistics of `gpu_times_ms`, in milliseconds.
    pub stats: Stats,
    /// Floating-point operations per call, when the caller gave them.
    pub flops: Option<f64>,
    /// Bytes moved per call, when the caller gave them.
    pub bytes_moved: Option<f64>,
    /// `flops / median`, in GFLOP/s.
    pub gflops_per_s: Option<f64>,
    /// `bytes_moved / median`, in GB/s (10^9 bytes).
    pub gb_per_s: Option<f64>,
}

/// Why a benchmark could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BenchmarkError {
    #[error("benchmark `{name}`: {source}")]
    Samples {
        name: String,
        #[source]
        source: StatsError,
    },
    #[error("benchmark `{name}`: {what} is {value}; give a finite number ≥ 0")]
    BadWork {
        name: String,
        what: &'static str,
        value: f64,
    },
}

impl KernelBenchmark {
    /// Summarizes per-call GPU times (ms). `flops` and `bytes_moved` are per call.
    pub fn new(
        name: impl Into<String>,
        gpu_times_ms: Vec<f64>,
        flops: Option<f64>,
        bytes_moved: Option<f64>,
    ) -> Result<KernelBenchmark, BenchmarkError> {
        let name = name.into();
        for (what, value) in [("flops", flops), ("bytes_moved", bytes_moved)] {
            if let Some(value) = value
                && !(value.is_finite() && value >= 0.0)
            {
                return Err(BenchmarkError::BadWork { name, what, value });
            }
        }
        let stats =
            Stats::from_samples(&gpu_times_ms).map_err(|source| BenchmarkError::Samples {
                name: name.clone(),
                source,
            })?;
        // A zero median (clock too coarse) gives no rate rather than infinity.
        let per_second = |work: Option<f64>| {
            work.filter(|_| stats.median > 0.0)
                .map(|w| w / (stats.median * 1e-3) / 1e9)
        };
        Ok(KernelBenchmark {
            calls: gpu_times_ms.len(),
            gflops_per_s: per_second(flops),
            gb_per_s: per_second(bytes_moved),
            name,
            gpu_times_ms,
            stats,
            flops,
            bytes_moved,
        })
    }

    /// One line: name, calls, min/median/mean/p90/max in ms, and the rates when known.
    pub fn summary(&self) -> String {
        let s = &self.stats;
        let mut line = format!(
            "{}: {} calls, GPU ms min {:.4} median {:.4} mean {:.4} p90 {:.4} max {:.4}",
            self.name, self.calls, s.min, s.median, s.mean, s.p90, s.max
        );
        if let Some(g) = self.gflops_per_s {
            line.push_str(&format!(", {g:.2} GFLOP/s"));
        }
        if let Some(b) = self.gb_per_s {
            line.push_str(&format!(", {b:.2} GB/s"));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_come_from_the_median() {
        // median 2 ms; 4e9 flops → 2000 GFLOP/s; 1e9 bytes → 500 GB/s.
        let b = KernelBenchmark::new("k", vec![1.0, 2.0, 100.0], Some(4e9), Some(1e9)).unwrap();
        assert_eq!(b.calls, 3);
        assert_eq!(b.stats.median, 2.0);
        assert!((b.gflops_per_s.unwrap() - 2000.0).abs() < 1e-9);
        assert!((b.gb_per_s.unwrap() - 500.0).abs() < 1e-9);
        let line = b.summary();
        assert!(
            line.starts_with("k: 3 calls, GPU ms min 1.0000 median 2.0000"),
            "{line}"
        );
        assert!(line.ends_with("2000.00 GFLOP/s, 500.00 GB/s"), "{line}");
    }

    #[test]
    fn no_work_means_no_rates() {
        let b = KernelBenchmark::new("k", vec![0.5], None, None).unwrap();
        assert_eq!((b.gflops_per_s, b.gb_per_s), (None, None));
        assert!(!b.summary().contains("GB/s"));
    }

    #[test]
    fn zero_median_gives_no_rate() {
        let b = KernelBenchmark::new("k", vec![0.0, 0.0], Some(1.0), None).unwrap();
        assert_eq!(b.gflops_per_s, None);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(matches!(
            KernelBenchmark::new("k", vec![], None, None),
            Err(BenchmarkError::Samples {
                source: StatsError::Empty,
                ..
            })
        ));
        assert!(matches!(
            KernelBenchmark::new("k", vec![1.0], Some(-1.0), None),
            Err(BenchmarkError::BadWork { what: "flops", .. })
        ));
        assert!(KernelBenchmark::new("k", vec![1.0], None, Some(f64::NAN)).is_err());
    }
}
