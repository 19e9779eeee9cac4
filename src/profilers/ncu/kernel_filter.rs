//! `--kernel` takes the names polyprof prints. ncu's `-k NAME` matches the *function* name by
//! default (`--kernel-name-base function`: no namespace qualifiers, template arguments or
//! parameters), so `-k matmul_tiled<32>` — polyprof's short name — matches nothing.
//!
//! The demangled name ncu *matches* is not the one it *prints*: on the H200 (ncu 2025.3.1) it
//! printed `matmul_tiled<32>(const float *, …)` but matched against
//! `matmul_tiled<(int)32>(const float *, …)` — no return type, and integer template arguments
//! carry their type as a cast. So a templated name without namespace becomes an anchored regex
//! on the demangled name in which each integer template argument matches with or without a
//! `(type)` prefix or a suffix (`32` finds `(int)32`, `(int)16` finds `16`, c++filt's `3ul`
//! finds ncu's `(unsigned long)3`): exactly that instance.
//!
//! Namespaced names (`at::vectorized_elementwise_kernel<4, …>`, PyTorch's lambda-laden RNG
//! kernels) are printed with namespaces and lambdas spelled differently from the matched name
//! (`[lambda() (instance 1)]`, `<unnamed>`, namespaces left out), so no regex built from the
//! printed name is reliable (seen on the H200: 0 launches). Those match their *function* name
//! exactly (`--kernel-name-base function -k distribution_elementwise_grid_stride_kernel`): every
//! instance of that function, whose full names the records show. So do templates on a
//! function's address, an operator or a lambda (`kf<&(sq(float))>`, `kcmp<&(operator<(P, P))>`
//! in c++filt's spelling, which ncu spells otherwise); for an operator by a regex on the function
//! name, which ncu itself cuts at the operator's `<` (`void kcmp<&operator `). Plain names,
//! `regex:` filters and an explicit `--kernel-name-base` pass unchanged.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use super::options::KernelNameBase;
use crate::model::kernel_name::fitted_name_matches;
use crate::model::parsed::{Diagnostic, Severity};
use crate::model::record::KernelRecord;

/// An integer template argument: after `<` or `,`, an optional `(type)` cast, the number with
/// optional integer suffixes, then `,` or `>`.
static INTEGER_ARGUMENT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?P<pre>[<,]\s*)(?:\([A-Za-z_][A-Za-z_0-9 ]*\))?(?P<num>-?[0-9]+)[uUlL]*(?P<post>\s*[,>])",
    )
    .ok()
});

/// An integer template argument's cast, `(unsigned int)` in `(unsigned int)4`.
static INTEGER_CAST: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\([A-Za-z_][A-Za-z_0-9 ]*\)-?[0-9]").ok());

/// The `--kernel-name-base` and `-k` values for a user's `--kernel` filter.
pub fn ncu_kernel_filter(
    name: &str,
    base: Option<KernelNameBase>,
) -> (Option<KernelNameBase>, String) {
    if base.is_none() && name.contains('…') && !name.contains(['<', ':']) {
        // A plain name a table cut: its function name, `…` standing for what was cut.
        let name = name.rsplit_once(" #").map_or(name, |(head, _)| head);
        let pieces: Vec<String> = name.split('…').map(escape).collect();
        return (None, format!("regex:^{}$", pieces.join(".*")));
    }
    let short_name_like = name.contains('<') || name.contains("::");
    if base.is_some() || name.starts_with("regex:") || !short_name_like {
        return (base, name.to_string());
    }
    if (name.contains("::") || name.contains('…') || has_unmatchable_arguments(name))
        && let Some(function) = function_name(name)
    {
        if template_arguments_name_an_angle_operator(name) {
            // ncu cuts its own function name of such a kernel at the operator's `<` (`void
            // kcmp<&operator ` on the H200, ncu 2025.3.1), so the exact name finds nothing; a
            // regex on the function's identifier finds it, spelt either way.
            let pattern = format!(
                "regex:{FUNCTION_REGEX_HEAD}{}{FUNCTION_REGEX_TAIL}",
                escape(&function)
            );
            return (Some(KernelNameBase::Function), pattern);
        }
        return (Some(KernelNameBase::Function), function);
    }
    let pattern = format!("regex:(^| ){}(\\(|$)", demangled_pattern(name));
    (Some(KernelNameBase::Demangled), pattern)
}

