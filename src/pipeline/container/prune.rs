//! Reaping containers that a polyprof which died (SIGKILL, power loss) could not remove.

use std::collections::HashMap;

use bollard::query_parameters::{ListContainersOptionsBuilder, RemoveContainerOptionsBuilder};
use serde::Serialize;

use super::engine::{Engine, HOST_LABEL, hostname, owner_alive};
use super::error::{ContainerError, classify};
use super::spec::JOB_LABEL;

/// What a prune found and did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PruneReport {
    /// `name (id)` of each container removed.
    pub removed: Vec<String>,
    /// Containers whose polyprof is still running: left alone.
    pub owner_alive: usize,
    /// Containers labelled on another host (shared engine): left alone unless `all_hosts`.
    pub other_host: usize,
    /// Removals that failed, with the engine's reason.
    pub failed: Vec<String>,
}

/// Remove every polyprof container whose owner is gone. `all_hosts`: also those labelled by
/// another host, whose owners cannot be checked from here. `dry_run`: only report.
pub async fn prune(
    engine: &Engine,
    all_hosts: bool,
    dry_run: bool,
) -> Result<PruneReport, ContainerError> {
    let filters = HashMap::from([("label", vec![JOB_LABEL])]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let containers = engine
        .docker()
        .list_containers(Some(options))
        .await
        .map_err(|e| classify("list containers", "", e))?;
    let here = hostname();
    let mut report = PruneReport::default();
    for container in containers {
        let labels = container.labels.unwrap_or_default();
        let same_host = labels.get(HOST_LABEL).is_some_and(|h| *h == here);
        if !same_host && !all_hosts {
            report.other_host += 1;
            continue;
        }
        if same_host && owner_alive(&labels) {
            report.owner_alive += 1;
            continue;
        }
        let id = container.id.unwrap_or_default();
        let name = container
            .names
            .and_then(|n| n.first().map(|n| n.trim_start_matches('/').to_string()))
            .unwrap_or_default();
        let what = format!("{name} ({})", id.chars().take(12).collect::<String>());
        if dry_run {
            report.removed.push(what);
            continue;
        }
        let force = RemoveContainerOptionsBuilder::default().force(true).build();
        match engine.docker().remove_container(&id, Some(force)).await {
            Ok(()) => report.removed.push(what),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {}
            Err(e) => report.failed.push(format!("{what}: {e}")),
        }
    }
    Ok(report)
}
