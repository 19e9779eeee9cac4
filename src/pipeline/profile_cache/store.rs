//! The profile cache on disk: one JSON document per key at `<dir>/<2 hex>/<digest>.json`, the
//! digest being [`ProfileKey::digest`], and a `VERSION` file naming the layout.
//!
//! Readers take no lock: every document is written whole by `write_atomic`, so a reader sees an
//! old entry or a new one, never half of one. Everything that writes or removes (put,
//! invalidate, expire, clear) holds the directory's writer lock, so an `expire` that judged an
//! entry old never removes the fresh one a concurrent `put` just wrote over it. The lock is
//! `flock(2)`, so many processes (and hosts, where the filesystem supports it) share one cache.
//!
//! A hit needs the stored key to equal the asked key in full: the digest only places the file.
//! An entry is thus never served across a changed device, driver, tool, clock policy, metric
//! set or scope, even if a file was copied under another name.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, UNIX_EPOCH};

use serde::Serialize;

use super::error::{ProfileCacheError, Result};
use crate::model::atomic_file::write_atomic;
use crate::model::batch::now_unix_s;
use crate::model::profile_cache::{CacheEntry, ProfileKey};
use crate::pipeline::lock::{HeldLock, try_lock};

/// The layout this polyprof writes, in `VERSION`; a change of layout is a new text here.
pub const LAYOUT: &str = "polyprof profile cache 1";
/// The layout marker's file name.
pub const VERSION_FILE: &str = "VERSION";
/// The writers' lock file.
pub const LOCK_FILE: &str = ".polyprof-cache.lock";
/// The profile cache's folder under polyprof's cache root, and under a configured `cache_dir`.
pub const PROFILES_DIR: &str = "profiles";
/// How long a writer waits for the lock before giving up (writes hold it for milliseconds;
/// a `clear` of a large cache for longer).
const LOCK_WAIT: Duration = Duration::from_secs(60);
/// The shortest digest prefix `resolve` accepts.
pub const MIN_PREFIX: usize = 4;
const DIGEST_LEN: usize = 64;

/// A profile cache directory, opened (created and marked if new).
#[derive(Debug, Clone)]
pub struct ProfileCache {
    dir: PathBuf,
}

/// What `list` says of one entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntrySummary {
    pub digest: String,
    /// The record's short name (`matmul_tiled<32>`), else the fingerprint's symbol.
    pub kernel: String,
    /// The symbol as linked.
    pub function: String,
    pub device: String,
    pub driver: String,
    pub tool: String,
    pub metric_set: String,
    pub scope: String,
    pub profiled_unix_s: f64,
    /// What profiling it cost, seconds: what a hit saves.
    pub profile_s: f64,
    /// The entry's file size.
    pub bytes: u64,
    pub origin_run: String,
}

/// The cache's size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    pub entries: u64,
    pub bytes: u64,
}

/// A lookup's answer: the entry on a hit; on a miss, why an entry at the key's place was
/// discarded (corrupt, unreadable or of another key), for the caller to show.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Lookup {
    pub entry: Option<CacheEntry>,
    pub warning: Option<String>,
}

/// The configured `cache_dir` (`polyprof config`) with `profiles/` under it, else
/// `$XDG_CACHE_HOME/polyprof/profiles`, else `~/.cache/polyprof/profiles`.
pub fn default_dir() -> Result<PathBuf> {
    let configured = match crate::pipeline::config::Config::load() {
        Ok(config) => config.cache_dir.value,
        // The commands that read the configuration report it; the cache goes on without it.
        Err(e) => {
            tracing::warn!("the profile cache's folder ignores the configuration: {e}");
            None
        }
    };
    dir_for(
        configured.as_deref(),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
    )
    .ok_or(ProfileCacheError::NoDir)
}

/// [`default_dir`] from its inputs. A configured `cache_dir` gets a `profiles/` folder inside
/// it (beside calibration's `measurements/`), never one outside the folder the user named.
pub fn dir_for(
    configured: Option<&Path>,
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    if let Some(dir) = configured {
        return Some(dir.join(PROFILES_DIR));
    }
    let base = xdg_cache_home
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            home.filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("polyprof").join(PROFILES_DIR))
}

