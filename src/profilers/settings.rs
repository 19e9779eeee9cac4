//! What shapes a profiler when it is built: the settings every backend shares (extra arguments,
//! end marker, graces) and each backend's own typed settings, defined in its folder
//! (`ncu::NcuOptions`, `unitrace::UnitraceSettings`, `rocprofv3::Rocprofv3Settings`). The
//! registry says which one a backend reads ([`SettingsKind`]).
//!
//! The JSON form is the one written before the split, so Python callers, selection answers and
//! saved options keep working: `ncu` is an object, and one top-level `metric_group` is a pass's
//! variant (Unitrace's metric group, rocprofv3's counter set). Read, it fills both backends'
//! fields (each reads only its own); written, it is whichever is set.

use serde::{Deserialize, Serialize};

use super::{EndMarker, Graces, ncu, rocprofv3, unitrace};

/// Options that shape how a profiler is built (from selection, CLI flags or the API).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "SettingsWire", into = "SettingsWire")]
pub struct ProfilerSettings {
    /// Nsight Compute's own settings.
    pub ncu: ncu::NcuOptions,
    /// Unitrace's own settings (Level Zero and OpenCL).
    pub unitrace: unitrace::UnitraceSettings,
    /// rocprofv3's own settings.
    pub rocprofv3: rocprofv3::Rocprofv3Settings,
    /// Extra arguments passed to the profiler verbatim, before the target (escape hatch).
    pub extra_args: Vec<String>,
    /// Override of the profiler's end marker.
    pub end_marker: Option<EndMarker>,
    /// Override of the profiler's graces.
    pub graces: Option<Graces>,
}

/// Backend settings laid over a pass's own by a caller that knows no vendor (a batch job's
/// `ncu` key): each backend's settings given here replace that backend's whole. Serialized,
/// each backend is one key named after it, so a job file keeps `"ncu": {…}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BackendOverrides {
    /// Nsight Compute's settings (`preset`, `kernel_name`, `launch_count`, `clock_control`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ncu: Option<ncu::NcuOptions>,
}

impl BackendOverrides {
    /// The keys these overrides take, one per backend with settings of its own.
    pub const KEYS: [&'static str; 1] = ["ncu"];

    /// `settings` with every backend given here replaced.
    pub fn lay_over(&self, settings: &mut ProfilerSettings) {
        if let Some(ncu) = &self.ncu {
            settings.ncu = ncu.clone();
        }
    }
}

/// Which backend's own settings a backend reads from [`ProfilerSettings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsKind {
    /// Only the shared ones (extra arguments, end marker, graces).
    Shared,
    /// [`ProfilerSettings::ncu`].
    Ncu,
    /// [`ProfilerSettings::unitrace`]: its variant is the metric group.
    Unitrace,
    /// [`ProfilerSettings::rocprofv3`]: its variant is the counter set.
    Rocprofv3,
}

impl SettingsKind {
    /// Whether a pass of this backend has a variant (selection's `metric_group`, `wrap --group`).
    pub fn has_variant(self) -> bool {
        matches!(self, SettingsKind::Unitrace | SettingsKind::Rocprofv3)
    }

    /// The pass's variant as `settings` hold it for this backend.
    pub fn variant(self, settings: &ProfilerSettings) -> Option<&str> {
        match self {
            SettingsKind::Unitrace => settings.unitrace.metric_group.as_deref(),
            SettingsKind::Rocprofv3 => settings.rocprofv3.counters.as_deref(),
            SettingsKind::Shared | SettingsKind::Ncu => None,
        }
    }

    /// Set the pass's variant in this backend's own settings (nothing for backends without).
    pub fn set_variant(self, settings: &mut ProfilerSettings, variant: Option<String>) {
        match self {
            SettingsKind::Unitrace => settings.unitrace.metric_group = variant,
            SettingsKind::Rocprofv3 => settings.rocprofv3.counters = variant,
            SettingsKind::Shared | SettingsKind::Ncu => {}
        }
    }
}

