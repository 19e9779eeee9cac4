//! The calibration micro-kernels (`src/pipeline/calibrate/kernels.cu`) as polyprof plans them:
//! which ones run on a device, how much work each is asked for, the arguments that ask for it,
//! and the work each is then known to do. Pure: the pipeline runs the plan, and
//! [`super::calibration`] judges the profiler's records against it.

use serde::{Deserialize, Serialize};

use crate::model::calibration::CalibratedQuantity;

/// Independent FMA chains per thread in the vector kernels (`VECTOR_CHAINS` in kernels.cu).
pub const VECTOR_CHAINS: u64 = 8;
/// Independent accumulators per warp in the `mma.sync` kernels (`MMA_CHAINS`).
pub const MMA_CHAINS: u64 = 4;
/// `wgmma` instructions per commit group and iteration (`WGMMA_PER_GROUP`).
pub const WGMMA_PER_GROUP: u64 = 4;
/// Launches of the empty kernel whose median time is the launch floor (odd: one middle value).
pub const FLOOR_LAUNCHES: u64 = 51;
/// The copy moves at least this much, and at least [`COPY_L2_MULTIPLE`] L2 sizes.
pub const MIN_COPY_BYTES: u64 = 1 << 30;
/// Dirty lines still in L2 when the copy ends were never written to DRAM during it: a copy of
/// 64 L2 sizes bounds that shortfall of the written bytes to 1/64 (1.6 %).
pub const COPY_L2_MULTIPLE: u64 = 64;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// One micro-kernel of kernels.cu.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelKind {
    /// Does nothing: its time is the launch floor.
    Empty,
    /// Reads N bytes and writes N bytes.
    Copy,
    FmaFp32,
    FmaFp64,
    /// Scalar half FMAs (`fma.rn.f16`).
    FmaFp16,
    /// Packed half2 FMAs (`fma.rn.f16x2`): two FMAs per instruction.
    FmaFp16x2,
    /// `mma.sync` m16n8k16, FP16 sources, FP32 accumulator.
    MmaFp16,
    /// `mma.sync` m16n8k16, BF16 sources.
    MmaBf16,
    /// `mma.sync` m16n8k8, TF32 sources.
    MmaTf32,
    /// `mma.sync` m16n8k32, e4m3 sources (native on sm_89 and sm_120).
    MmaFp8,
    /// `wgmma` m64n64k32, e4m3 sources (sm_90a: Hopper's FP8 tensor path).
    WgmmaFp8,
}

