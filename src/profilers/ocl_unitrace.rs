//! OclUnitrace backend (to be written).

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::{Plan, Preflight, Profiler, ProfilerOutput, ProfilerSettings};
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct OclUnitrace {
    output_dir: PathBuf,
}

impl OclUnitrace {
    pub fn new(output_dir: PathBuf, _settings: &ProfilerSettings) -> Self {
        OclUnitrace { output_dir }
    }
}

#[async_trait]
impl Profiler for OclUnitrace {
    fn name(&self) -> &str {
        "ocl-unitrace"
    }
    fn output_dir(&self) -> &Path {
        &self.output_dir
    }
    fn wrap(&self, _target: &[String]) -> Result<Plan> {
        Err(Error::invalid("ocl-unitrace", "not written yet"))
    }
    async fn read_output(&self) -> Result<ProfilerOutput> {
        Ok(ProfilerOutput::default())
    }
    fn preflight(&self) -> Preflight {
        Preflight::new("ocl-unitrace").finish()
    }
}
