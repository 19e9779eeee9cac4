//! The task's precision against the precisions the work pass counted: which FLOPs of the
//! candidate's calls were done in a narrower precision than the task's outputs. The harness asks
//! [`needs_reference_work`] whether to profile the reference too (did the reference itself work
//! in that precision? cuDNN runs fp32 convolutions in TF32 by default, for one).

use crate::model::FlopCounts;
use crate::model::record::Precision;

use super::evidence::{EvalEvidence, WitnessEvidence};

/// The width of a floating dtype as the workers name it (torch's names without the prefix,
/// numpy's): 64, 32, 16 or 8 bits of floating point per real component; `None` for integers,
/// booleans and names it does not know.
pub fn dtype_bits(dtype: &str) -> Option<u32> {
    match dtype {
        "float64" | "double" | "complex128" | "cdouble" => Some(64),
        "float32" | "float" | "complex64" | "cfloat" => Some(32),
        "float16" | "half" | "bfloat16" | "complex32" | "chalf" => Some(16),
        name if name.starts_with("float8") => Some(8),
        _ => None,
    }
}

/// The task's precision: the widest floating dtype among the reference's outputs (every
/// recorded trial); `None` when no output is floating point.
pub fn task_float_bits(evidence: &EvalEvidence) -> Option<u32> {
    evidence
        .trials
        .iter()
        .flat_map(|t| &t.reference_outputs)
        .filter_map(|spec| dtype_bits(&spec.dtype))
        .max()
}

/// How many bits of precision a FLOP counter's math keeps, for the comparison with the task's
/// width. TF32 (19 bits) is narrower than FP32 unless the task allows it.
fn precision_bits(precision: Precision, allow_tf32: bool) -> u32 {
    match precision {
        Precision::TensorFp8 | Precision::TensorInt8 => 8,
        Precision::Fp16 | Precision::TensorFp16 | Precision::TensorBf16 => 16,
        Precision::TensorTf32 if allow_tf32 => 32,
        Precision::TensorTf32 => 19,
        Precision::Fp32 => 32,
        Precision::Fp64 | Precision::TensorFp64 => 64,
    }
}

/// Every launch's FLOPs of a work pass, added up precision by precision (the `HFMA2.MMA`
/// constant moves kept apart, see [`FlopCounts::vector_fp16`]). All its launches count: the work
/// pass profiles only inside the calls.
pub fn work_flops(work: &WitnessEvidence) -> FlopCounts {
    let mut total = FlopCounts::default();
    for counters in work.launches.iter().filter_map(|l| l.counters.as_ref()) {
        total.accumulate(&counters.flops);
    }
    total
}

/// The FLOPs of `flops` in a precision narrower than `task_bits`, by precision (only counts
/// above zero; FP16 without the constant moves).
pub fn lower_precision_flops(
    flops: &FlopCounts,
    task_bits: u32,
    allow_tf32: bool,
) -> Vec<(Precision, f64)> {
    flops
        .by_precision()
        .into_iter()
        .filter_map(|(precision, count)| Some((precision, count?)))
        .filter(|&(precision, count)| {
            count > 0.0 && precision_bits(precision, allow_tf32) < task_bits
        })
        .collect()
}

