//! How the Ray driver judges one job from what a poll learned: its entry.json when this
//! submission wrote a final one, else Ray's status (after a grace), the time limit and a
//! cancellation. Pure but for reading the entry file.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::model::batch::{BatchEntry, EntryState, RayJobInfo};
use crate::model::outcome::Outcome;
use crate::pipeline::batch::spec::JobSpec;
use crate::pipeline::batch::task::run_dir;

use super::api::{JobDetails, JobStatus, NodeInfo, state_without_entry};

/// One submitted job the driver follows.
#[derive(Debug)]
pub(super) struct Tracked {
    pub(super) submission_id: String,
    /// When this driver first saw it running (the time limit counts from there).
    pub(super) running_since: Option<Instant>,
    /// When Ray first said it was over without a final entry.json.
    pub(super) over_since: Option<Instant>,
    /// When Ray first did not know it.
    pub(super) unknown_since: Option<Instant>,
    pub(super) stop_sent: bool,
    /// Stopped by the time limit.
    pub(super) timed_out: bool,
    /// Why a stop request failed (the job may still run).
    pub(super) stop_error: Option<String>,
}

impl Tracked {
    pub(super) fn new(submission_id: String) -> Self {
        Tracked {
            submission_id,
            running_since: None,
            over_since: None,
            unknown_since: None,
            stop_sent: false,
            timed_out: false,
            stop_error: None,
        }
    }
}

/// What one poll learned of a job.
pub(super) enum Answer {
    /// Ray answered: the job, or `None` when it does not know the id.
    Known(Option<JobDetails>),
    /// No answer (unreachable, interrupted): no news.
    Unanswered,
}

/// Node id → address, from the state API.
#[derive(Debug, Default)]
pub(super) struct NodeNames {
    pub(super) ips: HashMap<String, String>,
}

impl NodeNames {
    pub(super) fn learn(&mut self, nodes: &[NodeInfo]) {
        for n in nodes {
            if let Some(ip) = &n.node_ip {
                self.ips.insert(n.node_id.clone(), ip.clone());
            }
        }
    }
}

/// What holds for every job of one poll.
#[derive(Debug, Clone, Copy)]
pub(super) struct Round<'a> {
    pub(super) root: &'a Path,
    /// Whether the stop requests of a cancellation went out.
    pub(super) cancelled: bool,
    pub(super) grace: Duration,
    pub(super) time_limit: Option<Duration>,
}

/// A job's new entry; `from_ray`: decided from Ray's word alone (no entry.json).
pub(super) struct Judged {
    pub(super) entry: BatchEntry,
    pub(super) from_ray: bool,
}

