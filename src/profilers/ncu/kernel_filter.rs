//! `--kernel` takes the names polyprof prints. ncu's `-k NAME` matches the *function* name by
//! default (`--kernel-name-base function`: no namespace qualifiers, template arguments or
//! parameters), so `-k matmul_tiled<32>` — polyprof's short name — matches nothing. A short name
//! with template arguments or a namespace is therefore matched against the demangled name
//! (`void matmul_tiled<32>(const float *, …)`) with an anchored regex: exactly that name,
//! preceded by the start or a space (the return type) and followed by its parameter list.
//! Template arguments are spelled as ncu demangles them (`(int)16`), which is what polyprof
//! prints. Plain names, `regex:` filters and an explicit `--kernel-name-base` pass unchanged.

use super::options::KernelNameBase;

/// The `--kernel-name-base` and `-k` values for a user's `--kernel` filter.
pub fn ncu_kernel_filter(
    name: &str,
    base: Option<KernelNameBase>,
) -> (Option<KernelNameBase>, String) {
    let short_name_like = name.contains('<') || name.contains("::");
    if base.is_some() || name.starts_with("regex:") || !short_name_like {
        return (base, name.to_string());
    }
    let pattern = format!("regex:(^| ){}(\\(|$)", escape(name));
    (Some(KernelNameBase::Demangled), pattern)
}

/// Backslash before every ECMAScript regex metacharacter (ncu's regex dialect).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for ch in text.chars() {
        if "\\^$.|?*+()[]{}".contains(ch) {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(filter: &str, demangled: &str) -> bool {
        let pattern = filter.strip_prefix("regex:").unwrap();
        regex::Regex::new(pattern).unwrap().is_match(demangled)
    }

    #[test]
    fn templated_short_names_match_the_demangled_name_exactly() {
        let (base, filter) = ncu_kernel_filter("matmul_tiled<32>", None);
        assert_eq!(base, Some(KernelNameBase::Demangled));
        // Names as ncu printed them on the H200 (tests/fixtures/ncu-h200/raw_page.stdout).
        assert!(matches(
            &filter,
            "void matmul_tiled<32>(const float *, const float *, float *, int)"
        ));
        assert!(!matches(
            &filter,
            "void matmul_tiled<64>(const float *, const float *, float *, int)"
        ));
        assert!(!matches(&filter, "void my_matmul_tiled<32>(const float *)"));
        let (_, filter) = ncu_kernel_filter(
            "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>",
            None,
        );
        assert!(matches(
            &filter,
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>(int, T2, T3)"
        ));
        // ncu's `(int)16` spelling of a non-type template argument is kept as printed.
        let (_, filter) = ncu_kernel_filter("k<(int)16>", None);
        assert!(matches(&filter, "void k<(int)16>(float *)"));
        assert!(!matches(&filter, "void k<16>(float *)"));
    }

    #[test]
    fn plain_names_regexes_and_explicit_bases_pass_unchanged() {
        assert_eq!(
            ncu_kernel_filter("vector_add", None),
            (None, "vector_add".to_string())
        );
        assert_eq!(
            ncu_kernel_filter("regex:matmul.*", None),
            (None, "regex:matmul.*".to_string())
        );
        assert_eq!(
            ncu_kernel_filter("matmul_tiled<32>", Some(KernelNameBase::Function)),
            (
                Some(KernelNameBase::Function),
                "matmul_tiled<32>".to_string()
            )
        );
    }
}