/// The persisted form (unchanged from before the per-backend split).
#[derive(Default, Serialize, Deserialize)]
struct SettingsWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metric_group: Option<String>,
    #[serde(default)]
    ncu: ncu::NcuOptions,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    extra_args: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end_marker: Option<EndMarker>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    graces: Option<Graces>,
}

impl From<SettingsWire> for ProfilerSettings {
    fn from(wire: SettingsWire) -> Self {
        ProfilerSettings {
            ncu: wire.ncu,
            unitrace: unitrace::UnitraceSettings {
                metric_group: wire.metric_group.clone(),
            },
            rocprofv3: rocprofv3::Rocprofv3Settings {
                counters: wire.metric_group,
            },
            extra_args: wire.extra_args,
            end_marker: wire.end_marker,
            graces: wire.graces,
        }
    }
}

impl From<ProfilerSettings> for SettingsWire {
    fn from(settings: ProfilerSettings) -> Self {
        SettingsWire {
            metric_group: settings
                .unitrace
                .metric_group
                .or(settings.rocprofv3.counters),
            ncu: settings.ncu,
            extra_args: settings.extra_args,
            end_marker: settings.end_marker,
            graces: settings.graces,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_form_is_the_one_before_the_split() {
        let settings: ProfilerSettings = serde_json::from_str(
            r#"{"metric_group": "MemoryProfile", "extra_args": ["-q"], "ncu": {"binary": "ncu2"}}"#,
        )
        .unwrap();
        assert_eq!(
            SettingsKind::Unitrace.variant(&settings),
            Some("MemoryProfile")
        );
        assert_eq!(
            SettingsKind::Rocprofv3.variant(&settings),
            Some("MemoryProfile")
        );
        assert_eq!(settings.ncu.binary, "ncu2");
        let json = serde_json::to_value(&settings).unwrap();
        assert_eq!(json["metric_group"], "MemoryProfile");
        assert_eq!(json["extra_args"], serde_json::json!(["-q"]));

        // Set through one backend, written as the one key.
        let mut own = ProfilerSettings::default();
        SettingsKind::Rocprofv3.set_variant(&mut own, Some("roofline".into()));
        assert_eq!(SettingsKind::Unitrace.variant(&own), None);
        assert_eq!(
            serde_json::to_value(&own).unwrap()["metric_group"],
            "roofline"
        );
        assert!(
            serde_json::to_value(ProfilerSettings::default())
                .unwrap()
                .get("metric_group")
                .is_none()
        );
    }

    #[test]
    fn overrides_replace_only_the_backends_given() {
        let mut settings = ProfilerSettings {
            extra_args: vec!["-q".into()],
            ..Default::default()
        };
        BackendOverrides::default().lay_over(&mut settings);
        assert_eq!(settings.extra_args, vec!["-q".to_string()]);
        let overrides: BackendOverrides =
            serde_json::from_str(r#"{"ncu": {"launch_count": 3}}"#).unwrap();
        overrides.lay_over(&mut settings);
        assert_eq!(settings.ncu.launch_count, Some(3));
        assert_eq!(settings.extra_args, vec!["-q".to_string()]);
        assert_eq!(
            serde_json::to_value(&overrides).unwrap()["ncu"]["launch_count"],
            3
        );
        let every = BackendOverrides {
            ncu: Some(Default::default()),
        };
        let keys: Vec<String> = serde_json::to_value(every)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, BackendOverrides::KEYS);
    }

    #[test]
    fn only_backends_with_variants_take_one() {
        let mut settings = ProfilerSettings::default();
        SettingsKind::Ncu.set_variant(&mut settings, Some("x".into()));
        assert_eq!(settings, ProfilerSettings::default());
        assert!(!SettingsKind::Shared.has_variant());
        assert!(SettingsKind::Unitrace.has_variant());
    }
}
