//! Reading demangled C++ kernel names as text: where the name ends and the parameter list
//! begins, what the return type is, and which `<`, `(` and `>` are brackets at all. Two spellings
//! need care: the anonymous namespace (`(anonymous namespace)` in GNU's, `<unnamed>` in NVIDIA's)
//! and operator names (`operator<`, `operator()`, `operator>>`), whose characters are no
//! brackets: `kcmp<&(operator<(P, P))>` closes after `)`, not at the end of the text.

/// The anonymous namespace as c++filt spells it.
pub const GNU_ANONYMOUS_NAMESPACE: &str = "(anonymous namespace)";
/// The anonymous namespace as NVIDIA's tools spell it.
pub const NVIDIA_ANONYMOUS_NAMESPACE: &str = "<unnamed>";

/// Operator spellings whose characters would read as brackets, longest first so that
/// `operator<<=` is not taken for `operator<` followed by text.
const BRACKET_OPERATORS: [&str; 13] = [
    "<=>", "<<=", ">>=", "->*", "()", "[]", "<<", ">>", "<=", ">=", "->", "<", ">",
];

/// The length of the token at the start of `text` that is one unit for bracket matching: an
/// anonymous namespace or `operator` with its symbol (`operator<`, `operator ()`); `None`
/// when `text` starts with neither. `after_identifier`: the character before `text` continues
/// an identifier (so `my_operator<` is no operator).
pub fn opaque_token(text: &str, after_identifier: bool) -> Option<usize> {
    for spelling in [GNU_ANONYMOUS_NAMESPACE, NVIDIA_ANONYMOUS_NAMESPACE] {
        if text.starts_with(spelling) {
            return Some(spelling.len());
        }
    }
    if after_identifier {
        return None;
    }
    let rest = text.strip_prefix("operator")?;
    let spaces = rest.len() - rest.trim_start_matches(' ').len();
    let symbol = &rest[spaces..];
    BRACKET_OPERATORS
        .iter()
        .find(|op| symbol.starts_with(**op))
        .map(|op| "operator".len() + spaces + op.len())
}

/// Each character of `name` with its bracket depth before it, operator names and anonymous
/// namespaces passed over as text (depth unchanged, `None` for their characters' role).
/// `on_bracket(index, ch, depth)` sees every bracket character that is one; returning
/// `Some(value)` stops the walk with it.
pub fn walk_brackets<T>(
    name: &str,
    mut on_bracket: impl FnMut(usize, char, i32) -> Option<T>,
) -> Option<T> {
    let mut depth = 0i32;
    let mut index = 0;
    while index < name.len() {
        let rest = &name[index..];
        let after_identifier = name[..index]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if let Some(length) = opaque_token(rest, after_identifier) {
            index += length;
            continue;
        }
        let Some(ch) = rest.chars().next() else {
            break;
        };
        if matches!(
            ch,
            '<' | '>' | '(' | ')' | '[' | ']' | '{' | '}' | ' ' | ','
        ) {
            if let Some(found) = on_bracket(index, ch, depth) {
                return Some(found);
            }
            match ch {
                '<' | '(' | '[' | '{' => depth += 1,
                '>' | ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
        }
        index += ch.len_utf8();
    }
    None
}

/// `void matmul_tiled<32>(const float *, float *, int)` → `matmul_tiled<32>`. Keeps template
/// arguments and namespaces; drops the return type and the parameter list.
pub fn short_kernel_name(name: &str) -> String {
    let trimmed = name.trim();
    // The parameter list starts at the first `(` outside template brackets.
    let end = walk_brackets(trimmed, |index, ch, depth| {
        (ch == '(' && depth <= 0).then_some(index)
    })
    .unwrap_or(trimmed.len());
    let head = trimmed[..end].trim_end();
    // The return type is separated from the name by the last space outside brackets.
    let mut start = 0;
    walk_brackets(head, |index, ch, depth| {
        if ch == ' ' && depth <= 0 {
            start = index + 1;
        }
        None::<()>
    });
    let short = &head[start..];
    if short.is_empty() {
        trimmed.to_string()
    } else {
        short.to_string()
    }
}

/// `text` without namespace qualifiers (`at::native::FillFunctor<c10::Half>` →
/// `FillFunctor<Half>`); a scope after a function or lambda (`f(…)::{lambda…}`) stays.
pub fn without_namespaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            word.push(ch);
            continue;
        }
        let scope = ch == ':' && chars.peek() == Some(&':');
        if scope && !word.is_empty() && word != "const" {
            chars.next();
            word.clear();
            continue;
        }
        out.push_str(&word);
        word.clear();
        out.push(ch);
    }
    out.push_str(&word);
    out.replace("<unnamed>::", "")
        .replace("(anonymous namespace)::", "")
}

