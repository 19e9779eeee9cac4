//! Whether the audit may judge from a counter: a device's calibration (`polyprof calibrate`)
//! marks each quantity trusted or not; a counter it marks untrusted is not judged, and a
//! judgment made without any calibration says so ("uncalibrated").

use serde_json::{Value, json};

use crate::model::calibration::{CalibratedQuantity, Calibration};
use crate::model::record::Precision;

use super::evidence::EvalEvidence;
use super::verdict::CalibrationCitation;

/// The calibration quantity that checks a precision's FLOP counter; `None` where calibration has
/// no kernel for it (INT8 and FP64 tensor ops), which a calibration therefore never trusts.
pub fn flop_quantity(precision: Precision) -> Option<CalibratedQuantity> {
    match precision {
        Precision::Fp16 => Some(CalibratedQuantity::Fp16Flops),
        Precision::Fp32 => Some(CalibratedQuantity::Fp32Flops),
        Precision::Fp64 => Some(CalibratedQuantity::Fp64Flops),
        Precision::TensorFp16 => Some(CalibratedQuantity::TensorFp16Flops),
        Precision::TensorBf16 => Some(CalibratedQuantity::TensorBf16Flops),
        Precision::TensorTf32 => Some(CalibratedQuantity::TensorTf32Flops),
        Precision::TensorFp8 => Some(CalibratedQuantity::TensorFp8Flops),
        Precision::TensorInt8 | Precision::TensorFp64 => None,
    }
}

/// The counter of `precision`'s FLOPs, as a calibration names it.
pub fn flop_counter_name(precision: Precision) -> String {
    match flop_quantity(precision) {
        Some(quantity) => quantity.as_str().to_string(),
        None => format!("{}_ops", precision_name(precision)),
    }
}

/// A precision on its pipe as the verdict's evidence names it (`tensor_bf16`).
pub fn precision_name(precision: Precision) -> &'static str {
    match precision {
        Precision::Fp16 => "fp16",
        Precision::Fp32 => "fp32",
        Precision::Fp64 => "fp64",
        Precision::TensorFp16 => "tensor_fp16",
        Precision::TensorBf16 => "tensor_bf16",
        Precision::TensorTf32 => "tensor_tf32",
        Precision::TensorFp8 => "tensor_fp8",
        Precision::TensorInt8 => "tensor_int8",
        Precision::TensorFp64 => "tensor_fp64",
    }
}

/// Why the audit may not judge from `quantity`'s counter: the calibration marks it untrusted.
/// `None` when it may (trusted, or no calibration: the judgment then says "uncalibrated").
pub fn untrusted(evidence: &EvalEvidence, quantity: CalibratedQuantity) -> Option<String> {
    let calibration = evidence.calibration.as_ref()?;
    (!calibration.trusts(quantity)).then(|| {
        format!(
            "the calibration ({}) marks the {} counter untrusted",
            describe(calibration),
            quantity.as_str()
        )
    })
}

/// Like [`untrusted`] for the FLOP counter of `precision`.
pub fn untrusted_flops(evidence: &EvalEvidence, precision: Precision) -> Option<String> {
    let calibration = evidence.calibration.as_ref()?;
    match flop_quantity(precision) {
        Some(quantity) => untrusted(evidence, quantity),
        None => Some(format!(
            "the calibration ({}) does not check the {} counter",
            describe(calibration),
            flop_counter_name(precision)
        )),
    }
}

/// What a finding cites for the counters it rests on: the calibration, or "uncalibrated".
pub fn calibration_note(evidence: &EvalEvidence) -> Value {
    match &evidence.calibration {
        Some(calibration) => json!(citation(calibration)),
        None => json!("uncalibrated"),
    }
}

/// The calibration as a verdict cites it.
pub fn citation(calibration: &Calibration) -> CalibrationCitation {
    CalibrationCitation {
        device_name: calibration.device_name.clone(),
        tool: calibration.tool.clone(),
        driver: calibration.driver.clone(),
        created_unix_s: calibration.created_unix_s,
        path: calibration.path.clone(),
    }
}

fn describe(calibration: &Calibration) -> String {
    format!("{}, {}", calibration.device_name, calibration.tool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::test_support::{calibration, evidence};

    #[test]
    fn without_a_calibration_every_counter_is_judged_uncalibrated() {
        let e = evidence();
        assert_eq!(untrusted(&e, CalibratedQuantity::DramBytesRead), None);
        assert_eq!(untrusted_flops(&e, Precision::TensorInt8), None);
        assert_eq!(calibration_note(&e), json!("uncalibrated"));
    }

    #[test]
    fn a_calibration_decides_and_is_cited() {
        let mut e = evidence();
        e.calibration = Some(calibration());
        assert_eq!(untrusted(&e, CalibratedQuantity::DramBytesRead), None);
        assert_eq!(
            untrusted(&e, CalibratedQuantity::DramBytesWrite).as_deref(),
            Some(
                "the calibration (NVIDIA H200, ncu 2025.3.1.0) marks the dram_bytes_write \
                 counter untrusted"
            )
        );
        assert!(
            untrusted_flops(&e, Precision::TensorInt8)
                .unwrap()
                .contains("does not check the tensor_int8_ops counter")
        );
        assert_eq!(calibration_note(&e)["tool"], "ncu 2025.3.1.0");
    }
}
