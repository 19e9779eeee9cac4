//! Where a run's kernel record came from when the run used the profile cache: kept apart from
//! the cache's own vocabulary so that the record does not depend on the entry that holds it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a run's kernel record came from, when the run used the profile cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordSource {
    /// Profiled in this run.
    Profiled,
    /// A repeat of a launch profiled in this run (same fingerprint), not profiled again.
    Repeat,
    /// Served from the cache.
    Cache,
}

/// A record's place in the profile cache: its source, key digest and, for a hit, the run that
/// profiled it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecordOrigin {
    pub source: RecordSource,
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_run: Option<String>,
}
