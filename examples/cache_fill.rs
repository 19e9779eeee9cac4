//! Fills a profile cache for scripts/bench-cache-list.sh: `cache_fill DIR NAME_BYTES` puts one
//! entry whose kernel is named with NAME_BYTES characters, beside one of an ordinary name.

use polyprof::model::batch::now_unix_s;
use polyprof::model::profile_cache::{CacheEntry, LaunchFingerprint, ProfileContext, ProfileKey};
use polyprof::model::record::KernelRecord;
use polyprof::pipeline::profile_cache::ProfileCache;

fn entry(n: u64, short_name: String) -> CacheEntry {
    let key = ProfileKey::new(
        LaunchFingerprint {
            module_sha256: format!("{n:064x}"),
            function: format!("_Z7kernel{n}Pf"),
            grid: [128, 1, 1],
            block: [256, 1, 1],
            dynamic_shared_bytes: 0,
        },
        ProfileContext {
            device: "NVIDIA H200".into(),
            driver: "580.95.05".into(),
            tool: "ncu 2025.3.1.0".into(),
            clock_control: "base".into(),
            metric_set: "default".into(),
            scope: "bench".into(),
        },
    );
    CacheEntry {
        record: KernelRecord {
            profiler: "ncu".into(),
            name: format!("{short_name}(float *)"),
            short_name,
            duration_ns: Some(1000.0),
            ..KernelRecord::default()
        },
        key,
        origin_run: "runs/j1/ncu.000".into(),
        profiled_unix_s: now_unix_s(),
        profile_s: 0.2,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(bytes)) = (args.next(), args.next()) else {
        return Err("usage: cache_fill DIR NAME_BYTES".into());
    };
    let bytes: usize = bytes.parse()?;
    let cache = ProfileCache::open(std::path::Path::new(&dir))?;
    cache.put(&entry(1, "k".repeat(bytes)))?;
    cache.put(&entry(2, "vector_add".to_string()))?;
    Ok(())
}
