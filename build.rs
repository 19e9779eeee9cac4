//! Link the polyprof executable as a fixed-address (non-PIE) binary on Linux: a PIE of this
//! size carries ~28,000 relative relocations that the dynamic loader applies at every start,
//! each relocated page a copy-on-write fault, and `polyprof run` starts it once per run (batches:
//! once per job). Measured (issue 37, 2026-12-06, the same objects linked three ways, 100 runs
//! interleaved, load ≈ 9 on 2 cores; CPU time / page faults): `polyprof --version` PIE 2.68 ms /
//! 343, PIE with packed relative relocations (`-z pack-relative-relocs`, RELR, keeps ASLR)
//! 2.46 ms / 334, non-PIE 1.92 ms / 218; `run -q -- true` 8.75 / 8.93 / 7.79 ms. RELR only
//! shrinks the table: the relocated pages are still written and faulted in. The trade: the
//! executable's own code and data sit at a fixed address (libraries, stack, heap and mmaps are
//! still randomized); polyprof is no setuid or network-facing program, and what it runs
//! (commands, candidates) is exec'd, never loaded into it. `polyprof-supervise` (3.5 MB, 3,625
//! relocations) stays PIE: non-PIE saved 0.03 ms and 15 faults per run there, not worth it.
//! The library, the Python extension and the tests are linked as before.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=polyprof=-no-pie");
    }
}
