//! Kernel names as polyprof prints them. ncu's own demangled spelling is not stable: on the H200
//! (ncu 2025.3.1) one PyTorch kernel printed as `void at::<unnamed>::distribution_…<…, void
//! templates::normal_and_transform<c10::BFloat16, …` in a plain run but as `void
//! unnamed>::distribution_…<…, void normal_and_transform<BFloat16, …` once a `-k` filter was on
//! the command line, so names from two runs of one program did not match. So polyprof asks ncu
//! for mangled names (`--print-kernel-base mangled`, the same bytes in every run) and demangles
//! them here; names that are no Itanium mangling (C kernels, Triton, cuBLAS's `nvjet_…`) and
//! logs captured with ncu's demangled names pass unchanged.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::model::record::short_kernel_name;

/// Distinct names kept per parsing thread. A run repeats a few hundred names over thousands of
/// launches, and demangling one costs 20–50 µs (PyTorch's lambda-laden names the most): without
/// the cache it would dominate the parse.
const CACHE_ENTRIES: usize = 4096;

thread_local! {
    static DEMANGLED: RefCell<HashMap<String, String>> = RefCell::new(HashMap::new());
}

/// The Itanium demangling of `mangled`, in the spelling ncu uses for anonymous namespaces
/// (`<unnamed>`, which [`short_kernel_name`] and the kernel filter expect). `None` when `mangled`
/// is not a well-formed mangled name.
pub fn demangle(mangled: &str) -> Option<String> {
    if !mangled.starts_with("_Z") {
        return None;
    }
    let symbol = cpp_demangle::Symbol::new(mangled.as_bytes()).ok()?;
    let text = symbol
        .demangle_with_options(&cpp_demangle::DemangleOptions::new())
        .ok()?;
    Some(text.replace("(anonymous namespace)", "<unnamed>"))
}

/// The name to record for what ncu printed: demangled when it is a mangled name.
pub fn printed_name(raw: &str) -> String {
    if !raw.starts_with("_Z") {
        return raw.to_string();
    }
    DEMANGLED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(name) = cache.get(raw) {
            return name.clone();
        }
        let name = demangle(raw).unwrap_or_else(|| raw.to_string());
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(raw.to_string(), name.clone());
        name
    })
}

/// `matmul_tiled<32>` for `_Z12matmul_tiledILi32EEvPKfS1_Pfi`; `None` when not a mangled name.
/// Integer arguments of other types keep their cast (`(unsigned int)4`), as in the name ncu
/// matches, which the kernel filter accepts either way.
pub fn demangle_short(mangled: &str) -> Option<String> {
    demangle(mangled).map(|name| short_kernel_name(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_templates_demangle_to_the_short_names_polyprof_prints() {
        assert_eq!(
            printed_name("_Z12matmul_tiledILi32EEvPKfS1_Pfi"),
            "void matmul_tiled<32>(float const*, float const*, float*, int)"
        );
        assert_eq!(
            demangle_short("_Z12matmul_tiledILi32EEvPKfS1_Pfi").as_deref(),
            Some("matmul_tiled<32>")
        );
        assert_eq!(
            demangle_short("_Z10vector_addPKfS0_Pfi").as_deref(),
            Some("vector_add")
        );
        assert_eq!(
            demangle_short("_ZN2ns6kernelIfLj4EEEvPT_").as_deref(),
            Some("ns::kernel<float, (unsigned int)4>")
        );
    }

    #[test]
    fn repeated_names_come_from_the_cache_unchanged() {
        let first = printed_name("_Z10vector_addPKfS0_Pfi");
        for _ in 0..3 {
            assert_eq!(printed_name("_Z10vector_addPKfS0_Pfi"), first);
        }
        assert_eq!(printed_name("_Z99short"), "_Z99short");
        assert_eq!(printed_name("_Z99short"), "_Z99short");
    }

    #[test]
    fn other_names_pass_unchanged() {
        for name in [
            "nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT",
            "matmul_kernel",
            "void matmul_tiled<32>(const float *, const float *, float *, int)",
            "_Z99short",
            "_Z",
            "",
        ] {
            assert_eq!(printed_name(name), name);
        }
        assert_eq!(demangle_short("plain_c_kernel"), None);
        assert_eq!(demangle_short("_Z99short"), None);
    }

    /// The mangled name ncu printed on the H200 for PyTorch's normal-distribution fill (see
    /// tests/fixtures/ncu-h200-names).
    #[test]
    fn pytorch_lambda_kernels_keep_their_namespaces() {
        let mangled =
            include_str!("../../../tests/fixtures/ncu-h200-names/distribution_mangled.txt").trim();
        let name = printed_name(mangled);
        assert!(
            name.starts_with(
                "void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4, "
            ),
            "{name}"
        );
        let short = short_kernel_name(&name);
        assert!(
            short
                .starts_with("at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<"),
            "{short}"
        );
    }
}
