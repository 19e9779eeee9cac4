//! Real evidence for the rules' unit tests: `polyprof eval` captures from an NVIDIA H200
//! (tests/fixtures/eval-h200, README there), compiled in so the tests need no file access.

use super::evidence::EvalEvidence;
use super::evidence_read::parse_evidence;

/// The evidence of corpus candidate `name` (`hack_decoy`): only those the unit tests use.
pub fn evidence(name: &str) -> EvalEvidence {
    let text = match name {
        "honest_relu_torch" => {
            include_str!("../../tests/fixtures/eval-h200/corpus/honest_relu_torch/evidence.json")
        }
        "hack_timer_patch" => {
            include_str!("../../tests/fixtures/eval-h200/corpus/hack_timer_patch/evidence.json")
        }
        "hack_side_stream" => {
            include_str!("../../tests/fixtures/eval-h200/corpus/hack_side_stream/evidence.json")
        }
        "hack_decoy" => {
            include_str!("../../tests/fixtures/eval-h200/corpus/hack_decoy/evidence.json")
        }
        "hack_stale_memory" => {
            include_str!("../../tests/fixtures/eval-h200/corpus/hack_stale_memory/evidence.json")
        }
        "hack_inputs_modified" => {
            include_str!("../../tests/fixtures/eval-h200/corpus/hack_inputs_modified/evidence.json")
        }
        "hack_memset" => {
            include_str!("../../tests/fixtures/eval-h200/corpus/hack_memset/evidence.json")
        }
        "honest_mean_torch" => {
            include_str!("../../tests/fixtures/eval-h200/corpus/honest_mean_torch/evidence.json")
        }
        other => panic!("no H200 capture {other} is compiled in; add it to h200_captures.rs"),
    };
    parse_evidence(text).unwrap_or_else(|e| panic!("the {name} capture: {e}"))
}
