//! Was the work done in the precision the task asks for? The task's precision is its reference
//! outputs' floating dtype; FLOPs the candidate's work pass counted in a narrower precision
//! (vector FP16 without the `HFMA2.MMA` constant moves; tensor FP16, BF16, FP8, INT8; TF32
//! unless the task allows it) beyond a small share are a finding, unless the reference's own
//! work pass shows the same precision (the task itself does it: cuDNN runs FP32 convolutions on
//! TF32 tensor cores by default).

use serde_json::{Map, Value, json};

use super::{Facts, Measure, RuleOutcome, finding};
use crate::eval::counter_trust::{calibration_note, precision_name, untrusted_flops};
use crate::eval::evidence::{EvalEvidence, TensorSpec};
use crate::eval::verdict::FindingKind;
use crate::eval::work_pass::{candidate_work, total_flops, usable, work_calls};
use crate::model::record::{FlopCounts, Precision};

pub const CHECK: &str = "precision";
/// Narrower FLOPs above this share of all counted FLOPs are lowered precision. The known phantom
/// (FP16 constant moves through the tensor pipe) is removed before the share is taken; 1 %
/// leaves room for stray conversions while a lowered matmul or convolution reads near 100 %.
pub const SHARE: f64 = 0.01;

/// A floating dtype: its name as findings print it and its significand bits (stored + 1).
#[derive(Debug, Clone, Copy, PartialEq)]
struct TaskPrecision {
    name: &'static str,
    bits: u32,
}

/// The floating precision of a dtype name (torch's or numpy's spelling); `None` for integers,
/// booleans and anything unknown.
fn floating(dtype: &str) -> Option<TaskPrecision> {
    let (name, bits) = match dtype {
        "float64" | "double" | "complex128" | "cdouble" => ("fp64", 53),
        "float32" | "float" | "complex64" | "cfloat" => ("fp32", 24),
        "float16" | "half" | "complex32" | "chalf" => ("fp16", 11),
        "bfloat16" => ("bf16", 8),
        other if other.starts_with("float8") => ("fp8", 4),
        _ => return None,
    };
    Some(TaskPrecision { name, bits })
}

/// The significand bits a precision computes with. INT8 tensor ops are quantized math, narrower
/// than any floating task.
fn bits(precision: Precision, allow_tf32: bool) -> u32 {
    match precision {
        Precision::Fp64 | Precision::TensorFp64 => 53,
        Precision::Fp32 => 24,
        Precision::TensorTf32 if allow_tf32 => 24,
        Precision::Fp16 | Precision::TensorFp16 | Precision::TensorTf32 => 11,
        Precision::TensorBf16 => 8,
        Precision::TensorFp8 => 4,
        Precision::TensorInt8 => 1,
    }
}

/// The task's precision: the narrowest floating dtype among the reference's outputs (a task with
/// an fp16 output may compute in fp16), else among its inputs (an argmax of fp32 values).
fn task_precision(evidence: &EvalEvidence) -> Option<TaskPrecision> {
    let narrowest = |specs: &mut dyn Iterator<Item = &TensorSpec>| {
        specs
            .filter(|s| s.value.is_none())
            .filter_map(|s| floating(&s.dtype))
            .min_by_key(|p| p.bits)
    };
    narrowest(
        &mut evidence
            .trials
            .iter()
            .flat_map(|t| t.reference_outputs.iter()),
    )
    .or_else(|| narrowest(&mut evidence.trials.iter().flat_map(|t| t.inputs.iter())))
}

/// Each precision's share of all counted FLOPs (INT8 ops included); empty when none counted.
fn shares(flops: &FlopCounts) -> Vec<(Precision, f64, f64)> {
    let counted: Vec<(Precision, f64)> = flops
        .by_precision()
        .into_iter()
        .filter_map(|(p, n)| Some((p, n.filter(|n| *n > 0.0)?)))
        .collect();
    let total: f64 = counted.iter().map(|(_, n)| n).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    counted
        .into_iter()
        .map(|(p, n)| (p, n, n / total))
        .collect()
}