impl KernelKind {
    /// The name kernels.cu takes on its command line and polyprof prints.
    pub fn name(self) -> &'static str {
        match self {
            KernelKind::Empty => "empty",
            KernelKind::Copy => "copy",
            KernelKind::FmaFp32 => "fma_fp32",
            KernelKind::FmaFp64 => "fma_fp64",
            KernelKind::FmaFp16 => "fma_fp16",
            KernelKind::FmaFp16x2 => "fma_fp16x2",
            KernelKind::MmaFp16 => "mma_fp16",
            KernelKind::MmaBf16 => "mma_bf16",
            KernelKind::MmaTf32 => "mma_tf32",
            KernelKind::MmaFp8 => "mma_fp8",
            KernelKind::WgmmaFp8 => "wgmma_fp8",
        }
    }

    /// The CUDA function (`extern "C"`, so the profiler reports it unmangled).
    pub fn function(self) -> String {
        format!("calib_{}", self.name())
    }

    /// The counters this kernel's known work checks.
    pub fn quantities(self) -> &'static [CalibratedQuantity] {
        use CalibratedQuantity as Q;
        match self {
            KernelKind::Empty => &[],
            KernelKind::Copy => &[Q::DramBytesRead, Q::DramBytesWrite],
            KernelKind::FmaFp32 => &[Q::Fp32Flops],
            KernelKind::FmaFp64 => &[Q::Fp64Flops],
            KernelKind::FmaFp16 | KernelKind::FmaFp16x2 => &[Q::Fp16Flops],
            KernelKind::MmaFp16 => &[Q::TensorFp16Flops],
            KernelKind::MmaBf16 => &[Q::TensorBf16Flops],
            KernelKind::MmaTf32 => &[Q::TensorTf32Flops],
            KernelKind::MmaFp8 | KernelKind::WgmmaFp8 => &[Q::TensorFp8Flops],
        }
    }

    /// FLOPs one unit does per loop iteration: a thread (vector kernels), a warp (`mma.sync`)
    /// or a warpgroup (`wgmma`). 2 per multiply-add; a half2 FMA is two.
    pub fn flops_per_unit_iteration(self) -> u64 {
        let mma = |m: u64, n: u64, k: u64| 2 * m * n * k;
        match self {
            KernelKind::Empty | KernelKind::Copy => 0,
            KernelKind::FmaFp32 | KernelKind::FmaFp64 | KernelKind::FmaFp16 => 2 * VECTOR_CHAINS,
            KernelKind::FmaFp16x2 => 4 * VECTOR_CHAINS,
            KernelKind::MmaFp16 | KernelKind::MmaBf16 => MMA_CHAINS * mma(16, 8, 16),
            KernelKind::MmaTf32 => MMA_CHAINS * mma(16, 8, 8),
            KernelKind::MmaFp8 => MMA_CHAINS * mma(16, 8, 32),
            KernelKind::WgmmaFp8 => WGMMA_PER_GROUP * mma(64, 64, 32),
        }
    }

    /// Threads per unit of [`flops_per_unit_iteration`](Self::flops_per_unit_iteration).
    pub fn threads_per_unit(self) -> u64 {
        match self {
            KernelKind::MmaFp16 | KernelKind::MmaBf16 | KernelKind::MmaTf32 => 32,
            KernelKind::MmaFp8 => 32,
            KernelKind::WgmmaFp8 => 128,
            _ => 1,
        }
    }
}

/// How much one kernel is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Amount {
    /// The empty kernel, launched this many times.
    Launches { launches: u64 },
    /// The copy: bytes read, and as many written.
    Bytes { bytes: u64 },
    /// A compute kernel: one launch of `blocks` × `threads`, `iterations` of its loop.
    Grid {
        blocks: u64,
        threads: u64,
        iterations: u64,
    },
}

/// One micro-kernel with its amount of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalibrationKernel {
    pub kernel: KernelKind,
    pub amount: Amount,
}

impl CalibrationKernel {
    /// The calibration program's arguments that run it (`fma_fp32 1056 256 16384`).
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![self.kernel.name().to_string()];
        match self.amount {
            Amount::Launches { launches } => args.push(launches.to_string()),
            Amount::Bytes { bytes } => args.push(bytes.to_string()),
            Amount::Grid {
                blocks,
                threads,
                iterations,
            } => args.extend([
                blocks.to_string(),
                threads.to_string(),
                iterations.to_string(),
            ]),
        }
        args
    }

    /// The work one launch is known to do, per checked quantity (bytes or FLOPs).
    pub fn expected(&self) -> Vec<(CalibratedQuantity, f64)> {
        let amount = match self.amount {
            Amount::Launches { .. } => return Vec::new(),
            Amount::Bytes { bytes } => bytes as f64,
            Amount::Grid {
                blocks,
                threads,
                iterations,
            } => {
                let units = blocks as f64 * (threads / self.kernel.threads_per_unit()) as f64;
                units * iterations as f64 * self.kernel.flops_per_unit_iteration() as f64
            }
        };
        self.kernel
            .quantities()
            .iter()
            .map(|quantity| (*quantity, amount))
            .collect()
    }
}

/// What the plan needs to know about the device (the calibration program's `info`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceFacts {
    /// `(major, minor)`: 9.0 on Hopper.
    pub compute_capability: (u32, u32),
    pub sm_count: u64,
    pub l2_bytes: u64,
    pub memory_bytes: u64,
}

/// A device's calibration plan: the empty kernel first, then the known-work kernels. Saved
/// beside the profiler's runs (`plan.json`), so a capture can be judged again offline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationPlan {
    pub device_name: String,
    pub facts: DeviceFacts,
    pub kernels: Vec<CalibrationKernel>,
}

