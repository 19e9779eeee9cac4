//! The normalized profile: kernel records, the run document, aggregation and exports.

pub mod aggregate;
pub mod benchmark;
pub mod calibration;
pub mod calibration_kernels;
pub mod callpath;
pub mod ci;
pub mod ci_batch;
pub mod ci_diff;
pub mod devices;
pub mod diff;
pub mod diff_table;
pub mod escape;
pub mod event;
pub mod export;
pub mod fit;
pub mod key_table;
pub mod levels;
pub mod names;
pub mod profile;
pub mod roofline;
pub mod rules;
pub mod stats;
pub mod tree;
pub mod units;

pub use crate::model::record::{
    FlopCounts, KernelRecord, Metric, MetricName, MetricValue, RuleResult,
};
pub use crate::model::run::ProfileRun;
pub use aggregate::{GroupBy, KeyAverage, KeyAverages, SortBy, key_averages};
pub use callpath::{Session, record_function, scope};
pub use profile::Profile;
