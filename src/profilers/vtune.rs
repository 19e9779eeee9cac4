//! Vtune backend (to be written).

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::{Plan, Preflight, Profiler, ProfilerOutput, ProfilerSettings};
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct Vtune {
    output_dir: PathBuf,
}

impl Vtune {
    pub fn new(output_dir: PathBuf, _settings: &ProfilerSettings) -> Self {
        Vtune { output_dir }
    }
}

#[async_trait]
impl Profiler for Vtune {
    fn name(&self) -> &str {
        "vtune"
    }
    fn output_dir(&self) -> &Path {
        &self.output_dir
    }
    fn wrap(&self, _target: &[String]) -> Result<Plan> {
        Err(Error::invalid("vtune", "not written yet"))
    }
    async fn read_output(&self) -> Result<ProfilerOutput> {
        Ok(ProfilerOutput::default())
    }
    fn preflight(&self) -> Preflight {
        Preflight::new("vtune").finish()
    }
}
