//! Preflight: can a profiler run on this machine, and if not, how to fix that.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One check of a preflight (binary found, counters readable, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

/// The answer of a profiler's preflight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preflight {
    pub profiler: String,
    pub available: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why it cannot run, with the fix; `None` when available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub checks: Vec<Check>,
}

impl Preflight {
    /// Start a preflight; `finish` derives `available` and `reason` from the failed checks.
    pub fn new(profiler: &str) -> Self {
        Preflight {
            profiler: profiler.to_string(),
            available: false,
            binary: None,
            version: None,
            reason: None,
            checks: Vec::new(),
        }
    }

    pub fn check(&mut self, name: &str, ok: bool, detail: impl Into<String>) -> bool {
        self.checks.push(Check {
            name: name.to_string(),
            ok,
            detail: detail.into(),
        });
        ok
    }

    /// Available when every check passed; otherwise the reason joins the failed checks' details.
    pub fn finish(mut self) -> Self {
        let failed: Vec<&str> = self
            .checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| c.detail.as_str())
            .collect();
        self.available = failed.is_empty();
        self.reason = (!failed.is_empty()).then(|| failed.join("; "));
        self
    }
}
