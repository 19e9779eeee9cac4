//! NVIDIA Nsight Compute backend.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{Plan, Preflight, Profiler, ProfilerOutput, ProfilerSettings};
use crate::error::{Error, Result};

/// Typed ncu options (to be filled by the NCU issue).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NcuOptions {}

#[derive(Debug, Clone)]
pub struct Ncu {
    output_dir: PathBuf,
}

impl Ncu {
    pub fn new(output_dir: PathBuf, _settings: &ProfilerSettings) -> Result<Self> {
        Ok(Ncu { output_dir })
    }
}

#[async_trait]
impl Profiler for Ncu {
    fn name(&self) -> &str {
        "ncu"
    }
    fn output_dir(&self) -> &Path {
        &self.output_dir
    }
    fn wrap(&self, _target: &[String]) -> Result<Plan> {
        Err(Error::invalid("ncu", "not written yet"))
    }
    async fn read_output(&self) -> Result<ProfilerOutput> {
        Ok(ProfilerOutput::default())
    }
    fn preflight(&self) -> Preflight {
        Preflight::new("ncu").finish()
    }
}
