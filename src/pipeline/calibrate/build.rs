//! The calibration program: the calibration capability's known-work source (embedded in
//! polyprof) written into the calibration's work directory and compiled there with the
//! capability's compiler for the GPU's own architecture.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::device::run_blocking;
use super::error::CalibrateError;
use crate::model::probe::ProbeRequest;
use crate::profilers::capability::CalibrationProgram;

/// A compiler builds the program in seconds; one still running after this is stuck.
const COMPILE_TIMEOUT: Duration = Duration::from_secs(600);

/// Write `program`'s source into `dir` and compile it with `compiler` (the capability's
/// compiler, found on PATH) for `arch`; the program's path.
pub async fn compile(
    program: &CalibrationProgram,
    compiler: &Path,
    arch: &str,
    dir: &Path,
    cancel: &CancellationToken,
) -> Result<PathBuf, CalibrateError> {
    let source = dir.join(program.source_file);
    let output_file = dir.join(program.program_file);
    crate::model::atomic_file::write_atomic(&source, program.source.as_bytes()).map_err(|e| {
        CalibrateError::Cache {
            action: "write the calibration kernels",
            path: source.clone(),
            source: e,
        }
    })?;
    let mut request = ProbeRequest::new(compiler, &[], COMPILE_TIMEOUT);
    request.args = (program.compile_args)(arch, &source, &output_file);
    let output = run_blocking(request, cancel).await?;
    if !output.success() || !output_file.is_file() {
        return Err(CalibrateError::Compile {
            arch: arch.to_string(),
            status: output.status_text(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            file: source,
        });
    }
    Ok(output_file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profilers::capability::Capability;
    use crate::profilers::registry;
    use crate::results::calibration_kernels::{
        KernelKind, MMA_CHAINS, VECTOR_CHAINS, WGMMA_PER_GROUP,
    };

    /// The known-work program of the only backend with a calibration capability today.
    fn program() -> &'static CalibrationProgram {
        registry::capability("ncu", Capability::Calibration, |c| c.calibration)
            .unwrap()
            .unwrap()
            .program()
    }

    /// The source's constant `name`, from its `#define`.
    fn define(name: &str) -> u64 {
        let source = program().source;
        let prefix = format!("#define {name} ");
        source
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or_else(|| panic!("kernels.cu has no `#define {name} N`"))
    }

    #[test]
    fn the_known_work_in_rust_is_the_work_in_the_cuda_source() {
        assert_eq!(define("VECTOR_CHAINS"), VECTOR_CHAINS);
        assert_eq!(define("MMA_CHAINS"), MMA_CHAINS);
        assert_eq!(define("WGMMA_PER_GROUP"), WGMMA_PER_GROUP);
        let kinds = [
            KernelKind::Empty,
            KernelKind::Copy,
            KernelKind::FmaFp32,
            KernelKind::FmaFp64,
            KernelKind::FmaFp16,
            KernelKind::FmaFp16x2,
            KernelKind::MmaFp16,
            KernelKind::MmaBf16,
            KernelKind::MmaTf32,
            KernelKind::MmaFp8,
            KernelKind::WgmmaFp8,
        ];
        for kind in kinds {
            let function = format!("extern \"C\" __global__ void {}(", kind.function());
            assert!(program().source.contains(&function), "{function}");
            if !matches!(kind, KernelKind::Empty | KernelKind::Copy) {
                // Listed in the program's table, with its thread unit.
                let entry = format!("{{\"{}\", {}, ", kind.name(), kind.function());
                let line = program()
                    .source
                    .lines()
                    .find(|l| l.trim_start().starts_with(&entry))
                    .unwrap_or_else(|| panic!("no table entry {entry}"));
                let unit = line.trim().trim_end_matches("},").rsplit(',').next();
                assert_eq!(
                    unit.map(str::trim),
                    Some(kind.threads_per_unit().to_string().as_str()),
                    "{line}"
                );
            }
        }
        // The instruction shapes the FLOPs per instruction assume.
        for shape in [
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
            "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
            "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3",
            "fma.rn.f16x2 ",
        ] {
            assert!(program().source.contains(shape), "{shape}");
        }
    }

    /// Compiles the program for Hopper (`sm_90a`, the wgmma path) and Ada (`sm_89`, the
    /// mma.sync FP8 path) with the nvcc on PATH. Skipped, and said so on stderr, where there
    /// is no nvcc.
    #[tokio::test]
    async fn the_kernels_compile_where_nvcc_is_present() {
        let Ok(nvcc) = which::which("nvcc") else {
            eprintln!("skipped: nvcc is not on PATH, so kernels.cu was not compiled");
            return;
        };
        let cancel = CancellationToken::new();
        for arch in ["sm_90a", "sm_89"] {
            let dir = tempfile::tempdir().unwrap();
            let built = compile(program(), &nvcc, arch, dir.path(), &cancel)
                .await
                .unwrap_or_else(|e| panic!("{arch}: {e}"));
            assert!(built.is_file());
        }
    }
}