impl ProfileCache {
    /// Open the cache in `dir`, creating and marking it when it is new or empty. A directory
    /// with other files and no marker, or another layout's marker, is refused.
    pub fn open(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| io("create the profile cache", dir, e))?;
        let marker = dir.join(VERSION_FILE);
        match read_regular(&marker).map(|b| String::from_utf8_lossy(&b).into_owned()) {
            Ok(text) if text.trim() == LAYOUT => {}
            Ok(text) => {
                return Err(ProfileCacheError::Layout {
                    path: dir.to_path_buf(),
                    found: text.trim().to_string(),
                    expected: LAYOUT.to_string(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Another process may have marked it and stored an entry since the read above.
                let marked_since = || {
                    read_regular(&marker)
                        .is_ok_and(|b| String::from_utf8_lossy(&b).trim() == LAYOUT)
                };
                if !only_cache_files(dir)? && !marked_since() {
                    return Err(ProfileCacheError::NotACache {
                        path: dir.to_path_buf(),
                        marker: VERSION_FILE,
                    });
                }
                // Two processes opening a new cache at once each write the same marker.
                write_atomic(&marker, format!("{LAYOUT}\n").as_bytes())
                    .map_err(|e| io("mark the profile cache", &marker, e))?;
            }
            Err(e) => return Err(io("read the profile cache's marker", &marker, e)),
        }
        Ok(ProfileCache {
            dir: dir.to_path_buf(),
        })
    }

    /// A cache that exists and carries this layout's marker, for upkeep (`list`, `clear`,
    /// `expire`, `invalidate`); `None`, creating and marking nothing, when `dir` does not exist
    /// or holds nothing (at most what a writer opening it makes before its marker: the lock
    /// file, the marker's temporary file). A directory with anything else and no marker is
    /// refused: upkeep never marks a folder, so `clear` cannot take a folder of two-hex-digit
    /// folders (git objects, a hash store) for a cache and remove what is in it.
    pub fn open_existing(dir: &Path) -> Result<Option<Self>> {
        match std::fs::metadata(dir) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io("read the profile cache", dir, e)),
        }
        let marker = dir.join(VERSION_FILE);
        match read_regular(&marker).map(|b| String::from_utf8_lossy(&b).into_owned()) {
            Ok(text) if text.trim() == LAYOUT => Ok(Some(ProfileCache {
                dir: dir.to_path_buf(),
            })),
            Ok(text) => Err(ProfileCacheError::Layout {
                path: dir.to_path_buf(),
                found: text.trim().to_string(),
                expected: LAYOUT.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let read =
                    std::fs::read_dir(dir).map_err(|e| io("read the profile cache", dir, e))?;
                // What a writer opening a new cache makes before its marker is in place.
                let only_a_writers = read.flatten().all(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name == LOCK_FILE || name.starts_with(&format!(".{VERSION_FILE}."))
                });
                // That writer may have marked it, and stored entries, since the read above.
                let marked_since = read_regular(&marker)
                    .is_ok_and(|b| String::from_utf8_lossy(&b).trim() == LAYOUT);
                if marked_since {
                    Ok(Some(ProfileCache {
                        dir: dir.to_path_buf(),
                    }))
                } else if only_a_writers {
                    Ok(None)
                } else {
                    Err(ProfileCacheError::NotACache {
                        path: dir.to_path_buf(),
                        marker: VERSION_FILE,
                    })
                }
            }
            Err(e) => Err(io("read the profile cache's marker", &marker, e)),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the entry of `digest` lives.
    pub fn path_of(&self, digest: &str) -> PathBuf {
        let shard = digest.get(..2).unwrap_or("00");
        self.dir.join(shard).join(format!("{digest}.json"))
    }

    /// The entry of `key`, or `None`. A corrupt or unreadable entry, or one stored for another
    /// key, is a miss, logged as a warning and removed; [`lookup`](Self::lookup) hands the
    /// warning to the caller instead.
    pub fn get(&self, key: &ProfileKey) -> Result<Option<CacheEntry>> {
        let found = self.lookup(key)?;
        if let Some(warning) = &found.warning {
            tracing::warn!("{warning}");
        }
        Ok(found.entry)
    }

    /// The entry of `key` with, on a miss that discarded an entry, why.
    pub fn lookup(&self, key: &ProfileKey) -> Result<Lookup> {
        let path = self.path_of(&key.digest());
        let bytes = match read_regular(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lookup::default()),
            Err(e) => {
                // Still unreadable when re-read under the lock: removed like a corrupt one.
                let removed = self.discard(&path, &[]);
                return Ok(Lookup {
                    entry: None,
                    warning: Some(format!(
                        "the profile cache entry `{}` cannot be read ({e}); {removed}; \
                         profiling again",
                        path.display()
                    )),
                });
            }
        };
        let why = match serde_json::from_slice::<CacheEntry>(&bytes) {
            Ok(entry) if entry.key == *key => {
                return Ok(Lookup {
                    entry: Some(entry),
                    warning: None,
                });
            }
            Ok(_) => "it was stored for another key".to_string(),
            Err(e) => format!("it is not a cache entry: {e}"),
        };
        let removed = self.discard(&path, &bytes);
        Ok(Lookup {
            entry: None,
            warning: Some(format!(
                "the profile cache entry `{}` was not used ({why}); {removed}; profiling again",
                path.display()
            )),
        })
    }

    /// Remove a bad entry if it still holds `judged` and no writer is busy (a reader never
    /// waits; the next one tries again). What happened, for the warning.
    fn discard(&self, path: &Path, judged: &[u8]) -> String {
        let Ok(_lock) = try_lock(&self.dir.join(LOCK_FILE), "profile cache", &self.dir) else {
            return "left in place while a writer holds the cache".into();
        };
        // A writer may have replaced it with a good entry since it was read (an unreadable
        // one stays unreadable, so it is removed).
        if read_regular(path).is_ok_and(|now| now != judged) {
            return "left in place: it was rewritten meanwhile".into();
        }
        match std::fs::remove_file(path) {
            Ok(()) => "removed".into(),
            Err(e) => format!("could not be removed ({e})"),
        }
    }

    /// Store `entry` under its key (atomically, under the writer lock); its path.
    pub fn put(&self, entry: &CacheEntry) -> Result<PathBuf> {
        let path = self.path_of(&entry.key.digest());
        let mut bytes =
            serde_json::to_vec(entry).map_err(|source| ProfileCacheError::Serialize {
                path: path.clone(),
                source,
            })?;
        bytes.push(b'\n');
        let shard = path.parent().unwrap_or(&self.dir);
        // Under the lock: an `expire` or `clear` removes empty shards.
        let _lock = self.lock()?;
        std::fs::create_dir_all(shard).map_err(|e| io("create the cache shard", shard, e))?;
        write_atomic(&path, &bytes).map_err(|e| io("write the cache entry", &path, e))?;
        Ok(path)
    }

    /// Remove the entry of the full `digest`; whether there was one.
    pub fn invalidate(&self, digest: &str) -> Result<bool> {
        let digest = check_digest(digest, DIGEST_LEN)?;
        let path = self.path_of(&digest);
        let _lock = self.lock()?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io("remove the cache entry", &path, e)),
        }
    }

    /// The one stored digest that starts with `prefix` (at least [`MIN_PREFIX`] hex digits).
    pub fn resolve(&self, prefix: &str) -> Result<String> {
        let prefix = check_digest(prefix, MIN_PREFIX)?;
        let matches: Vec<String> = self
            .entry_files_in(&self.dir.join(&prefix[..2]))?
            .into_iter()
            .map(|(_, digest)| digest)
            .filter(|digest| digest.starts_with(&prefix))
            .collect();
        match matches.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(ProfileCacheError::NoSuchEntry { prefix }),
            _ => Err(ProfileCacheError::Ambiguous {
                prefix,
                count: matches.len(),
            }),
        }
    }

    /// Remove the entries profiled more than `older_than` ago (by the entry's own time; an
    /// unreadable one by its file's); how many.
    pub fn expire(&self, older_than: Duration) -> Result<u64> {
        let cutoff = now_unix_s() - older_than.as_secs_f64();
        let _lock = self.lock()?;
        let mut removed = 0;
        for (path, _) in self.entry_files()? {
            // A FIFO, link, device or folder named like an entry is not one polyprof wrote:
            // reported and left (an old FIFO's time would otherwise have it removed).
            if let Some(kind) = not_a_regular_file(&path) {
                tracing::warn!(
                    "`{}` is {kind}, not a profile cache entry; `cache expire` leaves it",
                    path.display()
                );
                continue;
            }
            let profiled = read_regular(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<CacheEntry>(&bytes).ok())
                .map(|entry| entry.profiled_unix_s)
                .or_else(|| modified_unix_s(&path));
            if profiled.is_some_and(|t| t < cutoff) && remove_entry(&path)? {
                removed += 1;
            }
        }
        self.remove_empty_shards();
        Ok(removed)
    }

    /// Remove every entry (and any temporary file a killed writer left); how many entries.
    /// Only files polyprof wrote go: an entry is a regular file holding a cache entry of its
    /// own digest; anything else in a shard stays, with a warning.
    pub fn clear(&self) -> Result<u64> {
        let _lock = self.lock()?;
        let mut removed = 0;
        for (path, digest) in self.entry_files()? {
            let own = read_regular(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<CacheEntry>(&bytes).ok())
                .is_some_and(|entry| entry.key.digest() == digest);
            if !own {
                tracing::warn!(
                    "`{}` is not a profile cache entry polyprof wrote; `cache clear` leaves \
                     it (`polyprof cache invalidate {digest}` removes it)",
                    path.display()
                );
                continue;
            }
            if remove_entry(&path)? {
                removed += 1;
            }
        }
        // Under the lock no writer is mid-write, so a temporary file is a dead writer's.
        for shard in self.shards()? {
            for file in std::fs::read_dir(&shard).into_iter().flatten().flatten() {
                let name = file.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') && name.ends_with(".tmp") {
                    let _ = std::fs::remove_file(file.path());
                }
            }
        }
        self.remove_empty_shards();
        Ok(removed)
    }

    /// Every readable entry, newest first; unreadable ones are logged and left out.
    pub fn list(&self) -> Result<Vec<EntrySummary>> {
        let mut summaries = Vec::new();
        for (path, digest) in self.entry_files()? {
            let read = read_regular(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| {
                    serde_json::from_slice::<CacheEntry>(&b)
                        .map(|entry| (entry, b.len() as u64))
                        .map_err(|e| e.to_string())
                });
            match read {
                Ok((entry, bytes)) => summaries.push(summary(digest, &entry, bytes)),
                Err(e) => tracing::warn!(
                    "the profile cache entry `{}` is not readable ({e}); `polyprof cache \
                     invalidate {digest}` removes it",
                    path.display()
                ),
            }
        }
        summaries.sort_by(|a, b| {
            b.profiled_unix_s
                .total_cmp(&a.profiled_unix_s)
                .then_with(|| a.digest.cmp(&b.digest))
        });
        Ok(summaries)
    }

    /// How many entry files there are and their bytes.
    pub fn stats(&self) -> Result<CacheStats> {
        let mut stats = CacheStats::default();
        for (path, _) in self.entry_files()? {
            if let Ok(meta) = std::fs::symlink_metadata(&path)
                && meta.is_file()
            {
                stats.entries += 1;
                stats.bytes += meta.len();
            }
        }
        Ok(stats)
    }

    /// Take the writer lock, waiting for another writer to finish.
    fn lock(&self) -> Result<HeldLock> {
        let file = self.dir.join(LOCK_FILE);
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match try_lock(&file, "profile cache", &self.dir) {
                Ok(held) => return Ok(held),
                Err(crate::model::error::Error::Busy { holder, .. }) => {
                    if start.elapsed() >= LOCK_WAIT {
                        return Err(ProfileCacheError::Busy {
                            path: self.dir.clone(),
                            holder,
                            waited_s: LOCK_WAIT.as_secs(),
                        });
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(e) => return Err(ProfileCacheError::Lock(e)),
            }
        }
    }

    /// The shard folders (two hex digits).
    fn shards(&self) -> Result<Vec<PathBuf>> {
        let read =
            std::fs::read_dir(&self.dir).map_err(|e| io("read the profile cache", &self.dir, e))?;
        Ok(read
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| is_shard(&e.file_name().to_string_lossy()))
            .map(|e| e.path())
            .collect())
    }

    /// Every entry file with its digest.
    fn entry_files(&self) -> Result<Vec<(PathBuf, String)>> {
        let mut files = Vec::new();
        for shard in self.shards()? {
            files.extend(self.entry_files_in(&shard)?);
        }
        files.sort_by(|a, b| a.1.cmp(&b.1));
        Ok(files)
    }

    /// The entry files of one shard (none when it does not exist).
    fn entry_files_in(&self, shard: &Path) -> Result<Vec<(PathBuf, String)>> {
        let read = match std::fs::read_dir(shard) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io("read the cache shard", shard, e)),
        };
        let shard_name = shard
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(read
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let digest = name.strip_suffix(".json")?;
                (is_digest(digest) && digest.starts_with(&shard_name))
                    .then(|| (e.path(), digest.to_string()))
            })
            .collect())
    }

    fn remove_empty_shards(&self) {
        for shard in self.shards().unwrap_or_default() {
            // Fails, harmlessly, when the shard still has files.
            let _ = std::fs::remove_dir(shard);
        }
    }
}

