//! Can rocprofv3 run here: [`ask`] puts the questions to the pipeline's [`Probe`] (the binary,
//! its version, `/dev/kfd`, the DRM render nodes, the gfx targets `rocminfo` or `amd-smi`
//! list) and [`decide`] judges the answers. Every failed check says how to fix it.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

pub use crate::model::probe::NodeAccess;
use crate::model::probe::{Probe, ProbeRequest};
use crate::profilers::preflight::{self, Preflight, VERSION_TIMEOUT, VersionError};

use super::NAME;

/// What the probes answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answers {
    pub binary: Option<PathBuf>,
    /// `rocprofv3 --version`, when the binary was found.
    pub version: Option<Result<String, VersionError>>,
    pub kfd: NodeAccess,
    /// `/dev/dri/renderD*` nodes and their access.
    pub render_nodes: Vec<(String, NodeAccess)>,
    /// The text of `rocminfo` (or `amd-smi static --asic`), or why neither could be read.
    pub agents: Result<String, String>,
    pub root: bool,
}

const INSTALL: &str = "install ROCm's rocprofiler-sdk (`apt install rocprofiler-sdk`) and put \
                       /opt/rocm/bin on PATH";
const GROUPS_FIX: &str = "add the user to the `render` and `video` groups (`sudo usermod -aG \
                          render,video $USER`, then log in again); in a container add \
                          `--group-add video --group-add render`";

/// Ask `probe` everything [`decide`] needs.
pub fn ask(probe: &dyn Probe) -> Answers {
    let binary = probe.find_binary(NAME);
    let version = binary
        .as_deref()
        .map(|path| preflight::read_version(probe, path, &["--version"], VERSION_TIMEOUT));
    let render_nodes = probe
        .list_dir(Path::new("/dev/dri"))
        .into_iter()
        .filter(|name| name.starts_with("renderD"))
        .map(|name| {
            let access = probe.node_access(&Path::new("/dev/dri").join(&name));
            (name, access)
        })
        .collect();
    let kfd = match probe.node_access(Path::new("/dev/kfd")) {
        NodeAccess::Unknown if !probe.list_dir(Path::new("/dev")).iter().any(|n| n == "kfd") => {
            NodeAccess::Missing
        }
        access => access,
    };
    Answers {
        binary,
        version,
        kfd,
        render_nodes,
        agents: agent_listing(probe),
        root: probe.is_root(),
    }
}

/// `rocminfo`, else `amd-smi static --asic`: whichever lists the agents.
fn agent_listing(probe: &dyn Probe) -> Result<String, String> {
    let mut why = Vec::new();
    for (tool, args) in [
        ("rocminfo", &[][..]),
        ("amd-smi", &["static", "--asic"][..]),
    ] {
        let Some(path) = probe.find_binary(tool) else {
            why.push(format!("`{tool}` is not on PATH"));
            continue;
        };
        let command = ProbeRequest::new(path, args, VERSION_TIMEOUT);
        match probe.run(&command) {
            Ok(output) if output.success() => {
                return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
            }
            Ok(output) => why.push(format!(
                "`{}` exited with {}: {}",
                command.shown(),
                output.status_text(),
                preflight::first_line(&String::from_utf8_lossy(&output.stderr)).unwrap_or("")
            )),
            Err(e) => why.push(e.to_string()),
        }
    }
    Err(why.join("; "))
}

static GFX: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\bgfx[0-9][0-9a-f]{2,3}\b").ok());

/// The distinct gfx targets (`gfx942`, `gfx90a`, …) named in `rocminfo`/`amd-smi` text, in
/// order of appearance.
pub fn gfx_targets(text: &str) -> Vec<String> {
    let Some(re) = GFX.as_ref() else {
        return Vec::new();
    };
    let mut seen: Vec<String> = Vec::new();
    for m in re.find_iter(text) {
        let target = m.as_str().to_string();
        // gfx000 is the CPU agent's placeholder in some rocminfo builds.
        if target != "gfx000" && !seen.contains(&target) {
            seen.push(target);
        }
    }
    seen
}

