//! Paths read from an index or a run document (a batch entry's `run_dir` and `passes`) name
//! places under their root. A crafted document must not reach outside it: `../x`, an absolute
//! path, or a symbolic link inside the root that leads out would make `report` write another
//! run's `report.html`, or a resume trust another folder's results.

use std::path::{Component, Path, PathBuf};

/// Why a path from a document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{path}` in {document} leaves its root `{root}` ({why}); a path there is relative, \
     without `..`, and stays under the root"
)]
pub struct OutsideRoot {
    pub path: String,
    pub document: String,
    pub root: PathBuf,
    pub why: &'static str,
}

/// `root` joined with `relative` when `relative` is a plain relative path (no `..`, no root,
/// no drive) and, where both exist, the joined path's real location is under the root's (no
/// link inside leads out). `document` names where the path was read, for the error.
pub fn resolve(root: &Path, relative: &str, document: &str) -> Result<PathBuf, OutsideRoot> {
    let refuse = |why| OutsideRoot {
        path: relative.to_string(),
        document: document.to_string(),
        root: root.to_path_buf(),
        why,
    };
    let path = Path::new(relative);
    if relative.is_empty() {
        return Err(refuse("it is empty"));
    }
    for component in path.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Err(refuse("it climbs with `..`")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse("it is an absolute path"));
            }
        }
    }
    let joined = root.join(path);
    if let (Ok(real_root), Ok(real)) = (root.canonicalize(), joined.canonicalize())
        && !real.starts_with(&real_root)
    {
        return Err(refuse("a symbolic link inside the root leads out of it"));
    }
    Ok(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_under_the_root_resolve_and_others_are_refused() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("runs/j1")).unwrap();
        assert_eq!(
            resolve(root.path(), "runs/j1", "batch.json").unwrap(),
            root.path().join("runs/j1")
        );
        for bad in ["../x", "runs/../../x", "/etc", ""] {
            let error = resolve(root.path(), bad, "batch.json").unwrap_err();
            assert!(error.to_string().contains("batch.json"), "{error}");
        }
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(outside.path(), root.path().join("runs/out")).unwrap();
            let error = resolve(root.path(), "runs/out", "batch.json").unwrap_err();
            assert!(error.to_string().contains("symbolic link"), "{error}");
        }
    }
}