impl CalibrationPlan {
    /// The plan for a device: [`floor_kernel`], then [`work_kernels`].
    pub fn for_device(device_name: &str, facts: DeviceFacts) -> Self {
        let mut kernels = vec![floor_kernel()];
        kernels.extend(work_kernels(&facts));
        CalibrationPlan {
            device_name: device_name.to_string(),
            facts,
            kernels,
        }
    }

    /// The launch floor's kernels (the first pass).
    pub fn floor(&self) -> Vec<CalibrationKernel> {
        self.kernels
            .iter()
            .filter(|k| k.kernel == KernelKind::Empty)
            .copied()
            .collect()
    }

    /// The known-work kernels (the counters pass).
    pub fn work(&self) -> Vec<CalibrationKernel> {
        self.kernels
            .iter()
            .filter(|k| k.kernel != KernelKind::Empty)
            .copied()
            .collect()
    }
}

/// The launch floor's kernel (profiled alone, with the duration only).
pub fn floor_kernel() -> CalibrationKernel {
    CalibrationKernel {
        kernel: KernelKind::Empty,
        amount: Amount::Launches {
            launches: FLOOR_LAUNCHES,
        },
    }
}

/// The known-work kernels for a device, sized so each runs about a millisecond at the device's
/// peak (grids of 8 blocks per SM, a fixed loop length), far above the launch floor.
pub fn work_kernels(device: &DeviceFacts) -> Vec<CalibrationKernel> {
    let blocks = device.sm_count.max(1) * 8;
    let grid = |kernel, threads, iterations| CalibrationKernel {
        kernel,
        amount: Amount::Grid {
            blocks,
            threads,
            iterations,
        },
    };
    let mut kernels = vec![
        CalibrationKernel {
            kernel: KernelKind::Copy,
            amount: Amount::Bytes {
                bytes: copy_bytes(device),
            },
        },
        grid(KernelKind::FmaFp32, 256, 16384),
        // FP64 runs at half the FP32 rate or less.
        grid(KernelKind::FmaFp64, 256, 8192),
        grid(KernelKind::FmaFp16, 256, 16384),
        grid(KernelKind::FmaFp16x2, 256, 16384),
    ];
    let cc = device.compute_capability;
    if cc >= (8, 0) {
        kernels.extend([
            grid(KernelKind::MmaFp16, 256, 4096),
            grid(KernelKind::MmaBf16, 256, 4096),
            grid(KernelKind::MmaTf32, 256, 4096),
        ]);
    }
    if let Some(fp8) = fp8_kernel(cc) {
        let kernel = match fp8 {
            KernelKind::WgmmaFp8 => grid(fp8, 128, 2048),
            _ => grid(fp8, 256, 4096),
        };
        kernels.push(kernel);
    }
    kernels
}

/// The kernel that drives the FP8 tensor path natively: `wgmma` on Hopper (sm_90, where
/// `mma.sync` e4m3 is emulated through FP16 MMA), `mma.sync` on Ada (8.9) and consumer
/// Blackwell (12.x); none elsewhere (sm_100's `mma.sync` e4m3 is emulated too, and its native
/// `tcgen05` path is not written here).
pub fn fp8_kernel(compute_capability: (u32, u32)) -> Option<KernelKind> {
    match compute_capability {
        (9, 0) => Some(KernelKind::WgmmaFp8),
        (8, 9) | (12, _) => Some(KernelKind::MmaFp8),
        _ => None,
    }
}

/// Bytes the copy moves: [`COPY_L2_MULTIPLE`] L2 sizes, at least [`MIN_COPY_BYTES`], at most an
/// eighth of the memory (source and destination together a quarter), in whole MiB.
pub fn copy_bytes(device: &DeviceFacts) -> u64 {
    let wanted = (device.l2_bytes.saturating_mul(COPY_L2_MULTIPLE)).max(MIN_COPY_BYTES);
    let cap = (device.memory_bytes / 8).max(MIB);
    (wanted.min(cap) / MIB).max(1) * MIB
}

