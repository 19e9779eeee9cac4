//! One candidate's build folder (docs/eval-harness.md, "The build stage"): where its build
//! caches point (`TORCH_EXTENSIONS_DIR`, `TRITON_CACHE_DIR`, `POLYPROF_BUILD_DIR`), the build
//! worker's confinement without any GPU node, and the folder's listing that tells whether the
//! judged import changed what the build left.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::pipeline::sandbox::Confinement;

/// The variables that point a worker's build caches into the build folder, with the
/// subfolder each gets.
const CACHES: [(&str, &str); 3] = [
    ("TORCH_EXTENSIONS_DIR", "torch_extensions"),
    ("TRITON_CACHE_DIR", "triton"),
    ("POLYPROF_BUILD_DIR", "own"),
];

/// Device files the build worker may still write: none of them is a GPU.
const HARMLESS_DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// `name=path` of each build cache beneath `dir`.
pub fn cache_env(dir: &Path) -> BTreeMap<String, String> {
    CACHES
        .iter()
        .map(|(name, sub)| (name.to_string(), dir.join(sub).display().to_string()))
        .collect()
}

/// The build worker's confinement: no GPU device node writable (the runtime cannot open one),
/// nor its own `/proc/<pid>` (only the CUDA driver needs that).
pub fn without_devices(confinement: &mut Confinement) {
    confinement
        .write
        .retain(|p| !p.starts_with("/dev") || HARMLESS_DEVICES.iter().any(|d| p == Path::new(d)));
    confinement.own_proc = false;
}

/// One candidate's build folder: private (0700), removed when dropped (after its judged turn).
#[derive(Debug)]
pub struct BuildDir {
    dir: tempfile::TempDir,
}

impl BuildDir {
    pub fn create() -> std::io::Result<BuildDir> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("polyprof-build-")
            .tempdir()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        for (_, sub) in CACHES {
            std::fs::create_dir_all(dir.path().join(sub))?;
        }
        Ok(BuildDir { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Every file beneath a folder: its size and modification time, by path (links not followed).
pub type Listing = BTreeMap<PathBuf, (u64, Option<SystemTime>)>;

pub fn listing(dir: &Path) -> Listing {
    let mut files = Listing::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                files.insert(entry.path(), (meta.len(), meta.modified().ok()));
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::sandbox::Limits;

    #[test]
    fn the_build_worker_may_write_no_gpu_node() {
        let mut confinement = Confinement {
            abi: 6,
            read: vec!["/usr".into()],
            write: vec![
                "/tmp/scratch".into(),
                "/dev/null".into(),
                "/dev/nvidia0".into(),
                "/dev/nvidiactl".into(),
                "/dev/shm".into(),
                "/dev/dri".into(),
            ],
            limits: Limits::default(),
            profiler_ipc: false,
            own_proc: true,
        };
        without_devices(&mut confinement);
        assert_eq!(
            confinement.write,
            [PathBuf::from("/tmp/scratch"), PathBuf::from("/dev/null")]
        );
        assert!(!confinement.own_proc);
    }

    #[test]
    fn the_caches_point_into_the_build_folder_and_a_change_there_is_seen() {
        let built = BuildDir::create().unwrap();
        let env = cache_env(built.path());
        assert_eq!(env.len(), 3);
        for value in env.values() {
            assert!(Path::new(value).starts_with(built.path()), "{value}");
            assert!(Path::new(value).is_dir(), "{value}");
        }
        let before = listing(built.path());
        assert!(before.is_empty());
        std::fs::write(Path::new(&env["POLYPROF_BUILD_DIR"]).join("lib.so"), "x").unwrap();
        let after = listing(built.path());
        assert_eq!(after.len(), 1);
        assert_ne!(before, after);
    }
}
