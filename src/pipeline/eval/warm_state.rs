//! What a warm evaluator (`warm::WarmEvaluator`) keeps between candidates: its trusted
//! worker, that worker's `setup` answer, the trial counter, the stored reference blocks and
//! the reference's work pass.
//! `session` reads and updates it during each eval; `warm` decides when it is thrown away.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::eval::evidence::{ReferenceWorkReuse, TimingBlock, WitnessEvidence};
use crate::pipeline::eval::integrity::Baseline;
use crate::pipeline::eval::worker::{StartingWorker, Worker};

/// Stored reference blocks older than this are measured again, whatever the probe says: a
/// slow drift (a warming room, a neighbour's load) could stay inside the probe's bound for
/// one candidate at a time.
pub const MAX_REFERENCE_AGE: Duration = Duration::from_secs(30 * 60);

/// What a warm evaluator keeps between candidates.
pub(crate) struct WarmState {
    /// `ROOT/warm-reference.NNN`: the trusted worker's harness copy and run directory.
    pub(crate) dir: PathBuf,
    pub(crate) script: PathBuf,
    /// The harness scripts and the reference as they were when the trusted worker started.
    pub(crate) baseline: Baseline,
    /// What the trusted worker was set up for (the spec without the candidate).
    pub(crate) fit: String,
    pub(crate) trusted: Option<Worker>,
    /// The trusted worker's start, begun before the first candidate's turn (beside the
    /// candidates' builds); taken by that turn, which then sets it up.
    pub(crate) trusted_starting: Option<StartingWorker>,
    pub(crate) setup: Option<TrustedSetup>,
    /// The next trial index: the trusted worker holds trials by index, never reused.
    pub(crate) next_trial: u32,
    pub(crate) stored: Option<StoredReference>,
    pub(crate) stored_work: Option<StoredReferenceWork>,
}

/// The trusted worker's `setup` answer, applied to each later candidate's evidence.
#[derive(Debug, Clone)]
pub(crate) struct TrustedSetup {
    pub(crate) python: Option<String>,
    pub(crate) torch: Option<String>,
    pub(crate) numpy: Option<String>,
    pub(crate) device_name: Option<String>,
    pub(crate) framework: String,
    pub(crate) init_seed: u64,
    pub(crate) init_inputs: Option<(Value, Vec<u8>)>,
}

/// Reference timing blocks measured beside one candidate, for the ones after it.
#[derive(Debug, Clone)]
pub(crate) struct StoredReference {
    pub(crate) blocks: Vec<TimingBlock>,
    pub(crate) measured_in: String,
    pub(crate) measured_at: String,
    pub(crate) taken: Instant,
    pub(crate) conditions: String,
    /// Candidates judged with them so far.
    pub(crate) reused: u32,
}

/// The reference's work pass taken beside one candidate, for the ones after it: the
/// reference's kernels and what they count do not depend on the candidate, and the pass costs
/// a worker under the profiler (about 6 s a correct candidate on a 3D convolution, H100).
#[derive(Debug, Clone)]
pub(crate) struct StoredReferenceWork {
    pub(crate) evidence: WitnessEvidence,
    /// Where and when it was taken, under which conditions (the conditions key and the
    /// profiler with its settings: reused only under the same), and how often reused so far:
    /// each reusing eval's `reference_work_reused`.
    pub(crate) reuse: ReferenceWorkReuse,
    pub(crate) taken: Instant,
}

impl StoredReferenceWork {
    /// Whether it may stand for a pass taken now under `conditions`: the same conditions, and
    /// not older than the reference blocks may be.
    pub(crate) fn serves(&self, conditions: &str, age: Duration) -> bool {
        self.reuse.conditions == conditions && age <= MAX_REFERENCE_AGE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(conditions: &str) -> StoredReferenceWork {
        StoredReferenceWork {
            evidence: WitnessEvidence {
                profiler: "ncu".into(),
                run_dir: "reference-work.000".into(),
                clock_control: None,
                cache_control: None,
                launches: Vec::new(),
                error: None,
            },
            reuse: ReferenceWorkReuse {
                measured_in: "/evals/a".into(),
                measured_at: "2026-12-07T16:17:29Z".into(),
                conditions: conditions.into(),
                reused_before: 0,
            },
            taken: Instant::now(),
        }
    }

    #[test]
    fn a_stored_work_pass_serves_only_its_conditions_and_age() {
        let work = stored("cuda H100 (uuid 1); ncu []");
        assert!(work.serves("cuda H100 (uuid 1); ncu []", Duration::from_secs(5)));
        assert!(!work.serves("cuda H100 (uuid 2); ncu []", Duration::from_secs(5)));
        assert!(!work.serves("cuda H100 (uuid 1); ncu [--x]", Duration::from_secs(5)));
        assert!(!work.serves(
            "cuda H100 (uuid 1); ncu []",
            MAX_REFERENCE_AGE + Duration::from_secs(1)
        ));
    }
}
