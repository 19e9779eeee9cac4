//! Why the profile cache could not do what was asked, each with what to do about it.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ProfileCacheError {
    #[error(
        "no profile cache directory: neither XDG_CACHE_HOME nor HOME is set; pass --dir DIR \
         (or set cache_dir in polyprof.toml)"
    )]
    NoDir,
    #[error("{action} `{}`: {source}; check that the profile cache directory is writable (or name another with --dir)", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A directory that holds other files and no cache marker: never written into or cleared,
    /// so a mistyped `--dir` cannot lose someone's files.
    #[error(
        "`{}` is not a polyprof profile cache (it has files but no `{marker}`); name an empty or \
         new directory", path.display()
    )]
    NotACache { path: PathBuf, marker: &'static str },
    /// A cache written by a polyprof with another layout.
    #[error(
        "the profile cache `{}` has layout `{found}`, this polyprof writes `{expected}`; clear it \
         with the polyprof that made it, or remove the directory", path.display()
    )]
    Layout {
        path: PathBuf,
        found: String,
        expected: String,
    },
    /// The cache's writer lock stayed taken for longer than a writer waits.
    #[error(
        "the profile cache `{}` stayed locked for {waited_s} s by {holder}; wait for that process \
         to end (or stop it) and try again", path.display()
    )]
    Busy {
        path: PathBuf,
        holder: String,
        waited_s: u64,
    },
    #[error(
        "`{digest}` is not an entry's digest (hex, at least {min} characters, as `polyprof cache \
         list` prints it)"
    )]
    BadDigest { digest: String, min: usize },
    #[error("no entry's digest starts with `{prefix}`; `polyprof cache list` shows them")]
    NoSuchEntry { prefix: String },
    #[error("`{prefix}` starts {count} entries' digests; give more of the digest")]
    Ambiguous { prefix: String, count: usize },
    #[error("cannot serialize the entry for `{}`: {source}", path.display())]
    Serialize {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The lock helper failed for another reason than a live holder.
    #[error(transparent)]
    Lock(crate::model::error::Error),
}

pub type Result<T> = std::result::Result<T, ProfileCacheError>;