/// How long a copy of `bytes` is in GiB, for messages.
pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / GIB as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> DeviceFacts {
        DeviceFacts {
            compute_capability: (9, 0),
            sm_count: 132,
            l2_bytes: 52_428_800,
            memory_bytes: 150_011_101_184,
        }
    }

    #[test]
    fn known_work_follows_the_launch_and_the_instruction_shape() {
        let fma = CalibrationKernel {
            kernel: KernelKind::FmaFp32,
            amount: Amount::Grid {
                blocks: 2,
                threads: 64,
                iterations: 10,
            },
        };
        // 128 threads x 10 iterations x 8 chains x 2 FLOPs.
        assert_eq!(
            fma.expected(),
            vec![(CalibratedQuantity::Fp32Flops, 20_480.0)]
        );
        let half2 = CalibrationKernel {
            kernel: KernelKind::FmaFp16x2,
            ..fma
        };
        assert_eq!(half2.expected()[0].1, 40_960.0);
        // 4 warps x 10 iterations x 4 chains x 2·16·8·16.
        let mma = CalibrationKernel {
            kernel: KernelKind::MmaBf16,
            ..fma
        };
        assert_eq!(
            mma.expected(),
            vec![(CalibratedQuantity::TensorBf16Flops, 655_360.0)]
        );
        // One warpgroup x 10 iterations x 4 instructions x 2·64·64·32.
        let wgmma = CalibrationKernel {
            kernel: KernelKind::WgmmaFp8,
            amount: Amount::Grid {
                blocks: 1,
                threads: 128,
                iterations: 10,
            },
        };
        assert_eq!(wgmma.expected()[0].1, 10_485_760.0);
        let copy = CalibrationKernel {
            kernel: KernelKind::Copy,
            amount: Amount::Bytes { bytes: 1 << 30 },
        };
        assert_eq!(
            copy.expected(),
            vec![
                (CalibratedQuantity::DramBytesRead, 1_073_741_824.0),
                (CalibratedQuantity::DramBytesWrite, 1_073_741_824.0)
            ]
        );
        assert!(floor_kernel().expected().is_empty());
        assert_eq!(fma.args(), ["fma_fp32", "2", "64", "10"]);
        assert_eq!(copy.args(), ["copy", "1073741824"]);
        assert_eq!(floor_kernel().args(), ["empty", "51"]);
    }

    #[test]
    fn the_plan_follows_the_architecture() {
        let names = |cc| {
            work_kernels(&DeviceFacts {
                compute_capability: cc,
                ..h200()
            })
            .iter()
            .map(|k| k.kernel.name())
            .collect::<Vec<_>>()
        };
        assert_eq!(
            names((9, 0)),
            [
                "copy",
                "fma_fp32",
                "fma_fp64",
                "fma_fp16",
                "fma_fp16x2",
                "mma_fp16",
                "mma_bf16",
                "mma_tf32",
                "wgmma_fp8"
            ]
        );
        assert_eq!(names((8, 9)).last(), Some(&"mma_fp8"));
        assert_eq!(names((12, 0)).last(), Some(&"mma_fp8"));
        assert_eq!(names((8, 0)).last(), Some(&"mma_tf32"));
        assert_eq!(names((10, 0)).last(), Some(&"mma_tf32"));
        assert_eq!(names((7, 0)).last(), Some(&"fma_fp16x2"));
        // Every warp kernel's threads are whole units.
        for kernel in work_kernels(&h200()) {
            if let Amount::Grid {
                blocks, threads, ..
            } = kernel.amount
            {
                assert_eq!(blocks, 132 * 8);
                assert_eq!(threads % kernel.kernel.threads_per_unit(), 0);
            }
        }
    }

    #[test]
    fn the_copy_is_many_l2_sizes_within_memory() {
        // H200: 64 x 50 MiB = 3.125 GiB.
        assert_eq!(copy_bytes(&h200()), 64 * 52_428_800);
        // A small L2 still copies 1 GiB.
        let small = DeviceFacts {
            l2_bytes: 4 << 20,
            ..h200()
        };
        assert_eq!(copy_bytes(&small), 1 << 30);
        // A small memory caps it at an eighth, in whole MiB.
        let tight = DeviceFacts {
            memory_bytes: 4 << 30,
            ..h200()
        };
        assert_eq!(copy_bytes(&tight), 512 << 20);
    }
}
