//! Kernel names as polyprof prints them. ncu's own demangled spelling is not stable: on the H200
//! (ncu 2025.3.1) one PyTorch kernel printed as `void at::<unnamed>::distribution_…<…, void
//! templates::normal_and_transform<c10::BFloat16, …` in a plain run but as `void
//! unnamed>::distribution_…<…, void normal_and_transform<BFloat16, …` once a `-k` filter was on
//! the command line, so names from two runs of one program did not match. So polyprof asks ncu
//! for mangled names (`--print-kernel-base mangled`, the same bytes in every run) and demangles
//! them here; names that are no Itanium mangling (C kernels, Triton, cuBLAS's `nvjet_…`) and
//! logs captured with ncu's demangled names pass unchanged.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::model::kernel_name::walk_brackets;
use crate::model::record::short_kernel_name;

/// Distinct names kept per parsing thread. A run repeats a few hundred names over thousands of
/// launches, and demangling one costs 20–50 µs (PyTorch's lambda-laden names the most): without
/// the cache it would dominate the parse.
const CACHE_ENTRIES: usize = 4096;

thread_local! {
    static DEMANGLED: RefCell<HashMap<String, String>> = RefCell::new(HashMap::new());
}

/// An integer literal that cpp_demangle writes with a cast and c++filt with a suffix:
/// `(unsigned long)3` is `3ul`.
static CAST_LITERAL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"\((unsigned int|unsigned long|unsigned long long|long|long long)\)(-?[0-9]+)\b")
        .ok()
});

/// The Itanium demangling of `mangled` in binutils' c++filt spelling (`3ul`,
/// `(anonymous namespace)`, `{lambda(float)#1}`, `float const*`, no return type on a function
/// that only scopes a local name, `&(f(float))` for a function's address); `None` when
/// `mangled` is not a well-formed mangled name. tests/fixtures/ncu-h200-names/cxxfilt holds
/// the manglings it is checked on.
pub fn demangle(mangled: &str) -> Option<String> {
    if !mangled.starts_with("_Z") {
        return None;
    }
    let symbol = cpp_demangle::Symbol::new(mangled.as_bytes()).ok()?;
    let options = cpp_demangle::DemangleOptions::new();
    let full = symbol.demangle_with_options(&options).ok()?;
    let bare = symbol
        .demangle_with_options(&options.no_return_type())
        .ok()?;
    let text = local_scopes_without_return_types(&full, &bare);
    let text = parenthesized_addresses(&text);
    Some(suffixed_literals(&text).into_owned())
}

/// `(unsigned long)3` → `3ul`, `(long)-2` → `-2l`, as c++filt writes integer literals of the
/// types that have a suffix (others keep their cast: `(char)65`).
fn suffixed_literals(text: &str) -> Cow<'_, str> {
    let Some(re) = CAST_LITERAL.as_ref() else {
        return Cow::Borrowed(text);
    };
    re.replace_all(text, |caps: &regex::Captures| {
        let suffix = match &caps[1] {
            "unsigned int" => "u",
            "unsigned long" => "ul",
            "unsigned long long" => "ull",
            "long" => "l",
            _ => "ll",
        };
        format!("{}{suffix}", &caps[2])
    })
}

/// `full` (every function's return type) with the return types c++filt leaves out: those of
/// functions that only scope a local name (`void at::f<int>(int)::{lambda()#1}` is
/// `at::f<int>(int)::{lambda()#1}`). `bare` is the same symbol without any return type; the
/// two are aligned to find each return type. When they do not align, `full` is kept.
fn local_scopes_without_return_types(full: &str, bare: &str) -> String {
    let (f, b) = (full.as_bytes(), bare.as_bytes());
    let mut out: Vec<u8> = Vec::with_capacity(f.len());
    let (mut i, mut j) = (0, 0);
    // The last place both texts were at a token's start: a return type starts at one.
    let mut boundary = (0, 0, 0);
    while i < f.len() {
        if j < b.len() && f[i] == b[j] {
            if i == 0 || (matches!(f[i - 1], b' ' | b'<' | b'(') && f[i] != b' ') {
                boundary = (i, j, out.len());
            }
            out.push(f[i]);
            i += 1;
            j += 1;
            continue;
        }
        let at_token_start = i == 0 || matches!(f[i - 1], b' ' | b'<' | b'(');
        if !at_token_start {
            (i, j) = (boundary.0, boundary.1);
            out.truncate(boundary.2);
        }
        let probe = &b[j..(j + 32).min(b.len())];
        let Some(length) =
            (1..=f.len() - i).find(|&k| f[i + k - 1] == b' ' && f[i + k..].starts_with(probe))
        else {
            return full.to_string();
        };
        if !scopes_a_local_name(bare.get(j..).unwrap_or("")) {
            out.extend_from_slice(&f[i..i + length]);
        }
        i += length;
        boundary = (i, j, out.len());
    }
    if j != b.len() {
        return full.to_string();
    }
    String::from_utf8(out).unwrap_or_else(|_| full.to_string())
}

