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
//!
//! The functions `polyprof run` executes are also placed side by side (build/run-order.txt,
//! made by scripts/gen-run-order.sh, given to lld as `--symbol-ordering-file`): scattered over
//! the executable, they cost 137 page faults per run in polyprof and its forked supervisor (each
//! mapping a 64 KiB window); packed, 28 (issue 37, docs/runner.md "fifth pass"). Only where the
//! linker is known to be lld (x86_64 Linux, rustc 1.90 or later, no linker configured): other
//! linkers may not know the option, and the order is only an optimization. Names the build no
//! longer has are skipped (`scripts/gen-run-order.sh --check` counts them).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/run-order.txt");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=polyprof=-no-pie");
    }
    let order = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("build/run-order.txt");
    if order.is_file() && links_with_default_lld(&os, &env) {
        println!(
            "cargo:rustc-link-arg-bin=polyprof=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=polyprof=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether the executables are linked by rustc's own lld: the default of x86_64 Linux (glibc)
/// since rustc 1.90, unless a linker, a linker flavor or `-fuse-ld` is configured.
fn links_with_default_lld(os: &str, env: &str) -> bool {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os != "linux"
        || env != "gnu"
        || arch != "x86_64"
        || std::env::var_os("RUSTC_LINKER").is_some()
    {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if ["linker", "fuse-ld", "link-self-contained"]
        .iter()
        .any(|word| flags.contains(word))
    {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let Ok(out) = std::process::Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let minor = text
        .lines()
        .find_map(|line| line.strip_prefix("release: 1."))
        .and_then(|rest| rest.split('.').next()?.parse::<u32>().ok());
    minor.is_some_and(|minor| minor >= 90)
}
