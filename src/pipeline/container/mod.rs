//! Containers as an execution target beside local processes, through the Docker Engine API
//! (bollard): the same plans, the same supervision (line splitter, end marker, graces,
//! timeouts, cancellation), the same outcome, plus the container's id and image. Knows no
//! vendor: a plan's capabilities and GPU request are data.

pub mod copy_out;
pub mod engine;
pub mod error;
pub mod job;
pub mod plan;
pub mod prune;
pub mod spec;
pub mod supervise;
pub mod watchdog;

pub use engine::Engine;
pub use error::ContainerError;
pub use job::{BindMount, ContainerJob, ContainerLimits, GpuRequest, OutputTransfer};
pub use plan::{ContainerRunner, execute_plan_in_container};
pub use prune::{PruneReport, prune};
pub use spec::JOB_LABEL;
pub use supervise::{ContainerRun, run_in_container};
