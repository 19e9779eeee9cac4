//! A work pass's calls: the launches of each `polyprof/call/K` range (placed as the witness's
//! are, so a range the candidate pushed on another thread is no call), their counters summed,
//! and the trial whose inputs the call ran on.

use crate::model::record::FlopCounts;

use super::calls::place_launches;
use super::evidence::{EvalEvidence, TrialEvidence, WitnessEvidence, WitnessLaunch};

/// One call of a work pass, its counters summed over its launches.
#[derive(Debug)]
pub struct WorkCall<'a> {
    /// The call's trial index (`polyprof/call/K`).
    pub call: u32,
    /// The trial of that index, whose inputs and reference outputs the call had.
    pub trial: Option<&'a TrialEvidence>,
    pub launches: Vec<&'a WitnessLaunch>,
    /// DRAM bytes read over all launches; `None` when a launch lacks the counter.
    pub dram_bytes_read: Option<f64>,
    pub dram_bytes_write: Option<f64>,
    /// FLOPs per precision over all launches.
    pub flops: FlopCounts,
    /// The highest DRAM clock a launch ran at (Hz).
    pub dram_clock_hz: Option<f64>,
}

impl WorkCall<'_> {
    pub fn launch_ids(&self) -> Vec<u64> {
        self.launches.iter().map(|l| l.launch_id).collect()
    }
}

/// The work pass of the candidate (`evidence.work`), or why there is none.
pub fn candidate_work(evidence: &EvalEvidence) -> Result<&WitnessEvidence, String> {
    if evidence.problem.device == "cpu" {
        return Err("no work pass on cpu".to_string());
    }
    match &evidence.work {
        Some(pass) => usable(pass),
        None if !evidence.settings.work_pass => {
            Err("the work pass was not asked for (work_pass off)".to_string())
        }
        None => Err(
            "no work pass was recorded (it runs only for a correct candidate that no other \
             check has judged)"
                .to_string(),
        ),
    }
}

/// `pass` unless it failed or recorded nothing.
pub fn usable(pass: &WitnessEvidence) -> Result<&WitnessEvidence, String> {
    if let Some(error) = &pass.error {
        return Err(format!("work pass error: {error}"));
    }
    if pass.launches.is_empty() {
        return Err(format!(
            "the work pass ({}) recorded no kernel launch",
            pass.profiler
        ));
    }
    if pass.launches.iter().all(|l| l.counters.is_none()) {
        return Err(format!(
            "the work pass ({}) recorded no work counter",
            pass.profiler
        ));
    }
    Ok(pass)
}

/// Every call of `pass` that launched something, in call order.
pub fn work_calls<'a>(evidence: &'a EvalEvidence, pass: &'a WitnessEvidence) -> Vec<WorkCall<'a>> {
    let placed = place_launches(&pass.launches, &[]);
    placed
        .calls
        .into_iter()
        .filter(|(_, launches)| !launches.is_empty())
        .map(|(call, launches)| {
            let counter = |read: fn(&WitnessLaunch) -> Option<f64>| {
                launches.iter().map(|l| read(l)).sum::<Option<f64>>()
            };
            let dram_bytes_read = counter(|l| l.counters.as_ref()?.dram_bytes_read);
            let dram_bytes_write = counter(|l| l.counters.as_ref()?.dram_bytes_write);
            let mut flops = FlopCounts::default();
            for counters in launches.iter().filter_map(|l| l.counters.as_ref()) {
                flops.accumulate(&counters.flops);
            }
            let dram_clock_hz = launches
                .iter()
                .filter_map(|l| l.counters.as_ref()?.dram_clock_hz)
                .filter(|hz| hz.is_finite() && *hz > 0.0)
                .reduce(f64::max);
            WorkCall {
                call,
                trial: evidence.trials.iter().find(|t| t.index == call),
                launches,
                dram_bytes_read,
                dram_bytes_write,
                flops,
                dram_clock_hz,
            }
        })
        .collect()
}

/// The FLOPs of every call together.
pub fn total_flops(calls: &[WorkCall]) -> FlopCounts {
    let mut total = FlopCounts::default();
    for call in calls {
        total.accumulate(&call.flops);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::evidence::LaunchCounters;
    use crate::eval::test_support::{evidence, launch};

    fn counted(id: u64, ranges: &[&str], read: Option<f64>, fp32: f64) -> WitnessLaunch {
        let mut l = launch(id, "k", ranges, 1000.0);
        l.counters = Some(LaunchCounters {
            dram_bytes_read: read,
            dram_bytes_write: Some(10.0),
            flops: FlopCounts {
                fp32: Some(fp32),
                ..FlopCounts::default()
            },
            sm_clock_hz: Some(1.9e9),
            dram_clock_hz: Some(3.2e9),
        });
        l
    }

    #[test]
    fn calls_sum_their_launches_and_find_their_trial() {
        let e = evidence();
        let pass = WitnessEvidence {
            profiler: "ncu".into(),
            run_dir: "work.000".into(),
            clock_control: None,
            cache_control: Some("all".into()),
            launches: vec![
                counted(0, &["polyprof/warmup"], Some(5.0), 1.0),
                counted(1, &["polyprof/call/10"], Some(100.0), 2.0),
                counted(2, &["polyprof/call/10"], Some(50.0), 3.0),
                counted(3, &["polyprof/call/11"], None, 4.0),
            ],
            error: None,
        };
        let calls = work_calls(&e, &pass);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].call, 10);
        assert_eq!(calls[0].trial.map(|t| t.index), Some(10));
        assert_eq!(calls[0].dram_bytes_read, Some(150.0));
        assert_eq!(calls[0].dram_bytes_write, Some(20.0));
        assert_eq!(calls[0].flops.fp32, Some(5.0));
        assert_eq!(calls[0].launch_ids(), [1, 2]);
        // A launch without the counter leaves the call's sum unknown.
        assert_eq!(calls[1].dram_bytes_read, None);
        assert_eq!(total_flops(&calls).fp32, Some(9.0));
    }

    #[test]
    fn why_there_is_no_work_pass() {
        let mut e = evidence();
        assert_eq!(
            candidate_work(&e).unwrap_err(),
            "the work pass was not asked for (work_pass off)"
        );
        e.settings.work_pass = true;
        assert!(
            candidate_work(&e)
                .unwrap_err()
                .starts_with("no work pass was recorded")
        );
        let mut pass = crate::eval::test_support::witness();
        e.work = Some(pass.clone());
        assert_eq!(
            candidate_work(&e).unwrap_err(),
            "the work pass (ncu) recorded no work counter"
        );
        pass.error = Some("ncu: ERR_NVGPUCTRPERM".into());
        e.work = Some(pass);
        assert_eq!(
            candidate_work(&e).unwrap_err(),
            "work pass error: ncu: ERR_NVGPUCTRPERM"
        );
        e.problem.device = "cpu".into();
        assert_eq!(candidate_work(&e).unwrap_err(), "no work pass on cpu");
    }
}