/// Whether `short_name` is a kernel a table printed as `fitted` (results::names::fit_names):
/// the same text without namespaces, each `…` standing for what was left out, a ` #N` number
/// ignored (so a numbered name matches each kernel of its group).
pub fn fitted_name_matches(fitted: &str, short_name: &str) -> bool {
    let fitted = match fitted.rsplit_once(" #") {
        Some((name, number))
            if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) =>
        {
            name
        }
        _ => fitted,
    };
    if !fitted.contains('…') {
        return fitted == short_name || fitted == without_namespaces(short_name);
    }
    let target = without_namespaces(short_name);
    let pieces: Vec<&str> = fitted.split('…').collect();
    let (Some(first), Some(last)) = (pieces.first(), pieces.last()) else {
        return false;
    };
    if !target.starts_with(first) || target.len() < first.len() + last.len() {
        return false;
    }
    let mut at = first.len();
    for piece in &pieces[1..pieces.len() - 1] {
        match target[at..].find(piece) {
            Some(found) => at += found + piece.len(),
            None => return false,
        }
    }
    target.len() >= at + last.len() && target.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_return_type_and_parameters() {
        assert_eq!(
            short_kernel_name("void matmul_tiled<32>(const float *, const float *, float *, int)"),
            "matmul_tiled<32>"
        );
        assert_eq!(
            short_kernel_name("vector_add(const float *, const float *, float *, int)"),
            "vector_add"
        );
        assert_eq!(
            short_kernel_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>(int, T2, T3)"
            ),
            "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>"
        );
        assert_eq!(
            short_kernel_name("ampere_sgemm_128x64_nn"),
            "ampere_sgemm_128x64_nn"
        );
    }

    #[test]
    fn fitted_names_match_the_kernels_they_stand_for() {
        let fill = "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >";
        let half = "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>, std::array<char*, 1ul> >";
        for fitted in [
            "vectorized_elementwise_kernel<…, FillFunctor<float>, …>",
            "vectorized_elementwise_kernel<…, FillFunc…at>, array<ch…ul> >",
            "vectorized_elementwise_kernel<…, FillFunctor<float>, …> #2",
        ] {
            assert!(fitted_name_matches(fitted, fill), "{fitted}");
            assert!(!fitted_name_matches(fitted, half), "{fitted}");
        }
        assert!(fitted_name_matches("vector_add", "vector_add"));
        assert!(!fitted_name_matches("vector_add", "vector_add2"));
        assert!(fitted_name_matches(
            "sm80_xmma…cudnn",
            "sm80_xmma_fprop_cudnn"
        ));
        assert!(!fitted_name_matches("sm80_xmma…cudnn", "sm80_xmma"));
        assert_eq!(
            without_namespaces("at::native::(anonymous namespace)::fill<c10::Half>"),
            "fill<Half>"
        );
    }

    /// c++filt's spellings of kernels templated on a function (g++'s manglings in
    /// tests/fixtures/ncu-h200-names/cxxfilt): the operator's `<` and the address's parentheses
    /// are no brackets of the kernel's name.
    #[test]
    fn operators_and_anonymous_namespaces_are_no_brackets() {
        assert_eq!(
            short_kernel_name("void kcmp<&(operator<(P, P))>(P*)"),
            "kcmp<&(operator<(P, P))>"
        );
        assert_eq!(
            short_kernel_name("void kf<&(sq(float))>(float*)"),
            "kf<&(sq(float))>"
        );
        assert_eq!(
            short_kernel_name("void ns::(anonymous namespace)::anon<7>(float*)"),
            "ns::(anonymous namespace)::anon<7>"
        );
        assert_eq!(
            short_kernel_name("void k<&operator>>, &operator()>(int)"),
            "k<&operator>>, &operator()>"
        );
        assert_eq!(
            short_kernel_name("void my_operator<1>(int)"),
            "my_operator<1>"
        );
        assert_eq!(
            short_kernel_name("void at::<unnamed>::fill<4>(int)"),
            "at::<unnamed>::fill<4>"
        );
    }
}
