//! Preflight: can a profiler run on this machine, and if not, how to fix that.
//!
//! The probes (`which`, a version command with a timeout, sysctl files, render nodes) are thin
//! readers; every decision is a pure function over what they read, so it is unit tested without
//! the hardware.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::error::Error;
use crate::model::probe::{Probe, ProbeError, ProbeRequest};

/// How long a `--version` command may take before the preflight gives up on it.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Intel's counter-access sysctl of the `xe` kernel driver.
pub const XE_PARANOID: &str = "/proc/sys/dev/xe/observation_paranoid";
/// Intel's counter-access sysctl of the `i915` kernel driver.
pub const I915_PARANOID: &str = "/proc/sys/dev/i915/perf_stream_paranoid";
/// Kernel pointer hiding; VTune resolves kernel symbols only when it is 0.
pub const KPTR_RESTRICT: &str = "/proc/sys/kernel/kptr_restrict";
/// PCI vendor id of Intel GPUs, as `/sys/class/drm/renderD*/device/vendor` spells it.
pub const INTEL_PCI_VENDOR: &str = "0x8086";
/// DRM devices in sysfs: `<node>/device` is the PCI function, `<node>/device/driver` the link
/// to the kernel driver bound to it.
pub const DRM_SYSFS: &str = "/sys/class/drm";
/// PCI functions in sysfs (`vendor`, `class`, `device`, `driver`).
pub const PCI_SYSFS: &str = "/sys/bus/pci/devices";
/// The kernel drivers Intel's GPU tools (Level Zero, OpenCL, metrics) work through.
pub const INTEL_GPU_DRIVERS: &[&str] = &["xe", "i915"];

/// One check of a preflight (binary found, counters readable, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
    /// A failed advisory check is reported but does not make the profiler unavailable.
    #[serde(default)]
    pub advisory: bool,
}

/// The answer of a profiler's preflight. Every key is always serialized (`null` when unknown)
/// so the JSON of `polyprof doctor --json` keeps one shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preflight {
    pub profiler: String,
    pub available: bool,
    #[serde(default)]
    pub binary: Option<PathBuf>,
    #[serde(default)]
    pub version: Option<String>,
    /// Why it cannot run, with the fix; `None` when available.
    #[serde(default)]
    pub reason: Option<String>,
    /// Failed advisory checks, with their fixes; they do not block the profiler.
    #[serde(default)]
    pub warnings: Vec<String>,
    pub checks: Vec<Check>,
}

impl Preflight {
    /// Start a preflight; `finish` derives `available` and `reason` from the failed checks.
    pub fn new(profiler: &str) -> Self {
        Preflight {
            profiler: profiler.to_string(),
            available: false,
            binary: None,
            version: None,
            reason: None,
            warnings: Vec::new(),
            checks: Vec::new(),
        }
    }

    /// Record a required check; returns `ok` so callers can skip checks that depend on it.
    pub fn check(&mut self, name: &str, ok: bool, detail: impl Into<String>) -> bool {
        self.checks.push(Check {
            name: name.to_string(),
            ok,
            detail: detail.into(),
            advisory: false,
        });
        ok
    }

    /// Record an advisory check: reported, but it never makes the profiler unavailable.
    pub fn advise(&mut self, name: &str, ok: bool, detail: impl Into<String>) -> bool {
        self.checks.push(Check {
            name: name.to_string(),
            ok,
            detail: detail.into(),
            advisory: true,
        });
        ok
    }

    /// Record the outcome of a pure decision as a required check.
    pub fn record(&mut self, name: &str, verdict: Verdict) -> bool {
        self.check(name, verdict.ok, verdict.detail)
    }

