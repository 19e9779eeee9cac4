//! Link the polyprof executable as a fixed-address (non-PIE) binary on Linux: a PIE of this
//! size carries ~27,000 relative relocations that the dynamic loader applies, page by page, at
//! every start, and `polyprof run` starts the executable twice per run (the runner and its
//! supervisor). Measured on `run -q -- true` (scripts/bench-runner.sh, README "Runner figures").
//! The library, the Python extension and the tests are linked as before.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=polyprof=-no-pie");
    }
}
