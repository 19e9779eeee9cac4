//! Where a job's commands run.

use crate::pipeline::container::ContainerJob;

/// The execution target of [`profile_on`](crate::pipeline::job::profile_on).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ExecutionTarget {
    /// Supervised process groups on this machine.
    #[default]
    Local,
    /// One container per command, through the Docker Engine API.
    Container(Box<ContainerJob>),
}
