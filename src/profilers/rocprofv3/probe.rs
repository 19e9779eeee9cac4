//! The probes behind the rocprofv3 preflight: they read the machine and return plain data for
//! [`super::preflight::decide`]. Kept apart from the decision so it stays pure (and so the
//! pipeline can take these reads over).

use std::path::Path;

use nix::unistd::{AccessFlags, access};

use super::preflight::{NodeAccess, Probe};
use crate::profilers::preflight as shared;

/// Read everything the decision needs.
pub fn gather() -> Probe {
    let binary = shared::find_binary("rocprofv3");
    let version = binary
        .as_deref()
        .map(|path| shared::read_version(path, &["--version"], shared::VERSION_TIMEOUT));
    Probe {
        binary,
        version,
        kfd: node_access(Path::new("/dev/kfd")),
        render_nodes: render_nodes(),
        agents: agent_listing(),
        root: shared::is_root(),
    }
}

fn node_access(path: &Path) -> NodeAccess {
    if !path.exists() {
        return NodeAccess::Missing;
    }
    match access(path, AccessFlags::R_OK | AccessFlags::W_OK) {
        Ok(()) => NodeAccess::ReadWrite,
        Err(_) => NodeAccess::Denied,
    }
}

fn render_nodes() -> Vec<(String, NodeAccess)> {
    shared::render_nodes()
        .into_iter()
        .map(|node| {
            let access = node_access(&Path::new("/dev/dri").join(&node.name));
            (node.name, access)
        })
        .collect()
}

/// `rocminfo`, else `amd-smi static --asic`: whichever lists the agents.
fn agent_listing() -> Result<String, String> {
    let mut why = Vec::new();
    for (tool, args) in [
        ("rocminfo", &[][..]),
        ("amd-smi", &["static", "--asic"][..]),
    ] {
        let Some(path) = shared::find_binary(tool) else {
            why.push(format!("`{tool}` is not on PATH"));
            continue;
        };
        match shared::capture(&path, args, shared::VERSION_TIMEOUT) {
            Ok(output) if output.status.success() => {
                return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
            }
            Ok(output) => why.push(format!(
                "`{tool}` exited with {}: {}",
                output.status,
                shared::first_line(&String::from_utf8_lossy(&output.stderr)).unwrap_or("")
            )),
            Err(e) => why.push(e),
        }
    }
    Err(why.join("; "))
}
