//! The one list of backends: name, vendor, constructor and whether a parser exists. Selection,
//! `create`, `doctor`, `wrap` and `parse --profiler` all read it. Adding a vendor adds a line
//! here (and its folder, its `configs/selection.toml` rows and fixtures).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::backend::Backend;
use super::capability::{Capabilities, Capability, CapabilityError};
pub use super::settings::SettingsKind;
use super::{ProfilerSettings, metal, ncu, none, rocprofv3, unitrace, vtune};
use crate::model::error::{Error, Result};

/// A GPU vendor; it decides which profilers can work on an arch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    Nvidia,
    Intel,
    Amd,
    Apple,
}

impl Vendor {
    pub const ALL: [Vendor; 4] = [Vendor::Nvidia, Vendor::Intel, Vendor::Amd, Vendor::Apple];

    /// The lowercase key used in the table and in JSON.
    pub fn key(self) -> &'static str {
        match self {
            Vendor::Nvidia => "nvidia",
            Vendor::Intel => "intel",
            Vendor::Amd => "amd",
            Vendor::Apple => "apple",
        }
    }
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Vendor::Nvidia => "NVIDIA",
            Vendor::Intel => "Intel",
            Vendor::Amd => "AMD",
            Vendor::Apple => "Apple",
        })
    }
}

/// One registered backend.
#[derive(Clone, Copy)]
pub struct BackendEntry {
    /// Stable name (`ncu`, `unitrace`, …).
    pub name: &'static str,
    /// The vendor whose GPUs it profiles; `None` for the built-in pass-through.
    pub vendor: Option<Vendor>,
    /// One line for tables and help.
    pub summary: &'static str,
    /// Its own settings in [`ProfilerSettings`] (and whether a pass has a variant).
    pub settings: SettingsKind,
    /// Whether [`Backend::parse`] turns its output into kernel records yet (else it keeps the
    /// raw files only).
    pub parses_kernels: bool,
    /// Build the backend writing into `output_dir`.
    pub create: fn(PathBuf, &ProfilerSettings) -> Result<Box<dyn Backend>>,
    /// What it can do besides profiling a command (`profilers::capability`).
    pub capabilities: Capabilities,
}

impl fmt::Debug for BackendEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendEntry")
            .field("name", &self.name)
            .field("vendor", &self.vendor)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

/// Every backend, the built-in `none` first, then the vendors in display order.
pub const BACKENDS: &[BackendEntry] = &[
    BackendEntry {
        name: "none",
        vendor: None,
        summary: "the command as is (outcome, timings, output)",
        settings: SettingsKind::Shared,
        parses_kernels: false,
        create: |dir, settings| Ok(Box::new(none::NoProfiler::new(dir, settings))),
        capabilities: Capabilities::NONE,
    },
    BackendEntry {
        name: "ncu",
        vendor: Some(Vendor::Nvidia),
        summary: "NVIDIA Nsight Compute",
        settings: SettingsKind::Ncu,
        parses_kernels: true,
        create: |dir, settings| Ok(Box::new(ncu::Ncu::new(dir, settings)?)),
        capabilities: ncu::capabilities::CAPABILITIES,
    },
    BackendEntry {
        name: "unitrace",
        vendor: Some(Vendor::Intel),
        summary: "Intel Unitrace (Level Zero)",
        settings: SettingsKind::Unitrace,
        parses_kernels: true,
        create: |dir, settings| Ok(Box::new(unitrace::Unitrace::new(dir, settings))),
        capabilities: Capabilities::NONE,
    },
    BackendEntry {
        name: "ocl-unitrace",
        vendor: Some(Vendor::Intel),
        summary: "Intel Unitrace (OpenCL)",
        settings: SettingsKind::Unitrace,
        parses_kernels: true,
        create: |dir, settings| Ok(Box::new(unitrace::Unitrace::opencl(dir, settings))),
        capabilities: Capabilities::NONE,
    },
    BackendEntry {
        name: "vtune",
        vendor: Some(Vendor::Intel),
        summary: "Intel VTune GPU hotspots",
        settings: SettingsKind::Shared,
        parses_kernels: true,
        create: |dir, settings| Ok(Box::new(vtune::Vtune::new(dir, settings))),
        capabilities: Capabilities::NONE,
    },
    BackendEntry {
        name: "metal",
        vendor: Some(Vendor::Apple),
        summary: "Apple Metal through xctrace",
        settings: SettingsKind::Shared,
        parses_kernels: true,
        create: |dir, settings| Ok(Box::new(metal::Metal::new(dir, settings))),
        capabilities: Capabilities::NONE,
    },
    BackendEntry {
        name: "rocprofv3",
        vendor: Some(Vendor::Amd),
        summary: "AMD rocprofv3 (ROCprofiler-SDK)",
        // Its variant (selection's `metric_group`) is the counter set: `trace`, `roofline`
        // or `pmc:A,B;C`.
        settings: SettingsKind::Rocprofv3,
        parses_kernels: true,
        create: |dir, settings| Ok(Box::new(rocprofv3::Rocprofv3::new(dir, settings)?)),
        capabilities: Capabilities::NONE,
    },
];

