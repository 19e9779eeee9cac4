//! The kernels a candidate's source defines, read from the file by polyprof (never asked of the
//! candidate's process): CUDA `__global__` functions (inline `load_inline` sources are string
//! literals in the same file) and Triton `@triton.jit` / `@triton.autotune` functions.

use std::sync::LazyLock;

use regex::Regex;

static CUDA_GLOBAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:static\s+)?(?:inline\s+)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?([A-Za-z_]\w*)")
        .expect("a valid pattern")
});

static TRITON_DEF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)^\s*@(?:triton\.)?(?:jit|autotune)\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+([A-Za-z_]\w*)",
    )
    .expect("a valid pattern")
});

/// Names of the kernels `source` defines, sorted, each once.
pub fn candidate_kernels(source: &str) -> Vec<String> {
    let mut names: Vec<String> = CUDA_GLOBAL
        .captures_iter(source)
        .chain(TRITON_DEF.captures_iter(source))
        .filter_map(|c| c.get(1).map(|m| m.as_str().to_string()))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_inline_cuda_and_triton_kernels() {
        let source = r#"
cuda_src = """
__global__ void relu_kernel(const float* x, float* y, int n) { }
__global__ __launch_bounds__(256) void fused_add(float* a) { }
template <int N> __global__ void tiled(float* a) { }
"""
@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass

@triton.autotune(configs=[], key=["n"])
@triton.jit
def matmul_kernel(a, b):
    pass

def helper():
    pass
"#;
        assert_eq!(
            candidate_kernels(source),
            [
                "add_kernel",
                "fused_add",
                "matmul_kernel",
                "relu_kernel",
                "tiled"
            ]
        );
    }

    #[test]
    fn plain_torch_defines_none() {
        assert!(candidate_kernels("import torch\nclass ModelNew: pass\n").is_empty());
    }
}