/// Whether the reference's work pass is needed: the candidate's work pass counted FLOPs in a
/// precision narrower than the task's (any at all: the reference pass only gathers evidence,
/// the audit's rule decides with its own margin). False without a work pass or a floating-point
/// output.
pub fn needs_reference_work(evidence: &EvalEvidence) -> bool {
    let (Some(work), Some(task_bits)) = (evidence.work.as_ref(), task_float_bits(evidence)) else {
        return false;
    };
    !lower_precision_flops(&work_flops(work), task_bits, evidence.settings.allow_tf32).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::evidence::LaunchCounters;
    use crate::eval::test_support::{evidence, witness};

    /// A work pass whose one call ran a kernel with `flops`.
    fn with_work(flops: FlopCounts) -> EvalEvidence {
        let mut e = evidence();
        let mut work = witness();
        work.run_dir = "work.000".into();
        work.launches.truncate(1);
        work.launches[0].ranges = vec!["polyprof/call/12".into()];
        work.launches[0].counters = Some(LaunchCounters {
            flops,
            ..LaunchCounters::default()
        });
        e.work = Some(work);
        e
    }

    // FLOP counts of the H200 capture (tests/fixtures/ncu-h200-tensor): a 4096³ bf16 matmul
    // and a 2048³ tf32 one.
    const BF16_4096: f64 = 137_438_953_472.0;
    const TF32_2048: f64 = 17_179_869_184.0;

    #[test]
    fn dtypes_have_their_floating_width() {
        assert_eq!(dtype_bits("float32"), Some(32));
        assert_eq!(dtype_bits("bfloat16"), Some(16));
        assert_eq!(dtype_bits("float8_e4m3fn"), Some(8));
        assert_eq!(dtype_bits("complex128"), Some(64));
        assert_eq!(dtype_bits("int64"), None);
        assert_eq!(dtype_bits("bool"), None);
        assert_eq!(task_float_bits(&evidence()), Some(32));
    }

    #[test]
    fn bf16_tensor_math_in_an_fp32_task_needs_the_reference() {
        let e = with_work(FlopCounts {
            tensor_bf16: Some(BF16_4096),
            ..FlopCounts::default()
        });
        assert!(needs_reference_work(&e));
        let lower = lower_precision_flops(&work_flops(e.work.as_ref().unwrap()), 32, false);
        assert_eq!(lower, [(Precision::TensorBf16, BF16_4096)]);
    }

    #[test]
    fn fp32_work_or_no_work_pass_does_not() {
        let honest = with_work(FlopCounts {
            fp32: Some(2.0 * 4096f64.powi(3)),
            tensor_bf16: Some(0.0),
            ..FlopCounts::default()
        });
        assert!(!needs_reference_work(&honest));
        assert!(!needs_reference_work(&evidence()));
    }

    #[test]
    fn tf32_counts_as_lower_unless_the_task_allows_it() {
        let mut e = with_work(FlopCounts {
            tensor_tf32: Some(TF32_2048),
            ..FlopCounts::default()
        });
        assert!(needs_reference_work(&e));
        e.settings.allow_tf32 = true;
        assert!(!needs_reference_work(&e));
    }

    #[test]
    fn hfma2_mma_constant_moves_are_not_fp16_math() {
        // The RNG fills of the capture run HFMA2.MMA moves that the SASS FP16 counter counts.
        let moves = with_work(FlopCounts {
            fp16: Some(4096.0),
            fp16_hfma2_mma: Some(4096.0),
            fp32: Some(1e6),
            ..FlopCounts::default()
        });
        assert!(!needs_reference_work(&moves));
        let real = with_work(FlopCounts {
            fp16: Some(8192.0),
            fp16_hfma2_mma: Some(4096.0),
            ..FlopCounts::default()
        });
        assert!(needs_reference_work(&real));
    }

    #[test]
    fn a_half_precision_task_is_judged_against_its_own_width() {
        let mut e = with_work(FlopCounts {
            tensor_fp16: Some(BF16_4096),
            ..FlopCounts::default()
        });
        for trial in &mut e.trials {
            for spec in &mut trial.reference_outputs {
                spec.dtype = "float16".into();
            }
        }
        assert!(!needs_reference_work(&e));
        e.work.as_mut().unwrap().launches[0]
            .counters
            .as_mut()
            .unwrap()
            .flops
            .tensor_fp8 = Some(1e9);
        assert!(needs_reference_work(&e));
        // Integer outputs have no floating precision to lower.
        for trial in &mut e.trials {
            for spec in &mut trial.reference_outputs {
                spec.dtype = "int64".into();
            }
        }
        assert!(!needs_reference_work(&e));
    }
}