/// The entry's new value, when it changed.
pub(super) fn judge(
    t: &mut Tracked,
    spec: &JobSpec,
    old: &BatchEntry,
    answer: &Answer,
    nodes: &NodeNames,
    round: &Round,
) -> Option<Judged> {
    let job = match answer {
        Answer::Known(job) => job.as_ref(),
        Answer::Unanswered => None,
    };
    let info = |job: Option<&JobDetails>| {
        let node_id = job.and_then(|j| j.driver_node_id.clone());
        RayJobInfo {
            submission_id: t.submission_id.clone(),
            status: job.map(|j| j.status().name().to_string()),
            error_type: job.and_then(|j| j.error_type.clone()),
            node_ip: node_id.as_ref().and_then(|n| nodes.ips.get(n).cloned()),
            node_id,
        }
    };
    if let Some(job) = job
        && job.status() == JobStatus::Running
        && t.running_since.is_none()
    {
        t.running_since = Some(Instant::now());
    }
    if let Some(mut entry) = final_entry(round.root, &spec.id, &t.submission_id) {
        if entry.state != EntryState::Succeeded && cut_off(&entry) {
            if t.timed_out {
                entry.state = EntryState::TimedOut;
                entry.errors.push(time_limit_message(round, t));
            } else if round.cancelled {
                entry.state = EntryState::Cancelled;
            }
        }
        entry.ray = Some(info(job));
        return Some(Judged {
            entry,
            from_ray: false,
        });
    }
    let mut entry = old.clone();
    match answer {
        Answer::Unanswered => return None,
        Answer::Known(Some(job)) if job.status().is_final() => {
            let since = *t.over_since.get_or_insert_with(Instant::now);
            if since.elapsed() < round.grace {
                return None;
            }
            entry.state = if t.timed_out {
                EntryState::TimedOut
            } else if round.cancelled && job.status() == JobStatus::Stopped {
                EntryState::Cancelled
            } else {
                state_without_entry(job)
            };
            let mut text = format!(
                "Ray reports job {} {}{}{}{} but it wrote no runs/{}/entry.json",
                t.submission_id,
                job.status().name(),
                job.error_type
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default(),
                info(Some(job))
                    .node_ip
                    .map(|n| format!(" on {n}"))
                    .unwrap_or_default(),
                job.driver_exit_code
                    .map(|c| format!(", exit {c}"))
                    .unwrap_or_default(),
                spec.id
            );
            if let Some(first) = job.message.as_deref().and_then(|m| m.lines().next()) {
                text.push_str(&format!(": {first}"));
            }
            if t.timed_out {
                text = format!("{}; {text}", time_limit_message(round, t));
            }
            entry.errors.push(text);
            entry.ray = Some(info(Some(job)));
            return Some(Judged {
                entry,
                from_ray: true,
            });
        }
        Answer::Known(Some(job)) => {
            t.unknown_since = None;
            entry.state = if job.status() == JobStatus::Running {
                EntryState::Running
            } else {
                EntryState::Pending
            };
            entry.ray = Some(info(Some(job)));
        }
        Answer::Known(None) => {
            let since = *t.unknown_since.get_or_insert_with(Instant::now);
            if since.elapsed() < round.grace {
                return None;
            }
            entry.state = if round.cancelled {
                EntryState::Cancelled
            } else {
                EntryState::Lost
            };
            entry.errors.push(format!(
                "Ray no longer knows job {} (its head restarted without its job table?) and it wrote no {}/entry.json",
                t.submission_id, entry.run_dir
            ));
            entry.ray = Some(info(None));
        }
    }
    (entry != *old).then_some(Judged {
        entry,
        from_ray: false,
    })
}

/// Whether the entry says the command was cut off from outside (Ray's stop signal) rather
/// than ending by itself.
pub(super) fn cut_off(entry: &BatchEntry) -> bool {
    entry.state == EntryState::Cancelled
        || matches!(
            entry.outcome,
            None | Some(
                Outcome::Signalled { .. } | Outcome::SupervisorKilled { .. } | Outcome::Cancelled
            )
        )
}

fn time_limit_message(round: &Round, t: &Tracked) -> String {
    format!(
        "ran past the time limit of {:.0} s; polyprof stopped Ray job {}",
        round.time_limit.unwrap_or_default().as_secs_f64(),
        t.submission_id
    )
}

/// The job's final entry written by Ray job `submission_id` (an entry that names another
/// submission was written late by an earlier one, and is not this one's answer).
pub(super) fn final_entry(root: &Path, id: &str, submission_id: &str) -> Option<BatchEntry> {
    BatchEntry::read(&run_dir(root, id)).ok().filter(|e| {
        e.id == id
            && e.state.is_final()
            && e.ray
                .as_ref()
                .is_some_and(|r| r.submission_id == submission_id)
    })
}

#[cfg(test)]
mod tests {
    use super::super::api::parse_job;
    use super::*;
    use std::collections::BTreeMap;

