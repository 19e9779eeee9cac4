//! Whether a witnessed launch is one of the candidate's own kernels: its base function name
//! (no return type, parameters, template arguments or namespaces) is a name the candidate's
//! source defines (`evidence.candidate_kernels`).

use crate::model::kernel_name::{short_kernel_name, walk_brackets, without_namespaces};

/// `void ns::tiled_gemm<32, float>(float *, int)` → `tiled_gemm`; `add_kernel` stays.
pub fn base_function_name(name: &str) -> String {
    let short = short_kernel_name(name);
    let end = walk_brackets(&short, |index, ch, depth| {
        (ch == '<' && depth == 0).then_some(index)
    })
    .unwrap_or(short.len());
    without_namespaces(short[..end].trim()).trim().to_string()
}

/// The name in `candidates` that `short_name` is a launch of, if any.
pub fn matching_candidate<'a>(short_name: &str, candidates: &'a [String]) -> Option<&'a str> {
    let base = base_function_name(short_name);
    candidates
        .iter()
        .find(|candidate| is_launch_of(&base, candidate))
        .map(String::as_str)
}

fn is_launch_of(base: &str, candidate: &str) -> bool {
    if candidate.is_empty() {
        return false;
    }
    if base == candidate {
        return true;
    }
    // Older Triton appends the argument specialization: `add_kernel_0d1d2de`.
    if let Some(suffix) = base
        .strip_prefix(candidate)
        .and_then(|rest| rest.strip_prefix('_'))
        && !suffix.is_empty()
        && suffix
            .chars()
            .all(|c| matches!(c, '0'..='9' | 'c' | 'd' | 'e'))
    {
        return true;
    }
    // A name the parser could not demangle still holds the identifier length-prefixed:
    // `_Z11relu_kernelPKfPfi`.
    base.starts_with("_Z") && mangled_contains(base, candidate)
}

fn mangled_contains(mangled: &str, identifier: &str) -> bool {
    let needle = format!("{}{identifier}", identifier.len());
    mangled.match_indices(&needle).any(|(at, _)| {
        !mangled[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_drop_everything_but_the_function() {
        assert_eq!(
            base_function_name("void ns::tiled_gemm<32, float>(float *, int)"),
            "tiled_gemm"
        );
        assert_eq!(
            base_function_name(
                "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>"
            ),
            "vectorized_elementwise_kernel"
        );
        assert_eq!(
            base_function_name("(anonymous namespace)::relu_kernel"),
            "relu_kernel"
        );
        assert_eq!(base_function_name("add_kernel"), "add_kernel");
    }

    #[test]
    fn launches_match_the_candidates_names_only() {
        let candidates = vec!["relu_kernel".to_string(), "add_kernel".to_string()];
        assert_eq!(
            matching_candidate("void relu_kernel(const float *, float *, int)", &candidates),
            Some("relu_kernel")
        );
        assert_eq!(
            matching_candidate("add_kernel_0d1d2de", &candidates),
            Some("add_kernel")
        );
        assert_eq!(
            matching_candidate("_Z11relu_kernelPKfPfi", &candidates),
            Some("relu_kernel")
        );
        assert_eq!(matching_candidate("relu_kernel_v2", &candidates), None);
        assert_eq!(matching_candidate("add_kernel_fast", &candidates), None);
        assert_eq!(
            matching_candidate("at::native::relu_kernel_impl<float>", &candidates),
            None
        );
        assert_eq!(matching_candidate("_Z111relu_kernelPKf", &candidates), None);
        assert_eq!(matching_candidate("relu_kernel", &[]), None);
    }
}
