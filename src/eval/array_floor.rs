//! The least bytes a correct kernel moves for one call, from the trusted worker's record of the
//! call's arrays (shape, stride, size): every input read once, every output written once. An
//! array counts its distinct elements, not its view: a broadcast dimension (stride 0) adds
//! nothing, and a view whose strides overlap counts no more than the storage it spans.

use super::evidence::{TensorSpec, TrialEvidence};

/// Bytes of `spec`'s distinct elements; 0 for an argument that is not an array.
pub fn distinct_bytes(spec: &TensorSpec) -> u64 {
    if spec.value.is_some() {
        return 0;
    }
    // A 0-d array (empty shape) holds one element.
    let numel = spec
        .shape
        .iter()
        .fold(1u64, |count, &n| count.saturating_mul(n));
    if numel == 0 || spec.nbytes == 0 {
        return 0;
    }
    // The worker's `nbytes` is elements × item size, whatever the view.
    let item = (spec.nbytes / numel).max(1);
    let elements = if spec.stride.len() == spec.shape.len() {
        let unbroadcast = spec
            .shape
            .iter()
            .zip(&spec.stride)
            .filter(|(_, stride)| **stride != 0)
            .fold(1u64, |count, (&n, _)| count.saturating_mul(n));
        let span = spec
            .shape
            .iter()
            .zip(&spec.stride)
            .fold(1u64, |span, (&n, &stride)| {
                span.saturating_add((n - 1).saturating_mul(stride.unsigned_abs()))
            });
        unbroadcast.min(span)
    } else {
        numel
    };
    elements.saturating_mul(item)
}

/// The bytes one call must read and write at least.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallFloor {
    /// Every input array's distinct bytes.
    pub read: u64,
    /// Every reference output's distinct bytes (what the task must produce).
    pub write: u64,
}

pub fn call_floor(trial: &TrialEvidence) -> CallFloor {
    let sum = |specs: &[TensorSpec]| {
        specs
            .iter()
            .map(distinct_bytes)
            .fold(0u64, u64::saturating_add)
    };
    CallFloor {
        read: sum(&trial.inputs),
        write: sum(&trial.reference_outputs),
    }
}

/// The inputs' dtypes, shapes and strides (and non-array arguments' values): calls with the
/// same signature do the same work.
pub fn input_signature(trial: &TrialEvidence) -> String {
    let parts: Vec<String> = trial
        .inputs
        .iter()
        .map(|spec| match &spec.value {
            Some(value) => format!("{}={value}", spec.dtype),
            None => {
                let dims: Vec<String> = spec.shape.iter().map(u64::to_string).collect();
                let strides: Vec<String> = spec.stride.iter().map(i64::to_string).collect();
                format!("{}[{}]/[{}]", spec.dtype, dims.join(","), strides.join(","))
            }
        })
        .collect();
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::test_support::array;

    fn spec(dtype: &str, shape: &[u64], stride: &[i64], item: u64) -> TensorSpec {
        TensorSpec {
            dtype: dtype.into(),
            shape: shape.to_vec(),
            stride: stride.to_vec(),
            nbytes: shape.iter().fold(item, |bytes, &n| bytes * n),
            value: None,
            stats: None,
        }
    }

    #[test]
    fn a_contiguous_array_is_its_size() {
        assert_eq!(distinct_bytes(&array("x", 0.0, 1.0)), 64);
        assert_eq!(
            distinct_bytes(&spec("bfloat16", &[4096, 4096], &[4096, 1], 2)),
            4096 * 4096 * 2
        );
        // No strides recorded: taken as contiguous.
        assert_eq!(distinct_bytes(&spec("float32", &[10, 3], &[], 4)), 120);
        // A 0-d array holds one element.
        assert_eq!(distinct_bytes(&spec("float32", &[], &[], 4)), 4);
    }

    #[test]
    fn a_broadcast_input_counts_once() {
        // `bias.expand(1024, 512)`: 512 distinct floats.
        assert_eq!(
            distinct_bytes(&spec("float32", &[1024, 512], &[0, 1], 4)),
            512 * 4
        );
        // Fully expanded scalar.
        assert_eq!(
            distinct_bytes(&spec("float32", &[8, 8, 8], &[0, 0, 0], 4)),
            4
        );
    }

    #[test]
    fn transposed_and_sliced_views_count_their_elements() {
        // `b.t()` of an 8192² fp8 matrix.
        assert_eq!(
            distinct_bytes(&spec("float8_e4m3fn", &[8192, 8192], &[1, 8192], 1)),
            8192 * 8192
        );
        // `x[:, ::2]` of a 100×100 matrix: 5,000 elements, though it spans 9,999.
        assert_eq!(
            distinct_bytes(&spec("float32", &[100, 50], &[100, 2], 4)),
            5000 * 4
        );
        // Overlapping windows (`unfold(0, 4, 1)` of 10 elements): 28 elements, 10 in storage.
        assert_eq!(distinct_bytes(&spec("float32", &[7, 4], &[1, 1], 4)), 40);
    }

    #[test]
    fn empty_arrays_and_values_move_nothing() {
        assert_eq!(distinct_bytes(&spec("float32", &[0, 16], &[16, 1], 4)), 0);
        let value = TensorSpec {
            dtype: "int".into(),
            shape: vec![],
            stride: vec![],
            nbytes: 0,
            value: Some(serde_json::json!(3)),
            stats: None,
        };
        assert_eq!(distinct_bytes(&value), 0);
    }

    #[test]
    fn a_call_reads_its_inputs_and_writes_the_reference_outputs() {
        let mut trial =
            crate::eval::test_support::trial(0, super::super::evidence::TrialPhase::Timed, true);
        trial.inputs.push(spec("float32", &[16, 16], &[16, 1], 4));
        assert_eq!(
            call_floor(&trial),
            CallFloor {
                read: 64 + 1024,
                write: 64
            }
        );
        assert_eq!(
            input_signature(&trial),
            "float32[4,4]/[4,1] float32[16,16]/[16,1]"
        );
    }
}