fn summary(digest: String, entry: &CacheEntry, bytes: u64) -> EntrySummary {
    let context = &entry.key.context;
    EntrySummary {
        kernel: if entry.record.short_name.is_empty() {
            entry.key.fingerprint.function.clone()
        } else {
            entry.record.short_name.clone()
        },
        digest,
        function: entry.key.fingerprint.function.clone(),
        device: context.device.clone(),
        driver: context.driver.clone(),
        tool: context.tool.clone(),
        metric_set: context.metric_set.clone(),
        scope: context.scope.clone(),
        profiled_unix_s: entry.profiled_unix_s,
        profile_s: entry.profile_s,
        bytes,
        origin_run: entry.origin_run.clone(),
    }
}

/// Remove one entry file; whether it was there.
fn remove_entry(path: &Path) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io("remove the cache entry", path, e)),
    }
}

/// What the file at `path` is when it is not a regular file (its link itself, not followed);
/// `None` for a regular file or one that is gone.
fn not_a_regular_file(path: &Path) -> Option<&'static str> {
    let kind = std::fs::symlink_metadata(path).ok()?.file_type();
    if kind.is_symlink() {
        return Some("a symbolic link");
    }
    (!kind.is_file()).then(|| crate::model::input::describe(kind))
}

/// Whether `dir` holds nothing but what a cache holds (or nothing): safe to mark as one.
fn only_cache_files(dir: &Path) -> Result<bool> {
    let read = std::fs::read_dir(dir).map_err(|e| io("read the profile cache", dir, e))?;
    Ok(read.flatten().all(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        // The marker itself: another process may have written it since this one looked.
        name == VERSION_FILE
            || name == LOCK_FILE
            || name.starts_with(&format!(".{VERSION_FILE}."))
            // A shard of a cache that lost its marker is empty; a folder of two-hex-digit
            // folders with files in them is someone else's (git objects, a hash store).
            || (is_shard(&name)
                && std::fs::read_dir(e.path()).is_ok_and(|mut files| files.next().is_none()))
    }))
}

