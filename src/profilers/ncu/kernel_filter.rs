//! `--kernel` takes the names polyprof prints. ncu's `-k NAME` matches the *function* name by
//! default (`--kernel-name-base function`: no namespace qualifiers, template arguments or
//! parameters), so `-k matmul_tiled<32>` — polyprof's short name — matches nothing. A short name
//! with template arguments or a namespace is therefore matched against the demangled name with
//! an anchored regex.
//!
//! The demangled name ncu *matches* is not the one it *prints*: on the H200 (ncu 2025.3.1) it
//! printed `matmul_tiled<32>(const float *, …)` but matched against
//! `matmul_tiled<(int)32>(const float *, …)` — no return type, and integer template arguments
//! carry their type as a cast. So each integer template argument of the short name matches with
//! or without a `(type)` prefix (`32` finds `(int)32`, `(int)16` finds `16`), `<unnamed>`
//! matches `(anonymous namespace)` too, and the name must be preceded by the start or a space
//! (a return type) and followed by its parameter list. Plain names, `regex:` filters and an
//! explicit `--kernel-name-base` pass unchanged.

use std::sync::LazyLock;

use regex::Regex;

use super::options::KernelNameBase;

/// An integer template argument: after `<` or `,`, an optional `(type)` cast, the number with
/// optional integer suffixes, then `,` or `>`.
static INTEGER_ARGUMENT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?P<pre>[<,]\s*)(?:\([A-Za-z_][A-Za-z_0-9 ]*\))?(?P<num>-?[0-9]+)[uUlL]*(?P<post>\s*[,>])",
    )
    .ok()
});

/// The `--kernel-name-base` and `-k` values for a user's `--kernel` filter.
pub fn ncu_kernel_filter(
    name: &str,
    base: Option<KernelNameBase>,
) -> (Option<KernelNameBase>, String) {
    let short_name_like = name.contains('<') || name.contains("::");
    if base.is_some() || name.starts_with("regex:") || !short_name_like {
        return (base, name.to_string());
    }
    let pattern = format!("regex:(^| ){}(\\(|$)", demangled_pattern(name));
    (Some(KernelNameBase::Demangled), pattern)
}

/// The regex body for a short name: literal text escaped, integer template arguments with an
/// optional cast, `<unnamed>` also as `(anonymous namespace)`.
fn demangled_pattern(name: &str) -> String {
    let mut out = String::with_capacity(name.len() * 2);
    let mut rest = 0;
    // The `post` separator is shared by neighbouring arguments (`<1, 2>`), so match one at a
    // time and resume at that separator.
    let mut at = 0;
    while let Some(caps) = INTEGER_ARGUMENT
        .as_ref()
        .and_then(|re| re.captures_at(name, at))
    {
        let (pre, num, post) = (&caps["pre"], &caps["num"], caps.name("post"));
        let start = caps.get(0).map_or(at, |m| m.start());
        let post_start = post.map_or(name.len(), |m| m.start());
        out.push_str(&literal(&name[rest..start]));
        out.push_str(&literal(pre));
        out.push_str(r"(\([A-Za-z_][A-Za-z_0-9 ]*\))?");
        out.push_str(&escape(num));
        rest = post_start;
        at = post_start;
    }
    out.push_str(&literal(&name[rest..]));
    out
}

/// Escaped text, with `<unnamed>` (how ncu prints an anonymous namespace) matching either
/// spelling.
fn literal(text: &str) -> String {
    text.split("<unnamed>")
        .map(escape)
        .collect::<Vec<_>>()
        .join(r"(<unnamed>|\(anonymous namespace\))")
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
    fn templated_short_names_match_the_name_ncu_matches() {
        let (base, filter) = ncu_kernel_filter("matmul_tiled<32>", None);
        assert_eq!(base, Some(KernelNameBase::Demangled));
        // What ncu 2025.3.1 matched against on the H200 (it listed it after "0 launches"), and
        // what it printed.
        assert!(matches(
            &filter,
            "matmul_tiled<(int)32>(const float *, const float *, float *, int)"
        ));
        assert!(matches(
            &filter,
            "void matmul_tiled<32>(const float *, const float *, float *, int)"
        ));
        assert!(!matches(
            &filter,
            "matmul_tiled<(int)64>(const float *, const float *, float *, int)"
        ));
        assert!(!matches(&filter, "matmul_tiled<(int)320>(const float *)"));
        assert!(!matches(&filter, "my_matmul_tiled<(int)32>(const float *)"));
        // The `(int)16` spelling given by hand finds both spellings too.
        let (_, filter) = ncu_kernel_filter("k<(int)16>", None);
        assert!(matches(&filter, "k<(int)16>(float *)"));
        assert!(matches(&filter, "void k<16>(float *)"));
        assert!(!matches(&filter, "k<(int)160>(float *)"));
    }

    #[test]
    fn several_arguments_namespaces_and_anonymous_namespaces() {
        let short = "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>";
        let (_, filter) = ncu_kernel_filter(short, None);
        assert!(matches(
            &filter,
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>(int, T2, T3)"
        ));
        assert!(matches(
            &filter,
            "at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, std::array<char *, (unsigned long)1>>(int, T2, T3)"
        ));
        let (_, filter) = ncu_kernel_filter("gemm<1, 2, 3>", None);
        assert!(matches(&filter, "gemm<(int)1, (int)2, (int)3>(float *)"));
        assert!(!matches(&filter, "gemm<(int)1, (int)3, (int)2>(float *)"));
        let (_, filter) = ncu_kernel_filter("native::<unnamed>::fill<2>", None);
        assert!(matches(
            &filter,
            "native::(anonymous namespace)::fill<(int)2>(float)"
        ));
        assert!(matches(&filter, "void native::<unnamed>::fill<2>(float)"));
        // Numbers that are not whole template arguments stay literal.
        let (_, filter) = ncu_kernel_filter("ns::k2<float>", None);
        assert!(matches(&filter, "ns::k2<float>(float *)"));
        assert!(!matches(&filter, "ns::k(int)2<float>(float *)"));
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