/// Each precision's FLOPs per call (the mean over `calls`) and share.
fn split_json(shares: &[(Precision, f64, f64)], calls: usize) -> Value {
    let calls = calls.max(1) as f64;
    shares
        .iter()
        .map(|(p, n, share)| {
            (
                precision_name(*p).to_string(),
                json!({ "flops_per_call": n / calls, "share": share }),
            )
        })
        .collect::<Map<_, _>>()
        .into()
}

pub fn check(facts: &Facts) -> RuleOutcome {
    let evidence = facts.evidence;
    let pass = match candidate_work(evidence) {
        Ok(pass) => pass,
        Err(why) => return RuleOutcome::skipped(CHECK, why),
    };
    let Some(task) = task_precision(evidence) else {
        return RuleOutcome::skipped(
            CHECK,
            "no floating-point output or input: the task has no precision to keep",
        );
    };
    let calls = work_calls(evidence, pass);
    if calls.is_empty() {
        return RuleOutcome::skipped(CHECK, "the work pass recorded no launch in a call");
    }
    let candidate = shares(&total_flops(&calls));
    if candidate.is_empty() {
        return RuleOutcome::skipped(CHECK, "the work pass counted no FLOPs");
    }
    let allow_tf32 = evidence.settings.allow_tf32;
    let mut not_judged = Vec::new();
    let lowered: Vec<(Precision, f64, f64)> = candidate
        .iter()
        .copied()
        .filter(|(p, _, share)| bits(*p, allow_tf32) < task.bits && *share > SHARE)
        .filter(|(p, _, _)| match untrusted_flops(evidence, *p) {
            Some(why) => {
                not_judged.push(format!("{}: {why}", precision_name(*p)));
                false
            }
            None => true,
        })
        .collect();
    if lowered.is_empty() {
        if candidate
            .iter()
            .any(|(p, _, share)| bits(*p, allow_tf32) < task.bits && *share > SHARE)
        {
            return RuleOutcome::skipped(CHECK, not_judged.join("; "));
        }
        return RuleOutcome::ran_in_part(CHECK, Vec::new(), not_judged);
    }
    let names = |list: &[(Precision, f64, f64)]| -> Vec<&'static str> {
        list.iter().map(|(p, _, _)| precision_name(*p)).collect()
    };
    let reference = match evidence.reference_work.as_ref().map(usable) {
        None => {
            return RuleOutcome::skipped(
                CHECK,
                format!(
                    "the candidate's work shows {} in a {} task, and the reference's work pass \
                     is missing: whether the task itself does it cannot be told",
                    names(&lowered).join(", "),
                    task.name
                ),
            );
        }
        Some(Err(why)) => {
            return RuleOutcome::skipped(
                CHECK,
                format!(
                    "the candidate's work shows {} in a {} task, and the reference's cannot be \
                     read ({why})",
                    names(&lowered).join(", "),
                    task.name
                ),
            );
        }
        Some(Ok(pass)) => {
            let calls = work_calls(evidence, pass);
            (shares(&total_flops(&calls)), calls.len())
        }
    };
    let (reference, reference_calls) = reference;
    // The task itself computes in that precision: the candidate may too.
    let unexcused: Vec<(Precision, f64, f64)> = lowered
        .iter()
        .copied()
        .filter(|(p, _, _)| {
            !reference
                .iter()
                .any(|(r, _, share)| r == p && *share > SHARE)
        })
        .collect();
    if unexcused.is_empty() {
        return RuleOutcome::ran_in_part(CHECK, Vec::new(), not_judged);
    }
    let share: f64 = unexcused.iter().map(|(_, _, s)| s).sum();
    let split: Vec<String> = candidate
        .iter()
        .map(|(p, _, s)| format!("{} {:.1} %", precision_name(*p), s * 100.0))
        .collect();
    let finding = finding(
        FindingKind::PrecisionMismatch,
        CHECK,
        format!(
            "{:.1} % of the candidate's FLOPs are in {} in a {} task, which the reference does \
             not do (split: {})",
            share * 100.0,
            names(&unexcused).join(", "),
            task.name,
            split.join(", ")
        ),
        Measure {
            measured: share,
            limit: SHARE,
            unit: "share of FLOPs",
        },
        json!({
            "task_precision": task.name,
            "allow_tf32": allow_tf32,
            "lowered": names(&unexcused),
            "candidate": split_json(&candidate, calls.len()),
            "reference": split_json(&reference, reference_calls),
            "launch_ids": calls.iter().flat_map(|c| c.launch_ids()).collect::<Vec<_>>(),
            "calibration": calibration_note(evidence),
        }),
    );
    RuleOutcome::ran_in_part(CHECK, vec![finding], not_judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::evidence::{WitnessEvidence, WitnessLaunch};
    use crate::eval::rules::testing::{kinds, run};
    use crate::eval::test_support::calibration;
    use crate::eval::work_captures::{launch, tensor, work_evidence, work_pass};
    use crate::model::calibration::CalibratedQuantity;

    /// A matmul task in `dtype` whose calls each ran `launches`.
    fn matmul(dtype: &str, item: u64, n: u64, launches: &[WitnessLaunch]) -> EvalEvidence {
        let m = tensor(dtype, &[n, n], item);
        work_evidence(&[m.clone(), m.clone()], &[m], launches)
    }

    /// The H200's FP32 `matmul_naive` (FFMA only): a reference that computes in fp32.
    fn fp32_reference() -> WitnessEvidence {
        work_pass(&[launch("kernels", 1)])
    }

    #[test]
    fn an_fp16_matmul_in_an_fp32_task_is_flagged_with_the_split() {
        // mm_tensor launch 5: cuBLAS's fp16 4096³ matmul.
        let mut e = matmul("float32", 4, 4096, &[launch("mm_tensor", 5)]);
        e.reference_work = Some(fp32_reference());
        let outcome = run(check, &e);
        assert_eq!(kinds(&outcome), [FindingKind::PrecisionMismatch]);
        let f = &outcome.findings[0];
        assert_eq!(f.measured, Some(1.0));
        assert_eq!(f.limit, Some(SHARE));
        assert_eq!(f.evidence["task_precision"], "fp32");
        assert_eq!(f.evidence["lowered"], json!(["tensor_fp16"]));
        assert_eq!(
            f.evidence["candidate"]["tensor_fp16"]["flops_per_call"],
            2.0 * 4096f64.powi(3)
        );
        assert_eq!(f.evidence["reference"]["fp32"]["share"], 1.0);
        assert_eq!(f.evidence["calibration"], "uncalibrated");
        assert!(
            f.message
                .starts_with("100.0 % of the candidate's FLOPs are in tensor_fp16 in a fp32 task"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_bf16_matmul_in_a_bf16_task_keeps_its_precision() {
        let outcome = run(
            check,
            &matmul("bfloat16", 2, 4096, &[launch("mm_tensor", 2)]),
        );
        assert!(
            outcome.check.ran && outcome.findings.is_empty(),
            "{outcome:#?}"
        );
    }

    #[test]
    fn tf32_in_an_fp32_task_is_lowered_unless_allowed_or_done_by_the_task() {
        let tf32 = launch("mm_tensor", 7);
        let mut e = matmul("float32", 4, 2048, std::slice::from_ref(&tf32));
        e.reference_work = Some(fp32_reference());
        assert_eq!(kinds(&run(check, &e)), [FindingKind::PrecisionMismatch]);
        // The reference itself runs on TF32 (cuDNN's default for fp32 convolutions).
        e.reference_work = Some(work_pass(std::slice::from_ref(&tf32)));
        let outcome = run(check, &e);
        assert!(
            outcome.check.ran && outcome.findings.is_empty(),
            "{outcome:#?}"
        );
        // The task allows TF32: no reference needed.
        e.reference_work = None;
        e.settings.allow_tf32 = true;
        let outcome = run(check, &e);
        assert!(
            outcome.check.ran && outcome.findings.is_empty(),
            "{outcome:#?}"
        );
    }

    #[test]
    fn phantom_fp16_of_rng_fills_is_no_lowered_precision() {
        // fp8_matmul launch 0: a PyTorch normal_ fill whose FP16 count is all HFMA2.MMA moves.
        let x = tensor("float32", &[8192, 8192], 4);
        let e = work_evidence(&[], &[x], &[launch("fp8_matmul", 0)]);
        let outcome = run(check, &e);
        assert!(
            outcome.check.ran && outcome.findings.is_empty(),
            "{outcome:#?}"
        );
    }

    #[test]
    fn without_the_references_work_it_cannot_tell() {
        // The FP8 matmul in a bf16 task, and no reference work pass.
        let a = tensor("float8_e4m3fn", &[8192, 8192], 1);
        let e = work_evidence(
            &[a.clone(), a],
            &[tensor("bfloat16", &[8192, 8192], 2)],
            &[launch("fp8_matmul", 4)],
        );
        let outcome = run(check, &e);
        assert!(!outcome.check.ran);
        assert_eq!(
            outcome.check.why_not.as_deref(),
            Some(
                "the candidate's work shows tensor_fp8 in a bf16 task, and the reference's work \
                 pass is missing: whether the task itself does it cannot be told"
            )
        );
        let mut e = e;
        e.reference_work = Some(work_pass(&[launch("mm_tensor", 2)]));
        assert_eq!(kinds(&run(check, &e)), [FindingKind::PrecisionMismatch]);
    }

    #[test]
    fn an_untrusted_counter_is_not_judged() {
        let mut e = matmul("float32", 4, 4096, &[launch("mm_tensor", 5)]);
        e.reference_work = Some(fp32_reference());
        let mut c = calibration();
        c.checks
            .retain(|c| c.quantity != CalibratedQuantity::TensorFp16Flops);
        e.calibration = Some(c);
        let outcome = run(check, &e);
        assert!(!outcome.check.ran);
        assert!(
            outcome
                .check
                .why_not
                .unwrap()
                .starts_with("tensor_fp16: the calibration (NVIDIA H200")
        );
        // Calibrated and trusted: judged, and the finding cites the calibration.
        e.calibration = Some(calibration());
        let outcome = run(check, &e);
        assert_eq!(
            outcome.findings[0].evidence["calibration"]["device_name"],
            "NVIDIA H200"
        );
    }

    #[test]
    fn no_work_pass_or_no_floating_dtype_gives_why_not() {
        let mut e = matmul("float32", 4, 4096, &[launch("mm_tensor", 5)]);
        e.work = None;
        assert!(!run(check, &e).check.ran);
        let idx = tensor("int64", &[4096], 8);
        let e = work_evidence(
            std::slice::from_ref(&idx),
            std::slice::from_ref(&idx),
            &[launch("mm_tensor", 5)],
        );
        assert_eq!(
            run(check, &e).check.why_not.as_deref(),
            Some("no floating-point output or input: the task has no precision to keep")
        );
    }

    #[test]
    fn narrower_means_fewer_significand_bits() {
        let fp16_task = floating("float16").unwrap();
        assert!(bits(Precision::TensorBf16, false) < fp16_task.bits);
        assert!(bits(Precision::TensorTf32, false) >= fp16_task.bits);
        assert!(bits(Precision::TensorFp16, false) >= floating("bfloat16").unwrap().bits);
        assert!(bits(Precision::TensorInt8, false) < floating("float8_e5m2").unwrap().bits);
        assert_eq!(
            bits(Precision::TensorTf32, true),
            floating("float32").unwrap().bits
        );
        assert!(floating("int32").is_none() && floating("bool").is_none());
    }
}