/// The preflight's answer from the probes.
pub fn decide(probe: &Answers) -> Preflight {
    let mut p = Preflight::new(NAME);
    let found = p.record(
        "binary",
        preflight::binary_verdict(NAME, probe.binary.as_deref(), INSTALL),
    );
    p.binary = probe.binary.clone();
    if let (true, Some(version)) = (found, &probe.version) {
        p.version = version.as_ref().ok().cloned();
        // The 2024 rocprofv3 (rocprofiler-sdk 8ab1ed7) has no --version; the tool still works.
        let v = preflight::version_verdict(NAME, version);
        p.advise("version", v.ok, v.detail);
    }
    let kfd = match probe.kfd {
        NodeAccess::ReadWrite => (true, "/dev/kfd is readable and writable".to_string()),
        NodeAccess::Unknown => (true, "/dev/kfd exists (access not checked)".to_string()),
        NodeAccess::Missing => (
            false,
            "no /dev/kfd: no AMD GPU driver (amdgpu with KFD) is loaded; install the ROCm \
             driver (`amdgpu-dkms`), or in a container pass `--device /dev/kfd`"
                .to_string(),
        ),
        NodeAccess::Denied if probe.root => (true, "running as root".to_string()),
        NodeAccess::Denied => (
            false,
            format!("/dev/kfd is not readable and writable; {GROUPS_FIX}"),
        ),
    };
    p.check("kfd", kfd.0, kfd.1);
    let usable: Vec<&str> = probe
        .render_nodes
        .iter()
        .filter(|(_, a)| matches!(a, NodeAccess::ReadWrite | NodeAccess::Unknown) || probe.root)
        .map(|(n, _)| n.as_str())
        .collect();
    let dri = if probe.render_nodes.is_empty() {
        (
            false,
            "no GPU render node in /dev/dri (renderD*); in a container pass `--device \
             /dev/dri`"
                .to_string(),
        )
    } else if usable.is_empty() {
        (
            false,
            format!("the render nodes in /dev/dri are not readable and writable; {GROUPS_FIX}"),
        )
    } else {
        (true, format!("render node(s) {}", usable.join(", ")))
    };
    p.check("dri", dri.0, dri.1);
    let gpu = match &probe.agents {
        Ok(text) => match gfx_targets(text).as_slice() {
            [] => (
                false,
                "rocminfo lists no GPU agent (no gfx target); check that the GPU is visible \
                 (`ROCR_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES`) and that the driver is loaded"
                    .to_string(),
            ),
            targets => (true, format!("AMD GPU: {}", targets.join(", "))),
        },
        Err(why) => (
            false,
            format!(
                "cannot list the GPU agents: {why}; install rocminfo or amd-smi (ROCm) to \
                 confirm an AMD GPU"
            ),
        ),
    };
    p.check("gpu", gpu.0, gpu.1);
    p.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROCMINFO: &str = "*******\nAgent 1\n*******\n  Name:                    AMD EPYC 9654\n  Device Type:             CPU\n*******\nAgent 2\n*******\n  Name:                    gfx942\n  Marketing Name:          AMD Instinct MI300X\n  Device Type:             GPU\n  ISA Info:\n    ISA 1\n      Name:                    amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-\n";

    fn ready() -> Answers {
        Answers {
            binary: Some(PathBuf::from("/opt/rocm/bin/rocprofv3")),
            version: Some(Ok("rocprofv3 1.0.0".into())),
            kfd: NodeAccess::ReadWrite,
            render_nodes: vec![("renderD128".into(), NodeAccess::ReadWrite)],
            agents: Ok(ROCMINFO.into()),
            root: false,
        }
    }

    #[test]
    fn gfx_targets_from_rocminfo_and_amd_smi() {
        assert_eq!(gfx_targets(ROCMINFO), ["gfx942"]);
        assert_eq!(
            gfx_targets(
                "GPU: 0\n    ASIC:\n        TARGET_GRAPHICS_VERSION: gfx90a\nGPU: 1\n        TARGET_GRAPHICS_VERSION: gfx90a\n"
            ),
            ["gfx90a"]
        );
        assert_eq!(gfx_targets("Name: gfx1100\nName: gfx000"), ["gfx1100"]);
        assert!(gfx_targets("no gpu here").is_empty());
    }

    #[test]
    fn everything_present_is_available() {
        let p = decide(&ready());
        assert!(p.available, "{:?}", p.reason);
        assert_eq!(p.version.as_deref(), Some("rocprofv3 1.0.0"));
        let gpu = p.checks.iter().find(|c| c.name == "gpu").unwrap();
        assert_eq!(gpu.detail, "AMD GPU: gfx942");
    }

    #[test]
    fn each_missing_piece_names_its_fix() {
        let mut probe = ready();
        probe.binary = None;
        probe.version = None;
        let p = decide(&probe);
        assert!(!p.available);
        assert!(p.reason.unwrap().contains("rocprofiler-sdk"));

        let mut probe = ready();
        probe.kfd = NodeAccess::Missing;
        let reason = decide(&probe).reason.unwrap();
        assert!(reason.contains("--device /dev/kfd"), "{reason}");

        let mut probe = ready();
        probe.kfd = NodeAccess::Denied;
        probe.render_nodes = vec![("renderD128".into(), NodeAccess::Denied)];
        let reason = decide(&probe).reason.unwrap();
        assert!(reason.contains("usermod -aG render,video"), "{reason}");
        assert!(reason.contains("/dev/dri"), "{reason}");
        probe.root = true;
        assert!(decide(&probe).available);

        let mut probe = ready();
        probe.render_nodes.clear();
        assert!(decide(&probe).reason.unwrap().contains("--device /dev/dri"));

        let mut probe = ready();
        probe.agents = Ok("Agent 1\n  Name: AMD EPYC\n".into());
        assert!(decide(&probe).reason.unwrap().contains("no GPU agent"));
        probe.agents = Err("`rocminfo` is not on PATH".into());
        assert!(decide(&probe).reason.unwrap().contains("install rocminfo"));
    }

    #[test]
    fn an_unreadable_version_only_warns() {
        let mut probe = ready();
        probe.version = Some(Err(VersionError::Failed {
            command: "rocprofv3 --version".into(),
            status: "exit status: 2".into(),
            said: ": rocprofv3: error: unrecognized arguments: --version".into(),
        }));
        let p = decide(&probe);
        assert!(p.available);
        assert_eq!(p.warnings.len(), 1);
        assert!(p.warnings[0].contains("--version"));
    }
}