    fn fixture(name: &str) -> JobDetails {
        parse_job(
            &std::fs::read_to_string(format!(
                "{}/tests/fixtures/ray/{name}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap(),
        )
        .unwrap()
    }

    fn round(root: &Path, cancelled: bool, grace: Duration) -> Round<'_> {
        Round {
            root,
            cancelled,
            grace,
            time_limit: Some(Duration::from_secs(5)),
        }
    }

    #[test]
    fn a_dead_node_makes_the_job_lost_after_the_grace_and_an_entry_wins() {
        let root = tempfile::tempdir().unwrap();
        let spec = JobSpec::new("j", vec!["true".into()]);
        let old = BatchEntry::pending("j", BTreeMap::new());
        let mut t = Tracked::new("polyprof-k-0-0".into());
        let mut nodes = NodeNames::default();
        let died = fixture("job-node-died.json");
        let node = died.driver_node_id.clone().unwrap();
        nodes.ips.insert(node, "127.0.0.4".into());
        let answer = Answer::Known(Some(died));
        let long = Duration::from_secs(3600);
        assert!(
            judge(
                &mut t,
                &spec,
                &old,
                &answer,
                &nodes,
                &round(root.path(), false, long)
            )
            .is_none()
        );
        let lost = judge(
            &mut t,
            &spec,
            &old,
            &answer,
            &nodes,
            &round(root.path(), false, Duration::ZERO),
        )
        .unwrap();
        assert!(lost.from_ray);
        assert_eq!(lost.entry.state, EntryState::Lost);
        let text = lost.entry.errors.join("\n");
        assert!(text.contains("JOB_SUPERVISOR_ACTOR_DIED"), "{text}");
        assert!(text.contains("on 127.0.0.4"), "{text}");
        assert_eq!(
            lost.entry.ray.unwrap().node_ip.as_deref(),
            Some("127.0.0.4")
        );
        // The entry this submission wrote is the truth, whatever Ray said; one written by an
        // earlier submission is not.
        let mut done = BatchEntry::pending("j", BTreeMap::new());
        done.state = EntryState::Succeeded;
        done.ray = Some(RayJobInfo {
            submission_id: "polyprof-k-0-1".into(),
            ..Default::default()
        });
        let dir = run_dir(root.path(), "j");
        std::fs::create_dir_all(&dir).unwrap();
        done.write_atomic(&dir).unwrap();
        let zero = round(root.path(), false, Duration::ZERO);
        assert_eq!(
            judge(&mut t, &spec, &old, &answer, &nodes, &zero)
                .unwrap()
                .entry
                .state,
            EntryState::Lost
        );
        done.ray = Some(RayJobInfo {
            submission_id: "polyprof-k-0-0".into(),
            ..Default::default()
        });
        done.write_atomic(&dir).unwrap();
        let taken = judge(&mut t, &spec, &old, &answer, &nodes, &zero).unwrap();
        assert!(!taken.from_ray);
        assert_eq!(taken.entry.state, EntryState::Succeeded);
        assert_eq!(taken.entry.ray.unwrap().status.as_deref(), Some("FAILED"));
    }

    #[test]
    fn stopped_jobs_are_cancelled_or_timed_out_and_unanswered_polls_are_no_news() {
        let root = tempfile::tempdir().unwrap();
        let spec = JobSpec::new("j", vec!["true".into()]);
        let mut running = BatchEntry::pending("j", BTreeMap::new());
        running.state = EntryState::Running;
        let nodes = NodeNames::default();
        let zero = Duration::ZERO;
        let mut t = Tracked::new("s".into());
        for _ in 0..3 {
            assert!(
                judge(
                    &mut t,
                    &spec,
                    &running,
                    &Answer::Unanswered,
                    &nodes,
                    &round(root.path(), false, zero)
                )
                .is_none()
            );
        }
        let stopped = Answer::Known(Some(fixture("job-stopped.json")));
        let cancelled = judge(
            &mut t,
            &spec,
            &running,
            &stopped,
            &nodes,
            &round(root.path(), true, zero),
        )
        .unwrap();
        assert_eq!(cancelled.entry.state, EntryState::Cancelled);
        let mut t = Tracked::new("s".into());
        t.timed_out = true;
        let timed_out = judge(
            &mut t,
            &spec,
            &running,
            &stopped,
            &nodes,
            &round(root.path(), false, zero),
        )
        .unwrap();
        assert_eq!(timed_out.entry.state, EntryState::TimedOut);
        assert!(
            timed_out.entry.errors[0].contains("time limit of 5 s"),
            "{:?}",
            timed_out.entry.errors
        );
        // Ray forgot the job entirely: lost (cancelled after our stop).
        let mut t = Tracked::new("s".into());
        let forgot = Answer::Known(None);
        let lost = judge(
            &mut t,
            &spec,
            &running,
            &forgot,
            &nodes,
            &round(root.path(), false, zero),
        )
        .unwrap();
        assert_eq!(lost.entry.state, EntryState::Lost);
    }
}
