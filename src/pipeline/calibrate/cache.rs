//! The calibration cache: one JSON document per device, driver and profiler version under
//! `$XDG_CACHE_HOME/polyprof/calibration/` (else `~/.cache/polyprof/calibration/`), beside the
//! ncu metric catalogs. Written atomically under a lock; read back only for the same device,
//! driver and tool, compared from the document itself (never from its file name), so a driver
//! or ncu upgrade, or another GPU, is never served an old calibration.

use std::path::{Path, PathBuf};

use super::error::CalibrateError;
use crate::model::atomic_file::write_atomic;
use crate::model::calibration::Calibration;
use crate::pipeline::lock::{HeldLock, try_lock};

pub use crate::pipeline::config::CALIBRATION_DIR;
/// Work directories (sources, program, profiler runs), one per key, under the cache folder.
pub const WORK_DIR: &str = "measurements";

/// The configured `cache_dir` (`polyprof config`), else `$XDG_CACHE_HOME/polyprof/calibration`,
/// else `$HOME/.cache/polyprof/calibration`.
pub fn default_dir() -> Option<PathBuf> {
    match crate::pipeline::config::Config::load() {
        Ok(config) => {
            if let Some(dir) = config.cache_dir.value {
                return Some(dir);
            }
        }
        // `calibrate` itself reports a bad configuration; the eval's lookup goes on without it.
        Err(e) => tracing::warn!("the calibration cache's folder ignores the configuration: {e}"),
    }
    crate::pipeline::config::default_cache_dir()
}

/// The file-name key of a calibration: `<uuid or name>--<driver>--<tool>`, safe characters only.
pub fn key(device: &str, driver: &str, tool: &str) -> String {
    let clean = |text: &str| -> String {
        text.trim()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{}--{}--{}", clean(device), clean(driver), clean(tool))
}

/// The document's path for a calibration in `dir`.
pub fn path_of(dir: &Path, calibration: &Calibration) -> PathBuf {
    let device = calibration
        .device_uuid
        .as_deref()
        .unwrap_or(&calibration.device_name);
    let driver = calibration.driver.as_deref().unwrap_or("unknown-driver");
    dir.join(format!("{}.json", key(device, driver, &calibration.tool)))
}

/// Whether `calibration` is of this device (its UUID, or its name when the caller knows no
/// UUID), this driver and this tool.
pub fn matches(calibration: &Calibration, device: &str, driver: &str, tool: &str) -> bool {
    let device = device.trim();
    let same_device = calibration
        .device_uuid
        .as_deref()
        .is_some_and(|uuid| uuid.eq_ignore_ascii_case(device))
        || calibration.device_name == device;
    same_device && calibration.driver.as_deref() == Some(driver.trim()) && calibration.tool == tool
}

/// The newest calibration in `dir` of `device` (UUID or name), `driver` and `tool`
/// (`ncu 2025.3.1.0`), with `path` set to its document; `None` when there is none. Documents
/// that cannot be read are passed over.
pub fn lookup_in(dir: &Path, device: &str, driver: &str, tool: &str) -> Option<Calibration> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut best: Option<Calibration> = None;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        // A FIFO named like a document would hang the eval's lookup: regular files only.
        let Ok(bytes) = crate::pipeline::regular_file::read_regular(&path) else {
            continue;
        };
        let Ok(mut calibration) = serde_json::from_slice::<Calibration>(&bytes) else {
            tracing::debug!(path = %path.display(), "not a calibration document; passed over");
            continue;
        };
        if !matches(&calibration, device, driver, tool) {
            continue;
        }
        if best
            .as_ref()
            .is_none_or(|b| calibration.created_unix_s > b.created_unix_s)
        {
            calibration.path = Some(path.display().to_string());
            best = Some(calibration);
        }
    }
    best
}

/// The calibration polyprof cached for this device, driver and tool (in the default cache
/// directory); `None` when none was made or no cache directory is known. For the eval harness:
/// `device` is the GPU's UUID (`GPU-…`, as nvidia-smi prints it) or, without one, its name
/// (`NVIDIA H200`); `driver` nvidia-smi's `driver_version` (`580.95.05`); `tool` the profiler
/// and its version as the evidence's `witness_tool` writes it (`ncu 2025.3.1.0`).
pub fn lookup(device: &str, driver: &str, tool: &str) -> Option<Calibration> {
    lookup_in(&default_dir()?, device, driver, tool)
}

/// Take the lock of one calibration key in `dir` (created if missing): one calibration of a
/// device, driver and tool at a time.
pub fn lock(dir: &Path, key: &str) -> Result<HeldLock, CalibrateError> {
    std::fs::create_dir_all(dir).map_err(|e| CalibrateError::Cache {
        action: "create the calibration cache",
        path: dir.to_path_buf(),
        source: e,
    })?;
    Ok(try_lock(
        &dir.join(format!(".{key}.lock")),
        "calibration",
        dir,
    )?)
}

