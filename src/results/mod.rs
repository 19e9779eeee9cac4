//! The normalized profile: kernel records, the run document, aggregation and exports.

pub mod record;
pub mod run;

pub use record::{FlopCounts, KernelRecord, Metric, MetricValue, RuleResult};
pub use run::ProfileRun;