/// Around a function's identifier in the `--kernel-name-base function` regex of a template on an
/// operator: after the start, a space or a namespace's `:`; before `<` or the end.
pub const FUNCTION_REGEX_HEAD: &str = "(^|[ :])";
pub const FUNCTION_REGEX_TAIL: &str = "(<|$)";

/// Whether `name`'s template arguments name an operator spelt with an angle bracket (`<`,
/// `<<=`, `->`, …): ncu's own bracket matching breaks on those (a lambda's `operator ()` is fine).
fn template_arguments_name_an_angle_operator(name: &str) -> bool {
    name.find('<').is_some_and(|open| {
        let arguments = &name[open..];
        ["operator<", "operator>", "operator->"]
            .iter()
            .any(|op| arguments.contains(op))
    })
}

/// Whether `name`'s template arguments hold what ncu spells its own way: a function's address
/// (`kf<&(sq(float))>`, ncu `kf<&sq>`), an operator, a lambda, a parameter list. Integer casts
/// (`(int)16`) are no such thing: the regex takes them.
fn has_unmatchable_arguments(name: &str) -> bool {
    let Some(open) = name.find('<') else {
        return false;
    };
    let arguments = &name[open..];
    let without_casts = INTEGER_CAST
        .as_ref()
        .map_or(Cow::Borrowed(arguments), |re| re.replace_all(arguments, ""));
    without_casts.contains(['&', '('])
        || arguments.contains("operator")
        || arguments.contains("lambda")
}

/// The short name whose launches a run keeps when [`ncu_kernel_filter`] widened `name` to its
/// function name (every instance of that function): `Some(name)` then, else `None`.
pub fn widened_instance(name: &str, base: Option<KernelNameBase>) -> Option<String> {
    match ncu_kernel_filter(name, base) {
        (Some(KernelNameBase::Function), function) if base.is_none() && function != name => {
            Some(name.to_string())
        }
        _ => None,
    }
}

/// Of the launches ncu profiled for a widened filter, keep those named `instance` (polyprof's
/// short name). Launches of the function's other instances are dropped from the records with
/// an info diagnostic saying how many (ncu.log keeps them all); when none is named `instance`
/// (a namespaced function name without template arguments, or a name from an older run's
/// demangler), all are kept and the diagnostic says so.
pub fn keep_instance(kernels: &mut Vec<KernelRecord>, instance: &str) -> Option<Diagnostic> {
    let total = kernels.len();
    let named = |k: &KernelRecord| {
        k.short_name == instance
            || (instance.contains('…') && fitted_name_matches(instance, &k.short_name))
    };
    let kept = kernels.iter().filter(|k| named(k)).count();
    let function = function_name(instance).unwrap_or_else(|| instance.to_string());
    if total == 0 || kept == total {
        return None;
    }
    if kept == 0 {
        return Some(Diagnostic {
            severity: Severity::Info,
            kind: "kernel_filter_all_instances".to_string(),
            message: format!(
                "ncu matched {total} launch(es) of function `{function}`, none named exactly \
                 `{instance}`, so all are kept"
            ),
            hint: Some(
                "for one instance, pass the short name a run of this polyprof version printed"
                    .to_string(),
            ),
            metric: None,
        });
    }
    kernels.retain(named);
    Some(Diagnostic {
        severity: Severity::Info,
        kind: "kernel_filter_other_instances".to_string(),
        message: format!(
            "kept the {kept} launch(es) of `{instance}`; ncu's filter on function `{function}` \
             also profiled {} launch(es) of its other instances (ncu.log has them)",
            total - kept
        ),
        hint: None,
        metric: None,
    })
}