/// Write `calibration` into `dir` (atomically; the caller holds the key's [`lock`]); its path.
pub fn store(dir: &Path, calibration: &Calibration) -> Result<PathBuf, CalibrateError> {
    let path = path_of(dir, calibration);
    let mut document = calibration.clone();
    // The path is where it was read from, set on reading; the document does not carry it.
    document.path = None;
    let mut text = serde_json::to_vec_pretty(&document).map_err(|e| CalibrateError::Cache {
        action: "serialize the calibration",
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    text.push(b'\n');
    write_atomic(&path, &text).map_err(|e| CalibrateError::Cache {
        action: "write the calibration",
        path: path.clone(),
        source: e,
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::calibration::{CalibratedQuantity, CalibrationCheck};

    fn calibration(uuid: Option<&str>, driver: &str, tool: &str, created: u64) -> Calibration {
        Calibration {
            device_name: "NVIDIA H200".into(),
            device_uuid: uuid.map(str::to_string),
            driver: Some(driver.into()),
            tool: tool.into(),
            created_unix_s: created,
            path: None,
            launch_floor_ns: Some(1800.0),
            checks: vec![CalibrationCheck {
                kernel: "copy".into(),
                quantity: CalibratedQuantity::DramBytesRead,
                expected: 1e9,
                measured: Some(1.001e9),
                measured_upper: None,
                duration_ns: Some(3e5),
                share_of_peak: Some(0.7),
            }],
        }
    }

    const UUID: &str = "GPU-4f3c2a1b-0000-1111-2222-333344445555";
    const TOOL: &str = "ncu 2025.3.1.0";

    #[test]
    fn a_calibration_is_served_only_to_its_device_driver_and_tool() {
        let dir = tempfile::tempdir().unwrap();
        let stored = calibration(Some(UUID), "580.95.05", TOOL, 100);
        let path = store(dir.path(), &stored).unwrap();
        assert_eq!(
            path.file_name().unwrap().to_str().unwrap(),
            "GPU-4f3c2a1b-0000-1111-2222-333344445555--580.95.05--ncu_2025.3.1.0.json"
        );
        let found = lookup_in(dir.path(), UUID, "580.95.05", TOOL).unwrap();
        assert_eq!(
            found.path.as_deref(),
            Some(path.display().to_string().as_str())
        );
        assert_eq!(
            Calibration {
                path: None,
                ..found
            },
            stored
        );
        // By name when the caller has no UUID; the UUID in either case.
        assert!(lookup_in(dir.path(), "NVIDIA H200", "580.95.05", TOOL).is_some());
        assert!(lookup_in(dir.path(), &UUID.to_lowercase(), "580.95.05", TOOL).is_some());
        // Another GPU, driver or ncu is never served it.
        let other = "GPU-00000000-0000-1111-2222-333344445555";
        assert!(lookup_in(dir.path(), other, "580.95.05", TOOL).is_none());
        assert!(lookup_in(dir.path(), UUID, "580.105.08", TOOL).is_none());
        assert!(lookup_in(dir.path(), UUID, "580.95.05", "ncu 2025.4.0.0").is_none());
        assert!(lookup_in(dir.path(), "NVIDIA H100", "580.95.05", TOOL).is_none());
        // A missing directory is no calibration, not an error.
        assert!(lookup_in(&dir.path().join("none"), UUID, "580.95.05", TOOL).is_none());
        // A FIFO named like a document is passed over at once, not waited on.
        let fifo = dir.path().join("a-fifo.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(lookup_in(dir.path(), UUID, "580.95.05", TOOL).is_some());
    }

    #[test]
    fn the_document_decides_not_its_file_name_and_the_newest_wins() {
        let dir = tempfile::tempdir().unwrap();
        // A document renamed to another key still says which driver it is of.
        let old_driver = calibration(Some(UUID), "550.54.15", TOOL, 300);
        let text = serde_json::to_string(&old_driver).unwrap();
        std::fs::write(
            dir.path()
                .join(format!("{}.json", key(UUID, "580.95.05", TOOL))),
            text,
        )
        .unwrap();
        assert!(lookup_in(dir.path(), UUID, "580.95.05", TOOL).is_none());
        // Two of the same model by name: the newest.
        store(dir.path(), &calibration(Some(UUID), "580.95.05", TOOL, 100)).unwrap();
        let second = "GPU-99999999-0000-1111-2222-333344445555";
        store(
            dir.path(),
            &calibration(Some(second), "580.95.05", TOOL, 200),
        )
        .unwrap();
        let found = lookup_in(dir.path(), "NVIDIA H200", "580.95.05", TOOL).unwrap();
        assert_eq!(found.device_uuid.as_deref(), Some(second));
        // Junk beside them is passed over.
        std::fs::write(dir.path().join("junk.json"), "{").unwrap();
        assert!(lookup_in(dir.path(), UUID, "580.95.05", TOOL).is_some());
    }

    #[test]
    fn one_calibration_of_a_key_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock(dir.path(), "k").unwrap();
        let err = lock(dir.path(), "k").unwrap_err();
        assert!(err.to_string().contains("calibration"), "{err}");
        assert!(lock(dir.path(), "other").is_ok());
        drop(held);
        assert!(lock(dir.path(), "k").is_ok());
        assert_eq!(
            key("NVIDIA H200", "580.95.05", TOOL),
            "NVIDIA_H200--580.95.05--ncu_2025.3.1.0"
        );
    }
}