    /// Available when every required check passed; otherwise the reason joins the failed
    /// required checks' details. Failed advisory checks become `warnings`.
    pub fn finish(mut self) -> Self {
        let failed: Vec<&str> = self
            .checks
            .iter()
            .filter(|c| !c.ok && !c.advisory)
            .map(|c| c.detail.as_str())
            .collect();
        self.available = failed.is_empty();
        self.reason = (!failed.is_empty()).then(|| failed.join("; "));
        self.warnings = self
            .checks
            .iter()
            .filter(|c| !c.ok && c.advisory)
            .map(|c| c.detail.clone())
            .collect();
        self
    }
}

impl Preflight {
    /// `Ok` when available, else the typed [`Error::ProfilerUnavailable`] callers get when they
    /// try to use the profiler anyway.
    pub fn ensure_available(&self) -> Result<(), Error> {
        if self.available {
            return Ok(());
        }
        Err(Error::ProfilerUnavailable {
            profiler: self.profiler.clone(),
            reason: self
                .reason
                .clone()
                .unwrap_or_else(|| "its preflight failed".to_string()),
        })
    }
}

/// The result of one pure decision: passed or not, and what to say (with the fix when failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub ok: bool,
    pub detail: String,
}

impl Verdict {
    pub fn pass(detail: impl Into<String>) -> Self {
        Verdict {
            ok: true,
            detail: detail.into(),
        }
    }

