//! The calibration's known-work program on NVIDIA GPUs: `calibration_kernels.cu`, built with
//! nvcc for the GPU's own architecture (the plan of kernels and their work are the results
//! layer's, `results::calibration_kernels`, and must match this source: a test in
//! `pipeline::calibrate::build` holds them together).

use std::path::Path;

use crate::profilers::capability::CalibrationProgram;
use crate::profilers::capability::tool::Tool;

pub const PROGRAM: CalibrationProgram = CalibrationProgram {
    source_file: "kernels.cu",
    source: include_str!("calibration_kernels.cu"),
    program_file: "calibrate",
    compiler: Tool {
        program: "nvcc",
        what: "nvcc",
        missing: "not on PATH, so the calibration kernels cannot be compiled; install the CUDA \
                  toolkit and put its bin folder on PATH (e.g. `export \
                  PATH=/usr/local/cuda/bin:$PATH`)",
    },
    compile_args: nvcc_args,
    arch: nvcc_arch,
};

/// The nvcc arguments that compile `source` into `program` for `arch` (`sm_90a`).
fn nvcc_args(arch: &str, source: &Path, program: &Path) -> Vec<String> {
    vec![
        "-O3".to_string(),
        format!("-arch={arch}"),
        "-lineinfo".to_string(),
        "-o".to_string(),
        program.display().to_string(),
        source.display().to_string(),
    ]
}

/// nvcc's `-arch` for a compute capability: the architecture-specific `sm_90a` on Hopper (its
/// `wgmma` needs it), `sm_XY` elsewhere.
fn nvcc_arch(compute_capability: (u32, u32)) -> String {
    let (major, minor) = compute_capability;
    if (major, minor) == (9, 0) {
        "sm_90a".to_string()
    } else {
        format!("sm_{major}{minor}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hopper_gets_its_architecture_specific_target() {
        assert_eq!(nvcc_arch((9, 0)), "sm_90a");
        assert_eq!(nvcc_arch((8, 9)), "sm_89");
        assert_eq!(nvcc_arch((12, 0)), "sm_120");
        let args = nvcc_args("sm_90a", Path::new("k.cu"), Path::new("p"));
        assert!(args.contains(&"-arch=sm_90a".to_string()), "{args:?}");
    }
}
