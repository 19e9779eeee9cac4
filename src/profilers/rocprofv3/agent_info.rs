//! `<prefix>_agent_info.csv`, written beside every trace: the CPUs and GPUs, with the GPU's
//! gfx target (`Name`) and product name. It turns a trace's `"Agent 4"` into a device name the
//! roofline table knows.

use serde::{Deserialize, Serialize};

use super::ParsedPart;
use super::table::{Table, cell_str, cell_u64};

/// One agent (a CPU or a GPU).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    pub node_id: Option<u64>,
    /// The index traces use by default (`--agent-index relative`).
    pub logical_node_id: Option<u64>,
    /// `CPU` or `GPU`.
    pub agent_type: String,
    /// The gfx target for GPUs (`gfx942`), the CPU's model for CPUs.
    pub name: String,
    /// `AMD Instinct MI300X`, …
    pub product_name: Option<String>,
    pub compute_units: Option<u64>,
    pub wavefront_size: Option<u64>,
}

impl Agent {
    pub fn is_gpu(&self) -> bool {
        self.agent_type.eq_ignore_ascii_case("GPU")
    }

    /// `AMD Instinct MI300X (gfx942)`, or the gfx target alone.
    pub fn device_name(&self) -> String {
        match &self.product_name {
            Some(product) if product != &self.name => format!("{product} ({})", self.name),
            _ => self.name.clone(),
        }
    }

    /// Whether a trace's agent label (`Agent 4`, `GPU 0` is not resolvable here) names this
    /// agent, by logical index first (rocprofv3's default), then by node id.
    pub fn matches_label(&self, label: &str, by_logical: bool) -> bool {
        let Some(index) = label
            .strip_prefix("Agent ")
            .and_then(|n| n.trim().parse::<u64>().ok())
        else {
            return false;
        };
        if by_logical {
            self.logical_node_id == Some(index)
        } else {
            self.node_id == Some(index)
        }
    }
}

/// Parse the agent list.
pub fn parse(name: &str, bytes: &[u8]) -> ParsedPart {
    let table = Table::read(name, bytes);
    let one = |n: &str| table.index(&[n]);
    let (node, logical, kind, gfx, product) = (
        one("Node_Id"),
        one("Logical_Node_Id"),
        one("Agent_Type"),
        one("Name"),
        one("Product_Name"),
    );
    let (cus, wave) = (one("Cu_Count"), one("Wave_Front_Size"));
    let mut part = ParsedPart {
        diagnostics: table.warnings.clone(),
        ..Default::default()
    };
    for row in &table.rows {
        let (Some(agent_type), Some(agent_name)) = (cell_str(row, kind), cell_str(row, gfx)) else {
            continue;
        };
        part.agents.push(Agent {
            node_id: cell_u64(row, node),
            logical_node_id: cell_u64(row, logical),
            agent_type: agent_type.to_string(),
            name: agent_name.to_string(),
            product_name: cell_str(row, product).map(str::to_string),
            compute_units: cell_u64(row, cus),
            wavefront_size: cell_u64(row, wave),
        });
    }
    part
}

/// The GPU agent a trace's label names: by logical index, then node id; with a single GPU and
/// a label that names no agent at all (`--agent-index type-relative` writes `GPU 0`), that
/// GPU, since kernels run only on GPUs. `None` otherwise.
pub fn resolve<'a>(agents: &'a [Agent], label: &str) -> Option<&'a Agent> {
    let gpus = || agents.iter().filter(|a| a.is_gpu());
    let by_index = gpus()
        .find(|a| a.matches_label(label, true))
        .or_else(|| gpus().find(|a| a.matches_label(label, false)));
    if by_index.is_some() {
        return by_index;
    }
    let names_an_agent = agents
        .iter()
        .any(|a| a.matches_label(label, true) || a.matches_label(label, false));
    match (gpus().count(), names_an_agent) {
        (1, false) => gpus().next(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_agent_list() {
        let bytes = include_bytes!("../../../tests/fixtures/rocprofv3/agent_info.csv");
        let part = parse("agent_info.csv", bytes);
        assert!(part.diagnostics.is_empty(), "{:?}", part.diagnostics);
        assert_eq!(part.agents.len(), 2);
        let gpu = &part.agents[1];
        assert!(gpu.is_gpu() && !part.agents[0].is_gpu());
        assert_eq!(gpu.name, "gfx900");
        assert_eq!(gpu.device_name(), "Radeon RX Vega (gfx900)");
        assert_eq!(gpu.compute_units, Some(64));
        assert_eq!(gpu.wavefront_size, Some(64));
        assert_eq!(
            resolve(&part.agents, "Agent 1").map(|a| a.name.as_str()),
            Some("gfx900")
        );
        // Agent 0 is the CPU: not a device for kernels.
        assert!(resolve(&part.agents, "Agent 0").is_none());
        // A label naming no agent, with one GPU listed: that GPU.
        assert_eq!(
            resolve(&part.agents, "GPU 0").map(|a| a.name.as_str()),
            Some("gfx900")
        );
        let two_gpus = [part.agents[1].clone(), part.agents[1].clone()];
        assert!(resolve(&two_gpus, "GPU 0").is_none());
    }
}