/// Whether the function whose name starts `text` (after its return type) is followed, past its
/// parameter list and qualifiers, by `::`: it scopes a local name.
fn scopes_a_local_name(text: &str) -> bool {
    let Some(open) = walk_brackets(text, |index, ch, depth| {
        (ch == '(' && depth == 0).then_some(index)
    }) else {
        return false;
    };
    let Some(close) = walk_brackets(&text[open..], |index, ch, depth| {
        (ch == ')' && depth == 1).then_some(open + index)
    }) else {
        return false;
    };
    let mut rest = &text[close + 1..];
    for qualifier in [" const", " volatile", " &&", " &"] {
        rest = rest.strip_prefix(qualifier).unwrap_or(rest);
    }
    rest.starts_with("::")
}

/// A template argument that takes a function's address with its signature, `&f(float)`, as
/// c++filt writes it: `&(f(float))`.
fn parenthesized_addresses(text: &str) -> String {
    let mut inserts: Vec<(usize, usize)> = Vec::new();
    walk_brackets(text, |index, ch, _| {
        let start = index + 1 + usize::from(ch == ',');
        if matches!(ch, '<' | ',')
            && let Some(argument) = text.get(start..)
            && argument.starts_with('&')
            && !argument.starts_with("&(")
            && let Some(end) = argument_end(argument)
        {
            inserts.push((start + 1, start + end));
        }
        None::<()>
    });
    if inserts.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 2 * inserts.len());
    let mut at = 0;
    let mut closes: Vec<usize> = Vec::new();
    for (open, close) in inserts {
        while closes.last().is_some_and(|&c| c <= open) {
            let c = closes.pop().unwrap_or(0);
            out.push_str(&text[at..c]);
            out.push(')');
            at = c;
        }
        out.push_str(&text[at..open]);
        out.push('(');
        at = open;
        closes.push(close);
    }
    while let Some(c) = closes.pop() {
        out.push_str(&text[at..c]);
        out.push(')');
        at = c;
    }
    out.push_str(&text[at..]);
    out
}

/// Where the template argument at the start of `argument` ends (its `,` or closing `>`), when
/// it holds a parameter list (`&f(float)`); `None` for a plain address (`&x`).
fn argument_end(argument: &str) -> Option<usize> {
    let mut has_parameters = false;
    walk_brackets(argument, |index, ch, depth| match ch {
        '(' if depth == 0 => {
            has_parameters = true;
            None
        }
        ',' | '>' if depth == 0 => Some(index),
        _ => None,
    })
    .filter(|_| has_parameters)
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
/// Integer arguments are spelled as c++filt spells them (`4u`, `3ul`); the kernel filter
/// matches them against ncu's `(unsigned int)4` either way.
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
            Some("ns::kernel<float, 4u>")
        );
    }

    /// Identifiers are bytes to the mangling: names with non-ASCII ones, cut short or garbled,
    /// come out demangled or unchanged, never as a panic.
    #[test]
    fn odd_manglings_never_panic() {
        for mangled in [
            "_Z2kfIL_Z5étéfEEvPf",
            "_ZZN2ns5étéIiEEvT_ENKUlvE_clEv",
            "_ZN2ns5étéIiEEvT_",
            "_Z2kfIXadL_Z2sqfEEEvPf",
            "_Z2kfIXadL_Z2sqfEE",
            "_Z4kcmpIXadL_Zlt1PS0_EE",
            "_ZZZ",
            "_Z1kILm",
        ] {
            let name = printed_name(mangled);
            assert!(!name.is_empty(), "{mangled}");
        }
        // cpp_demangle takes ASCII identifiers only; the name is kept as ncu printed it.
        assert_eq!(printed_name("_ZN2ns5étéIiEEvT_"), "_ZN2ns5étéIiEEvT_");
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

    /// Every mangling in tests/fixtures/ncu-h200-names/cxxfilt (the ncu fixtures' and g++'s),
    /// each with what binutils' c++filt printed for it.
    #[test]
    fn demangled_names_are_spelled_as_cxxfilt_spells_them() {
        let corpus = include_str!("../../../tests/fixtures/ncu-h200-names/cxxfilt/manglings.tsv");
        let mut differ = Vec::new();
        for line in corpus.lines() {
            let (mangled, gnu) = line.split_once('\t').unwrap();
            let ours = demangle(mangled).unwrap_or_else(|| mangled.to_string());
            if ours != gnu {
                differ.push(format!("{mangled}\n  ours: {ours}\n  gnu:  {gnu}"));
            }
        }
        assert!(
            differ.is_empty(),
            "{} differ:\n{}",
            differ.len(),
            differ.join("\n")
        );
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
                "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, at::native::templates::cuda::normal_and_transform<"
            ),
            "{name}"
        );
        let short = short_kernel_name(&name);
        assert!(
            short.starts_with(
                "at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<"
            ),
            "{short}"
        );
        assert!(short.ends_with("::{lambda(int, float)#1}>"), "{short}");
    }
}
