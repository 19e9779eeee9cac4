//! The normalized profile: kernel records, the run document, aggregation and exports.

pub mod aggregate;
pub mod callpath;
pub mod diff;
pub mod export;
pub mod names;
pub mod profile;
pub mod record;
pub mod roofline;
pub mod run;
pub mod stats;
pub mod tree;
pub mod units;

pub use aggregate::{GroupBy, KeyAverage, KeyAverages, SortBy, key_averages};
pub use callpath::{Session, record_function, scope};
pub use profile::Profile;
pub use record::{FlopCounts, KernelRecord, Metric, MetricName, MetricValue, RuleResult};
pub use run::ProfileRun;
