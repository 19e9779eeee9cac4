//! Helpers of the hostile-input tests (hostile_inputs.rs, hostile_files.rs): what a command
//! may take at most before it counts as hung, FIFOs, profile-cache keys and entries (also
//! profile_cache_cli.rs's).

use std::path::{Path, PathBuf};
use std::time::Duration;

use polyprof::model::batch::now_unix_s;
use polyprof::model::profile_cache::{CacheEntry, LaunchFingerprint, ProfileContext, ProfileKey};
use polyprof::model::record::KernelRecord;
use polyprof::pipeline::profile_cache::ProfileCache;

use super::polyprof;

/// Long enough for a debug build on a loaded machine; a hang (a FIFO read) never ends.
pub const NO_HANG: Duration = Duration::from_secs(60);

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Nothing in `out` (what `what` printed) that a terminal would act on (ESC, BEL, a C1 CSI), and
/// the test's escape sequence shown instead.
pub fn assert_shown_not_sent(what: &str, out: &[u8]) {
    let out = text(out);
    assert!(
        !out.contains('\x1b') && !out.contains('\x07') && !out.contains('\u{9b}'),
        "{what}: a control character reached the terminal: {out:?}"
    );
    assert!(out.contains("evil\\x1b[2J"), "{what}: not shown: {out}");
}

pub fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

/// A profile-cache key for kernel number `n`, on the H200.
pub fn key(n: u64) -> ProfileKey {
    key_on(n, "NVIDIA H200")
}

/// A profile-cache key for kernel number `n` on `device`.
pub fn key_on(n: u64, device: &str) -> ProfileKey {
    ProfileKey::new(
        LaunchFingerprint {
            module_sha256: format!("{n:064x}"),
            function: format!("_Z7kernel{n}Pf"),
            grid: [128, 1, 1],
            block: [256, 1, 1],
            dynamic_shared_bytes: 0,
        },
        ProfileContext {
            device: device.into(),
            driver: "580.95.05".into(),
            tool: "ncu 2025.3.1.0".into(),
            clock_control: "base".into(),
            metric_set: "default".into(),
            scope: "problem-1".into(),
        },
    )
}

/// Entry `n` of kernel `short_name`, profiled `age_s` seconds ago.
pub fn put(cache: &ProfileCache, n: u64, short_name: &str, age_s: f64) -> PathBuf {
    cache
        .put(&CacheEntry {
            record: KernelRecord {
                profiler: "ncu".into(),
                name: format!("{short_name}(float *)"),
                short_name: short_name.into(),
                duration_ns: Some(1000.0),
                ..KernelRecord::default()
            },
            key: key(n),
            origin_run: "runs/j1/ncu.000".into(),
            profiled_unix_s: now_unix_s() - age_s,
            profile_s: 0.2,
        })
        .unwrap()
}

/// `polyprof cache ARGS --dir DIR`, within [`NO_HANG`].
pub fn cache(dir: &Path, args: &[&str]) -> std::process::Output {
    polyprof()
        .arg("cache")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .timeout(NO_HANG)
        .output()
        .unwrap()
}