/// How many vendor backends there are (all but `none`).
pub const VENDOR_BACKENDS: usize = BACKENDS.len() - 1;

/// The vendor backends' names, in display order.
pub const PROFILER_NAMES: [&str; VENDOR_BACKENDS] = vendor_names();

const fn vendor_names() -> [&'static str; VENDOR_BACKENDS] {
    let mut names = [""; VENDOR_BACKENDS];
    let mut i = 0;
    while i < VENDOR_BACKENDS {
        names[i] = BACKENDS[i + 1].name;
        i += 1;
    }
    names
}

/// The entry named `name` (case and surrounding space ignored).
pub fn find(name: &str) -> Option<&'static BackendEntry> {
    let name = name.trim();
    BACKENDS.iter().find(|b| b.name.eq_ignore_ascii_case(name))
}

/// The entry named `name`, or the error listing every valid name.
pub fn lookup(name: &str) -> Result<&'static BackendEntry> {
    find(name).ok_or_else(|| Error::UnknownValue {
        what: "profiler",
        value: name.to_string(),
        valid: BACKENDS
            .iter()
            .map(|b| b.name)
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Build a backend by name, writing into `output_dir`.
pub fn create(
    name: &str,
    output_dir: &Path,
    settings: &ProfilerSettings,
) -> Result<Box<dyn Backend>> {
    (lookup(name)?.create)(output_dir.to_path_buf(), settings)
}

/// The capabilities of the backend named `name`.
pub fn capabilities(name: &str) -> Result<Capabilities> {
    Ok(lookup(name)?.capabilities)
}

/// One capability of the backend named `profiler`, or why it has none (naming those that have
/// it). `Ok(Err(_))`: the profiler exists, the capability does not.
pub fn capability<T: ?Sized + 'static>(
    profiler: &str,
    capability: Capability,
    pick: fn(&Capabilities) -> Option<&'static T>,
) -> Result<std::result::Result<&'static T, CapabilityError>> {
    let entry = lookup(profiler)?;
    Ok(
        pick(&entry.capabilities).ok_or_else(|| CapabilityError::Missing {
            profiler: entry.name.to_string(),
            capability,
            offered_by: offering(pick),
        }),
    )
}

/// The names of the backends that have the capability `pick` picks, in display order.
pub fn offering<T: ?Sized + 'static>(
    pick: fn(&Capabilities) -> Option<&'static T>,
) -> Vec<&'static str> {
    BACKENDS
        .iter()
        .filter(|b| pick(&b.capabilities).is_some())
        .map(|b| b.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_none_comes_first() {
        assert_eq!(BACKENDS[0].name, "none");
        let mut names: Vec<&str> = BACKENDS.iter().map(|b| b.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), BACKENDS.len());
        assert!(BACKENDS[1..].iter().all(|b| b.vendor.is_some()));
    }

    #[test]
    fn every_entry_builds_a_backend_of_its_own_name() {
        for entry in BACKENDS {
            let backend = (entry.create)(PathBuf::from("/out"), &ProfilerSettings::default())
                .unwrap_or_else(|e| panic!("{}: {e}", entry.name));
            assert_eq!(backend.name(), entry.name);
        }
        let err = create("nsys", Path::new("/out"), &ProfilerSettings::default()).unwrap_err();
        assert!(err.to_string().contains("none, ncu, unitrace"), "{err}");
    }

    #[test]
    fn a_backend_without_a_capability_says_so_and_names_those_that_have_it() {
        let fingerprint = |c: &Capabilities| c.fingerprint;
        assert!(
            capability("ncu", Capability::Fingerprint, fingerprint)
                .unwrap()
                .is_ok()
        );
        let missing = capability("rocprofv3", Capability::Fingerprint, fingerprint)
            .unwrap()
            .err()
            .unwrap();
        assert_eq!(
            missing.to_string(),
            "`rocprofv3` has no fingerprint pass capability; use a profiler that has it (`ncu`)"
        );
        assert!(capability("nsys", Capability::Calibration, |c| c.calibration).is_err());
        assert_eq!(offering(|c| c.calibration), ["ncu"]);
    }
}