/// The function's own name: the last `::` segment before the template arguments or parameters
/// (`at::<unnamed>::fill<4, …>` → `fill`). `None` when there is no identifier to take.
fn function_name(name: &str) -> Option<String> {
    let name = name
        .replace("<unnamed>", "")
        .replace("(anonymous namespace)", "");
    let head = name
        .find(['<', '('])
        .map_or(name.as_str(), |end| &name[..end]);
    let function = head.rsplit("::").next()?.trim();
    let identifier = !function.is_empty()
        && function
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    identifier.then(|| function.to_string())
}

/// The regex body for a short name: literal text escaped, integer template arguments with an
/// optional cast.
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
        out.push_str(&escape(&name[rest..start]));
        out.push_str(&escape(pre));
        out.push_str(r"(\([A-Za-z_][A-Za-z_0-9 ]*\))?");
        out.push_str(&escape(num));
        // c++filt's spelling of the same argument: `3ul` for ncu's `(unsigned long)3`.
        out.push_str("[uUlL]*");
        rest = post_start;
        at = post_start;
    }
    out.push_str(&escape(&name[rest..]));
    out
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
    fn several_integer_arguments_and_numbers_that_are_not_arguments() {
        let (_, filter) = ncu_kernel_filter("gemm<1, 2, 3>", None);
        assert!(matches(&filter, "gemm<(int)1, (int)2, (int)3>(float *)"));
        assert!(!matches(&filter, "gemm<(int)1, (int)3, (int)2>(float *)"));
        let (_, filter) = ncu_kernel_filter("k2<float, 8>", None);
        assert!(matches(&filter, "k2<float, (unsigned int)8>(float *)"));
        assert!(!matches(&filter, "k(int)2<float, 8>(float *)"));
    }

    #[test]
    fn namespaced_names_match_their_function_name() {
        // Short names polyprof printed on the H200 (PyTorch 2.11).
        let rng = "at::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4, void at::normal_and_transform<c10::BFloat16, float, at::CUDAGeneratorImpl *, void at::normal_kernel<at::CUDAGeneratorImpl *>(const at::TensorBase &, double, double, T1)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 4)]::operator ()() const::[lambda(float) (instance 1)]>(at::TensorIteratorBase &, T3, T4)";
        assert_eq!(
            ncu_kernel_filter(rng, None),
            (
                Some(KernelNameBase::Function),
                "distribution_elementwise_grid_stride_kernel".to_string()
            )
        );
        let fill =
            "at::vectorized_elementwise_kernel<4, at::FillFunctor<float>, std::array<char *, 1>>";
        assert_eq!(
            ncu_kernel_filter(fill, None),
            (
                Some(KernelNameBase::Function),
                "vectorized_elementwise_kernel".to_string()
            )
        );
        assert_eq!(
            ncu_kernel_filter("cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>", None).1,
            "Kernel2"
        );
        // Nothing usable before the template arguments: the demangled regex as a last resort.
        let (base, _) = ncu_kernel_filter("ns::<lambda>", None);
        assert_eq!(base, Some(KernelNameBase::Demangled));
    }

    /// The short names polyprof prints for kernels templated on a function (c++filt's spelling,
    /// tests/fixtures/ncu-h200-names/cxxfilt): found by function name, then kept by short name.
    #[test]
    fn templates_on_functions_and_operators_match_their_function_name() {
        for (short, function) in [
            ("kf<&(sq(float))>", "kf"),
            ("kcmp<&(operator<(P, P))>", "regex:(^|[ :])kcmp(<|$)"),
            ("kf<sq(float)>", "kf"),
            ("klam<use(float*, P*)::{lambda(float)#1}>", "klam"),
        ] {
            assert_eq!(
                ncu_kernel_filter(short, None),
                (Some(KernelNameBase::Function), function.to_string()),
                "{short}"
            );
            assert_eq!(widened_instance(short, None).as_deref(), Some(short));
        }
        // ncu's own function names of these kernels on the H200 (`--print-kernel-base function`).
        let (_, filter) = ncu_kernel_filter("kcmp<&(operator<(P, P))>", None);
        let re = Regex::new(filter.trim_start_matches("regex:")).unwrap();
        assert!(re.is_match("void kcmp<&operator "));
        assert!(re.is_match("kcmp"));
        assert!(!re.is_match("void kcmpx<&operator "));
        let mut kernels = vec![
            launch("kcmp<&(operator<(P, P))>"),
            launch("kcmp<&(operator>(P, P))>"),
        ];
        keep_instance(&mut kernels, "kcmp<&(operator<(P, P))>");
        assert_eq!(kernels.len(), 1);
        // Integer casts and suffixes still take the exact regex.
        for name in ["k<(int)16>", "kul<3ul>", "kmix<4u, 5l, true>"] {
            assert_eq!(
                ncu_kernel_filter(name, None).0,
                Some(KernelNameBase::Demangled),
                "{name}"
            );
        }
        let (_, filter) = ncu_kernel_filter("kul<3ul>", None);
        assert!(matches(&filter, "kul<(unsigned long)3>(float *)"));
    }

    /// Names as a fitted table prints them (results::names::fit_names) select their kernels.
    #[test]
    fn names_a_table_fitted_select_their_kernels() {
        let fitted = "vectorized_elementwise_kernel<…, FillFunctor<float>, …>";
        assert_eq!(
            ncu_kernel_filter(fitted, None),
            (
                Some(KernelNameBase::Function),
                "vectorized_elementwise_kernel".to_string()
            )
        );
        let float = "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >";
        let half = "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>, std::array<char*, 1ul> >";
        let mut kernels = vec![launch(float), launch(half), launch(float)];
        let note = keep_instance(&mut kernels, fitted).unwrap();
        assert_eq!(kernels.len(), 2, "{}", note.message);
        assert!(kernels.iter().all(|k| k.short_name == float));
        let (base, filter) = ncu_kernel_filter("sm80_xmma_fprop…_cudnn #2", None);
        assert_eq!(base, None);
        assert!(
            matches(&filter, "sm80_xmma_fprop_implicit_gemm_cudnn"),
            "{filter}"
        );
        assert!(
            !matches(&filter, "sm80_xmma_fprop_implicit_gemm"),
            "{filter}"
        );
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

    fn launch(short_name: &str) -> KernelRecord {
        KernelRecord {
            short_name: short_name.to_string(),
            ..Default::default()
        }
    }

    #[test]
    fn widened_filters_keep_only_the_instance_asked_for() {
        let float4 = "at::native::<unnamed>::fill<float, 4>";
        let half8 = "at::native::<unnamed>::fill<c10::Half, 8>";
        assert_eq!(widened_instance(float4, None).as_deref(), Some(float4));
        // Not widened: plain names, templates without namespace, regexes, an explicit base.
        assert_eq!(widened_instance("vector_add", None), None);
        assert_eq!(widened_instance("matmul_tiled<32>", None), None);
        assert_eq!(widened_instance("regex:fill", None), None);
        assert_eq!(
            widened_instance(float4, Some(KernelNameBase::Function)),
            None
        );

        let mut kernels = vec![launch(float4), launch(half8), launch(float4)];
        let note = keep_instance(&mut kernels, float4).unwrap();
        assert_eq!(kernels.len(), 2);
        assert_eq!(note.severity, Severity::Info);
        assert!(
            note.message.contains("kept the 2 launch(es)"),
            "{}",
            note.message
        );
        assert!(
            note.message.contains("1 launch(es) of its other instances"),
            "{}",
            note.message
        );
        // Exactly the instance already: nothing to say.
        assert_eq!(keep_instance(&mut kernels, float4), None);
        // No launch has that exact name (a function name without arguments): all are kept.
        let mut kernels = vec![launch(float4), launch(half8)];
        let note = keep_instance(&mut kernels, "at::native::fill").unwrap();
        assert_eq!(kernels.len(), 2);
        assert_eq!(note.kind, "kernel_filter_all_instances");
        assert_eq!(keep_instance(&mut Vec::new(), float4), None);
    }
}
