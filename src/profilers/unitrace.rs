//! Unitrace backend (to be written).

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::{Plan, Preflight, Profiler, ProfilerOutput, ProfilerSettings};
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct Unitrace {
    output_dir: PathBuf,
}

impl Unitrace {
    pub fn new(output_dir: PathBuf, _settings: &ProfilerSettings) -> Self {
        Unitrace { output_dir }
    }
}

#[async_trait]
impl Profiler for Unitrace {
    fn name(&self) -> &str {
        "unitrace"
    }
    fn output_dir(&self) -> &Path {
        &self.output_dir
    }
    fn wrap(&self, _target: &[String]) -> Result<Plan> {
        Err(Error::invalid("unitrace", "not written yet"))
    }
    async fn read_output(&self) -> Result<ProfilerOutput> {
        Ok(ProfilerOutput::default())
    }
    fn preflight(&self) -> Preflight {
        Preflight::new("unitrace").finish()
    }
}
