//! `work_matches_scored`: the counter (work) pass must see the scored pass's behaviour. Its
//! calls ran under ncu, in a process the candidate can inspect and whose profiler window it can
//! close (`cudaProfilerStop`); the scored pass's calls ran under the tracer. The same callable on
//! fresh inputs of the same shapes launches the same kernels: each work-pass call must launch the
//! scored calls' kernels (by base name, as many of each), and take about as long (within
//! `DURATION_MARGIN`), or the candidate behaved differently under the profiler.

use serde_json::json;

use super::timeline::{MarkedRequest, Timeline};
use super::verdict::{Finding, FindingKind};
use crate::model::gpu_trace::{ActivityKind, GpuTrace};
use crate::model::kernel_name::{short_kernel_name, without_namespaces};

/// The check's name in `checks` and in each finding.
pub const CHECK: &str = "work_matches_scored";
/// How far a work-pass call's kernel time may be from the scored calls' median (both with the
/// caches flushed before the call; ncu also serializes and flushes before each kernel): on an
/// H100 the honest captures read 0.3-3.6 % apart (tests/fixtures/eval-witness).
pub const DURATION_MARGIN: f64 = 0.15;

/// One call's kernels: base name (no return type, parameters or namespaces) and GPU time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallKernels {
    pub kernels: Vec<(String, u64)>,
}

impl CallKernels {
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.kernels.iter().map(|(n, _)| n.clone()).collect();
        names.sort();
        names
    }

    fn total_ns(&self) -> u64 {
        self.kernels.iter().map(|(_, ns)| ns).sum()
    }
}

/// A kernel's name as both passes can spell it: `void ns::k<T>(args)` → `k<T>`.
pub fn base_name(readable: &str) -> String {
    without_namespaces(&short_kernel_name(readable))
}

/// The kernels of the scored pass's `call` requests (fresh inputs, like the work pass's calls),
/// one entry per call window.
pub fn scored_calls(
    trace: &GpuTrace,
    requests: &[MarkedRequest],
    timeline: &Timeline,
) -> Vec<CallKernels> {
    timeline
        .calls
        .iter()
        .filter(|c| requests.get(c.request).is_some_and(|r| r.op == "call"))
        .map(|c| CallKernels {
            kernels: c
                .activities
                .iter()
                .map(|&i| &trace.activities[i])
                .filter(|a| a.kind == ActivityKind::Kernel)
                .map(|a| (base_name(a.readable_name()), a.duration_ns()))
                .collect(),
        })
        .collect()
}

/// Findings: every work-pass call against the scored calls' usual kernels and time.
pub fn judge_work_match(scored: &[CallKernels], work: &[CallKernels]) -> Vec<Finding> {
    let Some(usual) = most_common(scored) else {
        return Vec::new();
    };
    let mut times: Vec<u64> = scored
        .iter()
        .filter(|c| c.names() == usual)
        .map(CallKernels::total_ns)
        .collect();
    times.sort_unstable();
    let scored_ns = times[times.len() / 2] as f64;
    let mut findings = Vec::new();
    for (index, call) in work.iter().enumerate() {
        let names = call.names();
        if names != usual {
            findings.push(Finding {
                kind: FindingKind::DifferentUnderProfiler,
                check: CHECK.to_string(),
                message: format!(
                    "work-pass call {index} launched {} kernels ({}) where every scored call launched {} ({}): the candidate behaved differently under the profiler",
                    names.len(),
                    names.join(", "),
                    usual.len(),
                    usual.join(", ")
                ),
                measured: Some(names.len() as f64),
                limit: Some(usual.len() as f64),
                unit: Some("kernels".to_string()),
                evidence: json!({"work_call": index, "work": names, "scored": usual}),
            });
            continue;
        }
        let ratio = call.total_ns() as f64 / scored_ns;
        if scored_ns > 0.0 && (ratio - 1.0).abs() > DURATION_MARGIN {
            findings.push(Finding {
                kind: FindingKind::DifferentUnderProfiler,
                check: CHECK.to_string(),
                message: format!(
                    "work-pass call {index} ran its kernels in {:.4} ms, the scored calls in {:.4} ms (ratio {ratio:.3}, margin {DURATION_MARGIN}): the candidate behaved differently under the profiler",
                    call.total_ns() as f64 / 1e6,
                    scored_ns / 1e6
                ),
                measured: Some(ratio),
                limit: Some(1.0 + DURATION_MARGIN),
                unit: Some("work / scored".to_string()),
                evidence: json!({"work_call": index}),
            });
        }
    }
    findings
}

fn most_common(calls: &[CallKernels]) -> Option<Vec<String>> {
    let mut counts: Vec<(Vec<String>, usize)> = Vec::new();
    for call in calls {
        let names = call.names();
        match counts.iter_mut().find(|(n, _)| *n == names) {
            Some((_, k)) => *k += 1,
            None => counts.push((names, 1)),
        }
    }
    counts.into_iter().max_by_key(|(_, k)| *k).map(|(n, _)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(kernels: &[(&str, u64)]) -> CallKernels {
        CallKernels {
            kernels: kernels.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        }
    }

    #[test]
    fn names_spelled_by_either_pass_meet_at_their_base() {
        assert_eq!(
            base_name(
                "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)"
            ),
            base_name("void Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(Params)")
        );
        assert_eq!(
            base_name("relu_kernel(float const*, float*, long)"),
            "relu_kernel"
        );
    }

    #[test]
    fn a_work_call_with_other_kernels_or_another_time_is_a_finding() {
        let scored = [
            call(&[("k", 1000)]),
            call(&[("k", 1010)]),
            call(&[("k", 990)]),
        ];
        assert!(judge_work_match(&scored, &[call(&[("k", 1050)])]).is_empty());
        let hidden = judge_work_match(&scored, &[call(&[])]);
        assert_eq!(hidden.len(), 1);
        assert_eq!(hidden[0].kind, FindingKind::DifferentUnderProfiler);
        let slower = judge_work_match(&scored, &[call(&[("k", 1400)])]);
        assert_eq!(slower[0].measured, Some(1.4));
        assert!(
            judge_work_match(&[], &[call(&[])]).is_empty(),
            "nothing scored, nothing to judge"
        );
    }
}