    pub fn fail(detail: impl Into<String>) -> Self {
        Verdict {
            ok: false,
            detail: detail.into(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Probes: questions asked through [`Probe`]; the pipeline answers them on the host.

/// Run `program args` through the probe and return the first non-empty line of its output.
/// An error says what went wrong (non-zero exit, timeout, nothing printed).
pub fn read_version(
    probe: &dyn Probe,
    program: &Path,
    args: &[&str],
    timeout: Duration,
) -> Result<String, VersionError> {
    let command = ProbeRequest::new(program, args, timeout);
    let shown = command.shown();
    let output = probe.run(&command)?;
    // Some tools print their version on stderr.
    let text = if output.stdout.iter().all(u8::is_ascii_whitespace) {
        String::from_utf8_lossy(&output.stderr)
    } else {
        String::from_utf8_lossy(&output.stdout)
    };
    let first = first_line(&text);
    if !output.success() {
        return Err(VersionError::Failed {
            command: shown,
            status: output.status_text(),
            said: first.map(|l| format!(": {l}")).unwrap_or_default(),
        });
    }
    first
        .map(str::to_string)
        .ok_or(VersionError::Silent { command: shown })
}

/// Why no version line was read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error(transparent)]
    Probe(#[from] ProbeError),
    #[error("`{command}` exited with {status}{said}")]
    Failed {
        command: String,
        status: String,
        /// `: <first line>` when it printed one.
        said: String,
    },
    #[error("`{command}` printed nothing")]
    Silent { command: String },
}

/// The first non-blank line, trimmed.
pub fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

/// The trimmed content of a sysctl-style file, or `None` when it does not exist or is
/// unreadable.
pub fn read_sysctl(probe: &dyn Probe, path: &Path) -> Option<String> {
    probe.read_text(path).map(|s| s.trim().to_string())
}

/// Each DRM render node (`/dev/dri/renderD*`) with the PCI vendor id and the kernel driver of
/// its device, if readable. Sorted by node name.
pub fn render_nodes(probe: &dyn Probe) -> Vec<RenderNode> {
    probe
        .list_dir(Path::new("/dev/dri"))
        .into_iter()
        .filter(|name| name.starts_with("renderD"))
        .map(|name| {
            let device = Path::new(DRM_SYSFS).join(&name).join("device");
            let vendor = read_sysctl(probe, &device.join("vendor"));
            let driver = driver_of(probe, &device);
            RenderNode {
                name,
                vendor,
                driver,
            }
        })
        .collect()
}

/// The name of the driver bound to a sysfs device (`driver` links to `…/drivers/<name>`).
fn driver_of(probe: &dyn Probe, device: &Path) -> Option<String> {
    let target = probe.read_link(&device.join("driver"))?;
    target.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// Intel display-class PCI functions (vendor 0x8086, class 0x03….) with the driver bound to
/// each: what is there when no render node is, because no GPU driver took the device.
pub fn intel_pci_gpus(probe: &dyn Probe) -> Vec<PciGpu> {
    let root = Path::new(PCI_SYSFS);
    probe
        .list_dir(root)
        .into_iter()
        .filter_map(|address| {
            let dir = root.join(&address);
            let vendor = read_sysctl(probe, &dir.join("vendor"))?;
            let class = read_sysctl(probe, &dir.join("class"))?;
            if !vendor.eq_ignore_ascii_case(INTEL_PCI_VENDOR) || !class.starts_with("0x03") {
                return None;
            }
            Some(PciGpu {
                device_id: read_sysctl(probe, &dir.join("device")),
                driver: driver_of(probe, &dir),
                address,
            })
        })
        .collect()
}

/// The shared Intel preflight (unitrace, vtune): binary and version, an Intel GPU, and counter
/// access through the `xe`/`i915` paranoid sysctls. Callers add their own checks and `finish`.
pub fn intel_preflight(probe: &dyn Probe, profiler: &str, binary: &str, hint: &str) -> Preflight {
    let mut p = Preflight::new(profiler);
    let found_at = probe.find_binary(binary);
    let found = p.record("binary", binary_verdict(binary, found_at.as_deref(), hint));
    if let (true, Some(path)) = (found, &found_at) {
        let version = read_version(probe, path, &["--version"], VERSION_TIMEOUT);
        p.version = version.as_ref().ok().cloned();
        p.record("version", version_verdict(binary, &version));
    }
    p.binary = found_at;
    let nodes = render_nodes(probe);
    // The PCI bus is read only when no Intel render node explains the GPU already.
    let pci = if nodes.iter().any(RenderNode::is_intel) {
        Vec::new()
    } else {
        intel_pci_gpus(probe)
    };
    p.record("gpu", intel_gpu_verdict(&nodes, &pci));
    let xe = read_sysctl(probe, Path::new(XE_PARANOID));
    let i915 = read_sysctl(probe, Path::new(I915_PARANOID));
    p.record(
        "counters",
        intel_counters_verdict(xe.as_deref(), i915.as_deref(), probe.is_root()),
    );
    p
}

/// A DRM render node, the PCI vendor id of its device (`0x8086` for Intel) and the kernel
/// driver bound to the device (`xe`, `i915`, …), each `None` when sysfs does not say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderNode {
    pub name: String,
    pub vendor: Option<String>,
    pub driver: Option<String>,
}

impl RenderNode {
    pub fn is_intel(&self) -> bool {
        self.vendor
            .as_deref()
            .is_some_and(|v| v.eq_ignore_ascii_case(INTEL_PCI_VENDOR))
    }
}

/// An Intel GPU on the PCI bus: its address (`0000:03:00.0`), device id (`0xe20b`) and bound
/// driver (`None`: no driver bound, or unreadable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciGpu {
    pub address: String,
    pub device_id: Option<String>,
    pub driver: Option<String>,
}

fn is_intel_driver(driver: &str) -> bool {
    INTEL_GPU_DRIVERS.contains(&driver)
}

// ---------------------------------------------------------------------------------------------
// Decisions: pure functions over what the probes read.

/// The binary check: found on `PATH`, or how to get it there.
pub fn binary_verdict(name: &str, found: Option<&Path>, install_hint: &str) -> Verdict {
    match found {
        Some(path) => Verdict::pass(format!("`{name}` found at {}", path.display())),
        None => Verdict::fail(format!("`{name}` is not on PATH; {install_hint}")),
    }
}

/// The version check: a version line was read, or why not.
pub fn version_verdict(name: &str, version: &Result<String, VersionError>) -> Verdict {
    match version {
        Ok(line) => Verdict::pass(line.clone()),
        Err(why) => Verdict::fail(format!(
            "cannot read the {name} version: {why}; check the installation"
        )),
    }
}

/// Intel GPU present and driven: a render node of PCI vendor 0x8086 whose device is bound to
/// `xe` or `i915`. Without one, `pci` (the Intel GPUs on the PCI bus) tells a device with no
/// driver bound, or bound to another driver, from a container that was not given `/dev/dri`.
pub fn intel_gpu_verdict(nodes: &[RenderNode], pci: &[PciGpu]) -> Verdict {
    let intel: Vec<&RenderNode> = nodes.iter().filter(|n| n.is_intel()).collect();
    if !intel.is_empty() {
        return intel_node_verdict(&intel);
    }
    if !pci.is_empty() {
        return intel_pci_verdict(pci);
    }
    if nodes.is_empty() {
        return Verdict::fail(
            "no GPU render node in /dev/dri (renderD*); install the Intel GPU driver, or in a \
             container pass the device with `--device /dev/dri`",
        );
    }
    // Vendor files are unreadable in some containers; a render node then counts as present.
    if nodes.iter().all(|n| n.vendor.is_none()) {
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        return Verdict::pass(format!(
            "render node {} (vendor unknown: /sys/class/drm is not readable)",
            names.join(", ")
        ));
    }
    let seen: Vec<String> = nodes
        .iter()
        .map(|n| format!("{} ({})", n.name, n.vendor.as_deref().unwrap_or("unknown")))
        .collect();
    Verdict::fail(format!(
        "no Intel GPU: the render nodes belong to other vendors ({}); run on a machine with an \
         Intel GPU",
        seen.join(", ")
    ))
}

/// Intel render nodes: pass when one is driven by xe or i915 (or the driver link is
/// unreadable, as in some containers); fail when every one is bound to another driver.
fn intel_node_verdict(intel: &[&RenderNode]) -> Verdict {
    let driven: Vec<String> = intel
        .iter()
        .filter_map(|n| {
            let driver = n.driver.as_deref()?;
            is_intel_driver(driver).then(|| format!("{} (driver {driver})", n.name))
        })
        .collect();
    if !driven.is_empty() {
        return Verdict::pass(format!("Intel GPU render node: {}", driven.join(", ")));
    }
    let unknown: Vec<&str> = intel
        .iter()
        .filter(|n| n.driver.is_none())
        .map(|n| n.name.as_str())
        .collect();
    if !unknown.is_empty() {
        return Verdict::pass(format!(
            "Intel GPU render node: {} (driver unknown: {DRM_SYSFS}/<node>/device/driver is not \
             readable)",
            unknown.join(", ")
        ));
    }
    let other: Vec<String> = intel
        .iter()
        .map(|n| format!("{} → {}", n.name, n.driver.as_deref().unwrap_or("?")))
        .collect();
    Verdict::fail(format!(
        "the Intel GPU's render node is driven by another kernel driver ({}), not xe or i915, \
         which Level Zero, OpenCL and Intel's metrics need; bind the device to xe (or i915 on \
         older GPUs)",
        other.join(", ")
    ))
}

/// Intel GPUs on the PCI bus but no Intel render node.
fn intel_pci_verdict(pci: &[PciGpu]) -> Verdict {
    let shown = |g: &PciGpu| match &g.device_id {
        Some(id) => format!("{} (device {id})", g.address),
        None => g.address.clone(),
    };
    let unbound: Vec<&PciGpu> = pci.iter().filter(|g| g.driver.is_none()).collect();
    if let Some(first) = unbound.first() {
        let id = first
            .device_id
            .as_deref()
            .map(|d| d.trim_start_matches("0x").to_string())
            .unwrap_or_else(|| "<device id>".into());
        let names: Vec<String> = unbound.iter().map(|g| shown(g)).collect();
        return Verdict::fail(format!(
            "an Intel GPU is on the PCI bus ({}) but no kernel driver is bound to it, so it has \
             no render node: load the GPU driver with `sudo modprobe xe` (i915 on older GPUs); a \
             device the driver does not enable by default needs `xe.force_probe={id}` on the \
             kernel command line",
            names.join(", ")
        ));
    }
    let driven: Vec<String> = pci
        .iter()
        .filter(|g| g.driver.as_deref().is_some_and(is_intel_driver))
        .map(|g| {
            format!(
                "{} (driver {})",
                shown(g),
                g.driver.as_deref().unwrap_or("")
            )
        })
        .collect();
    if !driven.is_empty() {
        return Verdict::fail(format!(
            "an Intel GPU is bound to its driver ({}) but /dev/dri has no render node for it; in \
             a container pass the device with `--device /dev/dri`",
            driven.join(", ")
        ));
    }
    let other: Vec<String> = pci
        .iter()
        .map(|g| format!("{} → {}", shown(g), g.driver.as_deref().unwrap_or("?")))
        .collect();
    Verdict::fail(format!(
        "the Intel GPU is bound to another kernel driver ({}), not xe or i915 (passed through \
         to a virtual machine?); unbind it and load xe (or i915 on older GPUs)",
        other.join(", ")
    ))
}

/// Intel counter access. `xe` and `i915` are the contents of the two paranoid sysctls (`None`
/// when the file does not exist, i.e. that driver is not loaded). Every loaded driver must
/// allow unprivileged observation (0), unless we are root.
pub fn intel_counters_verdict(xe: Option<&str>, i915: Option<&str>, root: bool) -> Verdict {
    if root {
        return Verdict::pass("running as root: Intel GPU counters are readable");
    }
    let drivers = [
        ("xe", XE_PARANOID, "dev.xe.observation_paranoid", xe),
        ("i915", I915_PARANOID, "dev.i915.perf_stream_paranoid", i915),
    ];
    let loaded: Vec<_> = drivers.iter().filter(|d| d.3.is_some()).collect();
    if loaded.is_empty() {
        return Verdict::fail(format!(
            "neither {XE_PARANOID} nor {I915_PARANOID} exists: no Intel GPU kernel driver (xe or \
             i915) is loaded; install the Intel GPU driver"
        ));
    }
    let blocked: Vec<_> = loaded
        .iter()
        .filter(|d| d.3.map(str::trim) != Some("0"))
        .collect();
    if blocked.is_empty() {
        let names: Vec<&str> = loaded.iter().map(|d| d.1).collect();
        return Verdict::pass(format!("{} = 0", names.join(", ")));
    }
    let what: Vec<String> = blocked
        .iter()
        .map(|d| format!("{} is {}", d.1, d.3.unwrap_or("?").trim()))
        .collect();
    let fix: Vec<String> = blocked
        .iter()
        .map(|d| format!("sudo sysctl -w {}=0", d.2))
        .collect();
    Verdict::fail(format!(
        "Intel GPU counters need root: {}; allow them with `{}`",
        what.join(", "),
        fix.join(" && ")
    ))
}

/// VTune and kernel pointers: with `kptr_restrict` other than 0 VTune cannot resolve kernel
/// symbols (its GPU analysis still runs, so callers use this as an advisory check).
pub fn kptr_restrict_verdict(value: Option<&str>, root: bool) -> Verdict {
    match value.map(str::trim) {
        Some("0") => Verdict::pass(format!("{KPTR_RESTRICT} = 0")),
        _ if root => Verdict::pass("running as root: kernel symbols are readable"),
        Some(other) => Verdict::fail(format!(
            "{KPTR_RESTRICT} is {other}, so VTune cannot resolve kernel symbols; set it with \
             `sudo sysctl -w kernel.kptr_restrict=0`"
        )),
        None => Verdict::fail(format!(
            "{KPTR_RESTRICT} is not readable; VTune may not resolve kernel symbols (set \
             `sudo sysctl -w kernel.kptr_restrict=0` on the host)"
        )),
    }
}

/// Metal needs macOS with the Xcode command line tools.
pub fn macos_verdict(os: &str) -> Verdict {
    if os == "macos" {
        Verdict::pass("macOS")
    } else {
        Verdict::fail(format!(
            "needs macOS with Xcode command line tools (xcrun); this machine runs {os}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, vendor: Option<&str>) -> RenderNode {
        driven(name, vendor, Some("xe"))
    }

    fn driven(name: &str, vendor: Option<&str>, driver: Option<&str>) -> RenderNode {
        RenderNode {
            name: name.into(),
            vendor: vendor.map(String::from),
            driver: driver.map(String::from),
        }
    }

    fn gpu(address: &str, driver: Option<&str>) -> PciGpu {
        PciGpu {
            address: address.into(),
            device_id: Some("0xe20b".into()),
            driver: driver.map(String::from),
        }
    }

    #[test]
    fn finish_separates_required_and_advisory_failures() {
        let mut p = Preflight::new("vtune");
        p.check("binary", true, "found");
        p.advise("kptr", false, "set kptr_restrict");
        let done = p.clone().finish();
        assert!(done.available);
        assert_eq!(done.reason, None);
        assert_eq!(done.warnings, vec!["set kptr_restrict".to_string()]);

        p.check("counters", false, "sysctl fix");
        p.check("gpu", false, "no gpu");
        let done = p.finish();
        assert!(!done.available);
        assert_eq!(done.reason.as_deref(), Some("sysctl fix; no gpu"));
    }

    #[test]
    fn ensure_available_gives_the_typed_error() {
        let mut p = Preflight::new("vtune");
        p.check("binary", false, "`vtune` is not on PATH");
        let err = p.finish().ensure_available().unwrap_err();
        assert!(matches!(err, Error::ProfilerUnavailable { .. }));
        assert_eq!(
            err.to_string(),
            "profiler `vtune` is unavailable: `vtune` is not on PATH"
        );
        let mut ok = Preflight::new("vtune");
        ok.check("binary", true, "found");
        assert!(ok.finish().ensure_available().is_ok());
    }

    #[test]
    fn counters_allowed_when_every_loaded_driver_is_zero() {
        assert!(intel_counters_verdict(Some("0"), None, false).ok);
        assert!(intel_counters_verdict(None, Some("0\n"), false).ok);
        assert!(intel_counters_verdict(Some("0"), Some("0"), false).ok);
    }

    #[test]
    fn counters_blocked_names_the_sysctl_and_fix() {
        let v = intel_counters_verdict(Some("1"), None, false);
        assert!(!v.ok);
        assert!(v.detail.contains(XE_PARANOID), "{}", v.detail);
        assert!(
            v.detail
                .contains("sudo sysctl -w dev.xe.observation_paranoid=0"),
            "{}",
            v.detail
        );
        // One loaded driver still blocking is enough to fail, and only it is named in the fix.
        let v = intel_counters_verdict(Some("0"), Some("1"), false);
        assert!(!v.ok);
        assert!(v.detail.contains("dev.i915.perf_stream_paranoid=0"));
        assert!(!v.detail.contains("dev.xe.observation_paranoid=0"));
    }

    #[test]
    fn counters_without_driver_or_as_root() {
        let v = intel_counters_verdict(None, None, false);
        assert!(!v.ok);
        assert!(
            v.detail.contains("no Intel GPU kernel driver"),
            "{}",
            v.detail
        );
        assert!(intel_counters_verdict(Some("2"), Some("1"), true).ok);
    }

    #[test]
    fn intel_gpu_by_pci_vendor() {
        assert!(!intel_gpu_verdict(&[], &[]).ok);
        assert!(intel_gpu_verdict(&[node("renderD128", Some("0x8086"))], &[]).ok);
        assert!(
            intel_gpu_verdict(
                &[
                    node("renderD128", Some("0x10de")),
                    node("renderD129", Some("0x8086"))
                ],
                &[]
            )
            .ok
        );
        let v = intel_gpu_verdict(&[node("renderD128", Some("0x10de"))], &[]);
        assert!(!v.ok);
        assert!(v.detail.contains("0x10de"), "{}", v.detail);
        // Unreadable vendor files: trust the node rather than refuse.
        assert!(intel_gpu_verdict(&[node("renderD128", None)], &[]).ok);
    }

    #[test]
    fn intel_gpu_needs_xe_or_i915_bound() {
        let v = intel_gpu_verdict(&[node("renderD128", Some("0x8086"))], &[]);
        assert!(v.detail.contains("driver xe"), "{}", v.detail);
        let i915 = driven("renderD128", Some("0x8086"), Some("i915"));
        assert!(intel_gpu_verdict(&[i915], &[]).ok);
        // The driver link is unreadable in some containers: the node still counts.
        let unknown = driven("renderD128", Some("0x8086"), None);
        let v = intel_gpu_verdict(&[unknown], &[]);
        assert!(v.ok && v.detail.contains("driver unknown"), "{}", v.detail);
        let other = driven("renderD128", Some("0x8086"), Some("simpledrm"));
        let v = intel_gpu_verdict(&[other], &[]);
        assert!(!v.ok);
        assert!(v.detail.contains("renderD128 → simpledrm"), "{}", v.detail);
    }

    #[test]
    fn an_intel_gpu_without_a_driver_is_named_with_the_fix() {
        // No render node at all, or only another vendor's: the PCI bus tells why.
        for nodes in [vec![], vec![node("renderD128", Some("0x10de"))]] {
            let v = intel_gpu_verdict(&nodes, &[gpu("0000:03:00.0", None)]);
            assert!(!v.ok);
            assert!(
                v.detail.contains("0000:03:00.0 (device 0xe20b)")
                    && v.detail.contains("no kernel driver is bound")
                    && v.detail.contains("sudo modprobe xe")
                    && v.detail.contains("xe.force_probe=e20b"),
                "{}",
                v.detail
            );
        }
        let v = intel_gpu_verdict(&[], &[gpu("0000:03:00.0", Some("xe"))]);
        assert!(
            !v.ok && v.detail.contains("--device /dev/dri"),
            "{}",
            v.detail
        );
        let v = intel_gpu_verdict(&[], &[gpu("0000:03:00.0", Some("vfio-pci"))]);
        assert!(!v.ok && v.detail.contains("→ vfio-pci"), "{}", v.detail);
    }

    /// A host described by its sysfs files, links and directories.
    #[derive(Default)]
    struct Sysfs {
        files: std::collections::BTreeMap<PathBuf, String>,
        links: std::collections::BTreeMap<PathBuf, PathBuf>,
        dirs: std::collections::BTreeMap<PathBuf, Vec<String>>,
    }

    impl Probe for Sysfs {
        fn find_binary(&self, _: &str) -> Option<PathBuf> {
            None
        }
        fn run(
            &self,
            command: &ProbeRequest,
        ) -> Result<crate::model::probe::ProbeOutput, ProbeError> {
            Err(ProbeError::Spawn {
                command: command.shown(),
                message: "no commands here".into(),
            })
        }
        fn read_text(&self, path: &Path) -> Option<String> {
            self.files.get(path).cloned()
        }
        fn write_text(&self, _: &Path, _: &str) -> bool {
            false
        }
        fn list_dir(&self, path: &Path) -> Vec<String> {
            self.dirs.get(path).cloned().unwrap_or_default()
        }
        fn read_link(&self, path: &Path) -> Option<PathBuf> {
            self.links.get(path).cloned()
        }
        fn env_var(&self, _: &str) -> Option<String> {
            None
        }
        fn is_root(&self) -> bool {
            false
        }
        fn host_os(&self) -> &str {
            "linux"
        }
    }

    #[test]
    fn the_probes_read_the_driver_links_and_the_pci_bus() {
        let mut host = Sysfs::default();
        host.dirs
            .insert("/dev/dri".into(), vec!["card0".into(), "renderD128".into()]);
        host.files.insert(
            "/sys/class/drm/renderD128/device/vendor".into(),
            "0x8086\n".into(),
        );
        host.links.insert(
            "/sys/class/drm/renderD128/device/driver".into(),
            "../../../../bus/pci/drivers/xe".into(),
        );
        let nodes = render_nodes(&host);
        assert_eq!(nodes[0].driver.as_deref(), Some("xe"));
        assert!(intel_gpu_verdict(&nodes, &intel_pci_gpus(&host)).ok);

        // A Battlemage card no driver took: no render node, one Intel display function.
        let mut bare = Sysfs::default();
        bare.dirs.insert(
            PCI_SYSFS.into(),
            vec!["0000:00:00.0".into(), "0000:03:00.0".into()],
        );
        let pci = |a: &str, f: &str| PathBuf::from(PCI_SYSFS).join(a).join(f);
        for (address, class) in [("0000:00:00.0", "0x060000"), ("0000:03:00.0", "0x030000")] {
            bare.files.insert(pci(address, "vendor"), "0x8086\n".into());
            bare.files
                .insert(pci(address, "class"), format!("{class}\n"));
            bare.files.insert(pci(address, "device"), "0xe20b\n".into());
        }
        bare.links.insert(
            pci("0000:00:00.0", "driver"),
            "../drivers/skl_uncore".into(),
        );
        let gpus = intel_pci_gpus(&bare);
        assert_eq!(
            gpus,
            [PciGpu {
                address: "0000:03:00.0".into(),
                device_id: Some("0xe20b".into()),
                driver: None
            }]
        );
        let p = intel_preflight(&bare, "unitrace", "unitrace", "install it").finish();
        assert!(!p.available);
        let gpu = p.checks.iter().find(|c| c.name == "gpu").unwrap();
        assert!(
            gpu.detail.contains("no kernel driver is bound"),
            "{}",
            gpu.detail
        );
    }

    #[test]
    fn kptr_restrict_decision() {
        assert!(kptr_restrict_verdict(Some("0\n"), false).ok);
        assert!(kptr_restrict_verdict(Some("1"), true).ok);
        let v = kptr_restrict_verdict(Some("1"), false);
        assert!(!v.ok);
        assert!(v.detail.contains("sudo sysctl -w kernel.kptr_restrict=0"));
        assert!(!kptr_restrict_verdict(None, false).ok);
    }

    #[test]
    fn macos_decision() {
        assert!(macos_verdict("macos").ok);
        let v = macos_verdict("linux");
        assert!(!v.ok);
        assert!(
            v.detail
                .contains("needs macOS with Xcode command line tools (xcrun)")
        );
        assert!(v.detail.contains("linux"));
    }

    #[test]
    fn binary_and_version_verdicts() {
        let v = binary_verdict("vtune", None, "source setvars.sh");
        assert!(!v.ok && v.detail.contains("source setvars.sh"));
        assert!(binary_verdict("vtune", Some(Path::new("/opt/vtune")), "").ok);
        assert!(version_verdict("vtune", &Ok("2025.0".into())).ok);
        let timed_out = VersionError::Probe(ProbeError::TimedOut {
            command: "vtune --version".into(),
            timeout: Duration::from_secs(10),
        });
        let v = version_verdict("vtune", &Err(timed_out));
        assert!(
            !v.ok && v.detail.contains("did not answer within 10s"),
            "{}",
            v.detail
        );
    }
}