/// The bytes of the regular file at `path`, opened without waiting and without following a
/// link: a FIFO or device planted in the cache is an error at once, never a hang (an
/// `expire` that hung held the writer lock and made every writer wait).
fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NONBLOCK | libc::O_NOFOLLOW,
    );
    let mut file = options.open(path)?;
    if !file.metadata()?.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `text` lower-cased when it is hex of `min` to 64 digits.
fn check_digest(text: &str, min: usize) -> Result<String> {
    let digest = text.trim().to_ascii_lowercase();
    if digest.len() < min
        || digest.len() > DIGEST_LEN
        || !digest.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(ProfileCacheError::BadDigest {
            digest: text.to_string(),
            min,
        });
    }
    Ok(digest)
}

fn is_shard(name: &str) -> bool {
    name.len() == 2 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn is_digest(name: &str) -> bool {
    name.len() == DIGEST_LEN && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn modified_unix_s(path: &Path) -> Option<f64> {
    let modified = std::fs::symlink_metadata(path).ok()?.modified().ok()?;
    Some(modified.duration_since(UNIX_EPOCH).ok()?.as_secs_f64())
}

fn io(action: &'static str, path: &Path, source: std::io::Error) -> ProfileCacheError {
    ProfileCacheError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::profile_cache::{LaunchFingerprint, ProfileContext};
    use crate::model::record::KernelRecord;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;

    fn key(n: u64) -> ProfileKey {
        ProfileKey::new(
            LaunchFingerprint {
                module_sha256: "ab".repeat(32),
                function: "_Z6matmulPKfS0_Pfi".into(),
                grid: [64, n, 1],
                block: [16, 16, 1],
                dynamic_shared_bytes: 0,
            },
            ProfileContext {
                device: "NVIDIA H200 (sm_90, 141 GB, 132 SMs)".into(),
                driver: "580.95.05".into(),
                tool: "ncu 2025.3.1.0".into(),
                clock_control: "base".into(),
                metric_set: "default".into(),
                scope: "problem-7".into(),
            },
        )
    }

    fn entry(key: ProfileKey, profiled_unix_s: f64) -> CacheEntry {
        CacheEntry {
            record: KernelRecord {
                profiler: "ncu".into(),
                name: "matmul(const float *, const float *, float *, int)".into(),
                short_name: "matmul".into(),
                duration_ns: Some(12_345.0),
                ..KernelRecord::default()
            },
            key,
            origin_run: "runs/batch/job-3/ncu.000".into(),
            profiled_unix_s,
            profile_s: 0.17,
        }
    }

    fn cache() -> (tempfile::TempDir, ProfileCache) {
        let dir = tempfile::tempdir().unwrap();
        let cache = ProfileCache::open(&dir.path().join("profiles")).unwrap();
        (dir, cache)
    }

    #[test]
    fn a_stored_entry_is_a_hit_at_its_digests_place() {
        let (_dir, cache) = cache();
        assert_eq!(
            std::fs::read_to_string(cache.dir().join(VERSION_FILE)).unwrap(),
            format!("{LAYOUT}\n")
        );
        let stored = entry(key(1), now_unix_s());
        assert_eq!(cache.get(&key(1)).unwrap(), None);
        let path = cache.put(&stored).unwrap();
        let digest = key(1).digest();
        assert_eq!(
            path,
            cache
                .dir()
                .join(&digest[..2])
                .join(format!("{digest}.json"))
        );
        assert_eq!(cache.get(&key(1)).unwrap(), Some(stored.clone()));
        // Stored again: replaced, still one entry.
        cache.put(&stored).unwrap();
        assert_eq!(cache.stats().unwrap().entries, 1);
        // Opened again (another process): the same cache.
        let again = ProfileCache::open(cache.dir()).unwrap();
        assert_eq!(again.get(&key(1)).unwrap(), Some(stored));
    }

    #[test]
    fn a_change_of_any_key_field_is_a_miss_even_for_a_file_copied_under_its_name() {
        let (_dir, cache) = cache();
        let base = key(1);
        cache.put(&entry(base.clone(), now_unix_s())).unwrap();
        let changed = crate::model::profile_cache::each_field_changed(&base);
        let original = cache.path_of(&base.digest());
        for k in &changed {
            assert_eq!(cache.get(k).unwrap(), None, "{k:?}");
            // The base entry copied to the changed key's place is still not served: the
            // stored key decides, not the file's name. It is removed, with a warning.
            let place = cache.path_of(&k.digest());
            std::fs::create_dir_all(place.parent().unwrap()).unwrap();
            std::fs::copy(&original, &place).unwrap();
            let found = cache.lookup(k).unwrap();
            assert_eq!(found.entry, None, "{k:?}");
            let warning = found.warning.unwrap();
            assert!(warning.contains("stored for another key"), "{warning}");
            assert!(warning.contains("removed"), "{warning}");
            assert!(!place.exists());
        }
        assert!(cache.get(&base).unwrap().is_some());
    }

    #[test]
    fn a_corrupt_entry_is_a_miss_with_a_warning_and_is_removed() {
        let (_dir, cache) = cache();
        cache.put(&entry(key(1), now_unix_s())).unwrap();
        let path = cache.path_of(&key(1).digest());
        for junk in ["{\"key\":", "", "not json at all"] {
            std::fs::write(&path, junk).unwrap();
            let found = cache.lookup(&key(1)).unwrap();
            assert_eq!(found.entry, None);
            let warning = found.warning.unwrap();
            assert!(warning.contains("not a cache entry"), "{warning}");
            assert!(warning.contains(&path.display().to_string()), "{warning}");
            assert!(!path.exists(), "{junk:?}");
        }
        // Then a plain miss, and a put makes it a hit again.
        assert_eq!(cache.lookup(&key(1)).unwrap(), Lookup::default());
        cache.put(&entry(key(1), now_unix_s())).unwrap();
        assert!(cache.get(&key(1)).unwrap().is_some());
    }

    #[test]
    fn an_unreadable_entry_is_a_miss_with_a_warning() {
        let (_dir, cache) = cache();
        // A directory where the entry belongs cannot be read as a file.
        let path = cache.path_of(&key(1).digest());
        std::fs::create_dir_all(&path).unwrap();
        let found = cache.lookup(&key(1)).unwrap();
        assert_eq!(found.entry, None);
        let warning = found.warning.unwrap();
        assert!(warning.contains("cannot be read"), "{warning}");
        // Not a file, so not removed by remove_file; a put then fails with a typed error.
        assert!(warning.contains("could not be removed"), "{warning}");
        let err = cache.put(&entry(key(1), now_unix_s())).unwrap_err();
        assert!(err.to_string().contains("write the cache entry"), "{err}");
    }

    #[test]
    fn a_corrupt_entry_is_left_while_a_writer_holds_the_cache() {
        let (_dir, cache) = cache();
        cache.put(&entry(key(1), now_unix_s())).unwrap();
        let path = cache.path_of(&key(1).digest());
        std::fs::write(&path, "{").unwrap();
        let held = cache.lock().unwrap();
        let found = cache.lookup(&key(1)).unwrap();
        assert_eq!(found.entry, None);
        assert!(found.warning.unwrap().contains("left in place"));
        assert!(path.exists());
        drop(held);
        assert!(cache.lookup(&key(1)).unwrap().warning.is_some());
        assert!(!path.exists());
    }

    #[test]
    fn expire_removes_what_was_profiled_before_the_cutoff() {
        let (_dir, cache) = cache();
        let now = now_unix_s();
        cache.put(&entry(key(1), now - 10.0 * 86_400.0)).unwrap();
        cache.put(&entry(key(2), now - 2.0 * 86_400.0)).unwrap();
        cache.put(&entry(key(3), now)).unwrap();
        assert_eq!(cache.expire(Duration::from_secs(7 * 86_400)).unwrap(), 1);
        assert!(cache.get(&key(1)).unwrap().is_none());
        assert!(cache.get(&key(2)).unwrap().is_some());
        assert_eq!(cache.expire(Duration::from_secs(86_400)).unwrap(), 1);
        assert_eq!(cache.stats().unwrap().entries, 1);
        assert_eq!(cache.expire(Duration::ZERO).unwrap(), 1);
        assert_eq!(cache.stats().unwrap(), CacheStats::default());
        // The emptied shards went with them.
        let left: Vec<_> = std::fs::read_dir(cache.dir())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| is_shard(n))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn invalidate_by_digest_and_resolve_a_prefix() {
        let (_dir, cache) = cache();
        cache.put(&entry(key(1), now_unix_s())).unwrap();
        cache.put(&entry(key(2), now_unix_s())).unwrap();
        let digest = key(1).digest();
        assert_eq!(cache.resolve(&digest[..12]).unwrap(), digest);
        assert_eq!(cache.resolve(&digest.to_uppercase()).unwrap(), digest);
        assert!(matches!(
            cache.resolve("ab"),
            Err(ProfileCacheError::BadDigest { .. })
        ));
        assert!(matches!(
            cache.resolve("zzzz"),
            Err(ProfileCacheError::BadDigest { .. })
        ));
        assert!(matches!(
            cache.resolve(&"0".repeat(64)),
            Err(ProfileCacheError::NoSuchEntry { .. })
        ));
        assert!(matches!(
            cache.invalidate(&digest[..12]),
            Err(ProfileCacheError::BadDigest { .. })
        ));
        assert!(cache.invalidate(&digest).unwrap());
        assert!(!cache.invalidate(&digest).unwrap());
        assert!(cache.get(&key(1)).unwrap().is_none());
        assert!(cache.get(&key(2)).unwrap().is_some());
    }

    #[test]
    fn an_ambiguous_prefix_is_refused() {
        let (_dir, cache) = cache();
        // Keys until two share a four-digit prefix (the birthday bound makes it quick).
        let mut seen = std::collections::BTreeMap::new();
        let prefix = (0..10_000)
            .find_map(|n| {
                let digest = key(n).digest();
                let prefix = digest[..4].to_string();
                seen.insert(prefix.clone(), n)
                    .map(|other| (prefix, other, n))
            })
            .unwrap();
        cache.put(&entry(key(prefix.1), now_unix_s())).unwrap();
        cache.put(&entry(key(prefix.2), now_unix_s())).unwrap();
        assert!(matches!(
            cache.resolve(&prefix.0),
            Err(ProfileCacheError::Ambiguous { count: 2, .. })
        ));
    }

    #[test]
    fn list_stats_and_clear() {
        let (_dir, cache) = cache();
        let now = now_unix_s();
        cache.put(&entry(key(1), now - 60.0)).unwrap();
        cache.put(&entry(key(2), now)).unwrap();
        // Junk beside them: a corrupt entry is left out of the list, a stray file ignored.
        let bad = cache.path_of(&key(3).digest());
        std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
        std::fs::write(&bad, "{").unwrap();
        std::fs::write(cache.dir().join("ab").join("notes.txt"), "x").ok();
        let listed = cache.list().unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].digest, key(2).digest(), "newest first");
        assert_eq!(listed[1].kernel, "matmul");
        assert_eq!(listed[1].device, "NVIDIA H200 (sm_90, 141 GB, 132 SMs)");
        assert_eq!(listed[1].tool, "ncu 2025.3.1.0");
        assert_eq!(listed[1].origin_run, "runs/batch/job-3/ncu.000");
        let stats = cache.stats().unwrap();
        assert_eq!(stats.entries, 3);
        assert_eq!(
            stats.bytes,
            listed.iter().map(|s| s.bytes).sum::<u64>() + 1,
            "the corrupt entry's byte too"
        );
        // A temporary file a killed writer left goes with a clear; a file that is not an
        // entry of its name stays (polyprof did not write it), for `invalidate` to remove.
        let shard = cache.path_of(&key(1).digest());
        let stray = shard.parent().unwrap().join(".x.json.abc.tmp");
        std::fs::write(&stray, "{").unwrap();
        assert_eq!(cache.clear().unwrap(), 2);
        assert!(!stray.exists());
        assert!(bad.exists());
        assert!(cache.invalidate(&key(3).digest()).unwrap());
        assert_eq!(cache.stats().unwrap(), CacheStats::default());
        assert!(cache.list().unwrap().is_empty());
        assert!(cache.dir().join(VERSION_FILE).exists());
    }

    #[test]
    fn a_directory_of_other_files_or_another_layout_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("thesis.tex"), "precious").unwrap();
        let err = ProfileCache::open(dir.path()).unwrap_err();
        assert!(matches!(err, ProfileCacheError::NotACache { .. }), "{err}");
        assert!(!dir.path().join(VERSION_FILE).exists());
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(VERSION_FILE), "polyprof profile cache 99\n").unwrap();
        let err = ProfileCache::open(&other).unwrap_err();
        assert!(
            err.to_string().contains("polyprof profile cache 99"),
            "{err}"
        );
        // A missing directory is created by open, and not by open_existing.
        let missing = dir.path().join("missing");
        assert!(ProfileCache::open_existing(&missing).unwrap().is_none());
        assert!(!missing.exists());
        assert!(ProfileCache::open(&missing).is_ok());
        assert!(ProfileCache::open_existing(&missing).unwrap().is_some());
    }

    #[test]
    fn upkeep_never_marks_a_folder_of_empty_shards() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ab")).unwrap();
        let err = ProfileCache::open_existing(dir.path()).unwrap_err();
        assert!(matches!(err, ProfileCacheError::NotACache { .. }), "{err}");
        assert!(!dir.path().join(VERSION_FILE).exists());
        // Nothing, or only a lock file, is no cache yet: nothing to list or remove.
        let empty = tempfile::tempdir().unwrap();
        std::fs::write(empty.path().join(LOCK_FILE), "").unwrap();
        assert!(ProfileCache::open_existing(empty.path()).unwrap().is_none());
        assert!(!empty.path().join(VERSION_FILE).exists());
    }

    #[cfg(unix)]
    #[test]
    fn expire_leaves_what_is_not_a_regular_file_however_old() {
        let (_dir, cache) = cache();
        cache
            .put(&entry(key(1), now_unix_s() - 30.0 * 86_400.0))
            .unwrap();
        let fifo = cache.path_of(&key(2).digest());
        std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let folder = cache.path_of(&key(3).digest());
        std::fs::create_dir_all(&folder).unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(30 * 86_400);
        for path in [&fifo, &folder] {
            let times = std::fs::FileTimes::new().set_modified(old);
            std::fs::File::options()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
                .unwrap()
                .set_times(times)
                .unwrap();
        }
        assert_eq!(cache.expire(Duration::from_secs(86_400)).unwrap(), 1);
        assert!(std::fs::symlink_metadata(&fifo).is_ok());
        assert!(folder.is_dir());
    }

    #[test]
    fn concurrent_writers_readers_and_expiry_leave_whole_entries() {
        let (_dir, cache) = cache();
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let cache = cache.clone();
                std::thread::spawn(move || {
                    for round in 0..25u64 {
                        let k = key((t + round) % 10);
                        cache.put(&entry(k.clone(), now_unix_s())).unwrap();
                        // Another thread may be rewriting it; never half an entry.
                        let found = cache.lookup(&k).unwrap();
                        assert_eq!(found.warning, None);
                        if t == 0 && round % 5 == 0 {
                            cache.expire(Duration::from_secs(3600)).unwrap();
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        for n in 0..10 {
            assert!(cache.get(&key(n)).unwrap().is_some(), "{n}");
        }
        assert_eq!(cache.stats().unwrap().entries, 10);
        // No temporary file left anywhere.
        for shard in cache.shards().unwrap() {
            for file in std::fs::read_dir(shard).unwrap().flatten() {
                let name = file.file_name().to_string_lossy().into_owned();
                assert!(name.ends_with(".json") && !name.starts_with('.'), "{name}");
            }
        }
    }

    #[test]
    fn the_default_folder_is_profiles_under_the_configured_or_xdg_cache() {
        assert_eq!(
            dir_for(Some(Path::new("/srv/cache")), Some("/x".into()), None),
            Some(PathBuf::from("/srv/cache/profiles"))
        );
        assert_eq!(
            dir_for(None, Some("/x".into()), Some("/home/a".into())),
            Some(PathBuf::from("/x/polyprof/profiles"))
        );
        assert_eq!(
            dir_for(None, Some("".into()), Some("/home/a".into())),
            Some(PathBuf::from("/home/a/.cache/polyprof/profiles"))
        );
        assert_eq!(dir_for(None, None, None), None);
    }
}
