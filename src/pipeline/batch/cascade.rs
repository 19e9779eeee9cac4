//! The cheapest-first cascade over the jobs of a job file's `problem`s: a candidate's stage
//! runs only once its previous stage passed, and its `profile` stage only when its time is
//! within the problem's margin of the best time (and among the top K) once every candidate of
//! the problem has been timed. Pure: it reads the index, the pool acts on its answers.

use std::collections::HashMap;

use crate::model::batch::{
    BatchEntry, BatchIndex, CascadeSkip, CascadeSummary, EntryState, StageCounts,
};

use super::spec::JobSpec;
use super::stage::{Stage, StageRef};

/// A problem's ranking of times (see `Cascade::ranking`).
#[derive(Debug, Clone)]
pub struct Ranking {
    timed: Vec<(f64, usize)>,
    unit: &'static str,
}

/// Rankings by problem, made once per state of the index.
pub type Rankings = HashMap<String, Option<Ranking>>;

/// What the cascade says of a queued job now.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Run,
    /// An earlier stage (of this candidate, or the time stage of its problem) has not ended.
    Wait,
    Skip(CascadeSkip),
}

/// The cascade of a batch: where each stage's job is.
#[derive(Debug, Clone, Default)]
pub struct Cascade {
    /// Job position → the position of the same candidate's previous stage (decided once:
    /// the scheduler asks after every job's end).
    before: HashMap<usize, usize>,
    /// Job position → the same candidate's next stage.
    after: HashMap<usize, usize>,
    /// problem → its candidates' `profile` jobs (decided when its last time stage ends).
    profiles: HashMap<String, Vec<usize>>,
    /// Whether any job is a stage.
    any: bool,
    /// problem → the positions of its candidates' `time` jobs, in file order.
    times: HashMap<String, Vec<usize>>,
    /// Every stage runs for every candidate (`--all-stages`): the cascade only labels.
    all_stages: bool,
}

/// Whether a finished stage lets the next one run: a command's exited 0; an eval's verdict
/// passed (correct, no finding) and, for `time`, has a time.
pub fn passed(stage: &StageRef, entry: &BatchEntry) -> bool {
    if entry.state != EntryState::Succeeded {
        return false;
    }
    if !stage.eval || stage.stage == Stage::Compile {
        return true;
    }
    entry.eval.as_ref().is_some_and(|e| {
        e.passed && (stage.stage != Stage::Time || e.score_ms.is_some_and(f64::is_finite))
    })
}

/// The figure a `time` stage is ranked by, and its unit: the eval's score (ms per call) or
/// a command's wall time (s).
pub fn time_figure(stage: &StageRef, entry: &BatchEntry) -> Option<(f64, &'static str)> {
    if stage.eval {
        entry.eval.as_ref()?.score_ms.map(|ms| (ms, "ms"))
    } else {
        entry.duration_s.map(|s| (s, "s"))
    }
}

/// Why a finished stage did not pass, in a few words.
fn why_not(entry: &BatchEntry) -> String {
    if entry.state == EntryState::Succeeded {
        return match &entry.eval {
            Some(e) if !e.passed => {
                let mut text = format!("verdict {}", e.status);
                if !e.findings.is_empty() {
                    text.push_str(&format!(", findings: {}", e.findings.join(", ")));
                }
                text
            }
            Some(_) => "no time measured".to_string(),
            None => "succeeded".to_string(),
        };
    }
    let mut text = entry.state.to_string();
    if let Some(o) = &entry.outcome {
        text.push_str(&format!(", {o}"));
    }
    if let Some(e) = entry.errors.last() {
        text.push_str(&format!(": {}", e.chars().take(160).collect::<String>()));
    }
    text
}

impl Cascade {
    /// The cascade over `specs`; `None` when no job is a stage of a problem.
    pub fn new(specs: &[JobSpec], all_stages: bool) -> Option<Self> {
        let mut cascade = Cascade {
            all_stages,
            ..Default::default()
        };
        let mut by_stage: HashMap<(&str, &str, usize), usize> = HashMap::new();
        for (i, spec) in specs.iter().enumerate() {
            let Some(s) = &spec.stage else { continue };
            cascade.any = true;
            by_stage.insert((&s.problem, &s.candidate, s.level), i);
            if s.stage == Stage::Time {
                cascade.times.entry(s.problem.clone()).or_default().push(i);
            }
            if s.stage == Stage::Profile {
                cascade
                    .profiles
                    .entry(s.problem.clone())
                    .or_default()
                    .push(i);
            }
        }
        for (i, spec) in specs.iter().enumerate() {
            if let Some(s) = &spec.stage
                && s.level > 0
                && let Some(&b) =
                    by_stage.get(&(s.problem.as_str(), s.candidate.as_str(), s.level - 1))
            {
                cascade.before.insert(i, b);
                cascade.after.insert(b, i);
            }
        }
        cascade.any.then_some(cascade)
    }

    /// The jobs whose decision may change now that job `job` has ended (or was skipped): the
    /// candidate's next stage and, when `job` was its problem's last time stage to end, the
    /// problem's profile jobs.
    pub fn dependents(&self, specs: &[JobSpec], job: usize, index: &BatchIndex) -> Vec<usize> {
        let mut out: Vec<usize> = self.after.get(&job).copied().into_iter().collect();
        if let Some(s) = &specs[job].stage
            && s.stage == Stage::Time
            && let Some(profiles) = self.profiles.get(&s.problem)
            && self.ranking(specs, &s.problem, index).is_some()
        {
            out.extend(profiles);
        }
        out
    }

    /// Whether job `job` runs now, waits, or is skipped, given what `index` says of the
    /// others.
    pub fn decide(&self, specs: &[JobSpec], job: usize, index: &BatchIndex) -> Decision {
        self.decide_with(specs, job, index, &mut Rankings::new())
    }

    /// [`Cascade::decide`] for many jobs against one state of the index: each problem's
    /// ranking of times is made once (`rankings`, empty at first) for all its profile jobs.
    pub fn decide_with(
        &self,
        specs: &[JobSpec],
        job: usize,
        index: &BatchIndex,
        rankings: &mut Rankings,
    ) -> Decision {
        let Some(stage) = &specs[job].stage else {
            return Decision::Run;
        };
        if self.all_stages || stage.level == 0 {
            return Decision::Run;
        }
        let entry_of = |i: usize| index.jobs.get(&specs[i].id);
        let Some(&before) = self.before.get(&job) else {
            return Decision::Run;
        };
        let (Some(prev_stage), Some(prev)) = (&specs[before].stage, entry_of(before)) else {
            return Decision::Wait;
        };
        if !prev.state.is_final() {
            return Decision::Wait;
        }
        if prev.state == EntryState::Skipped {
            // The stage that decided, and why, carry on to the later stages.
            let earlier = prev.cascade.as_ref().and_then(|c| c.skip.clone());
            return Decision::Skip(earlier.unwrap_or_else(|| CascadeSkip {
                decided_by: prev_stage.stage.to_string(),
                reason: format!("stage `{}` was skipped", prev_stage.stage),
                figure: None,
                limit: None,
            }));
        }
        if !passed(prev_stage, prev) {
            return Decision::Skip(CascadeSkip {
                decided_by: prev_stage.stage.to_string(),
                reason: format!(
                    "stage `{}` did not pass ({})",
                    prev_stage.stage,
                    why_not(prev)
                ),
                figure: None,
                limit: None,
            });
        }
        if stage.stage == Stage::Profile && prev_stage.stage == Stage::Time {
            return self.profile_rule(specs, stage, before, index, rankings);
        }
        Decision::Run
    }

    /// A problem's candidates that passed their `time` stage, fastest first (ties in file
    /// order), and the figures' unit; `None` while one of its time stages has not ended.
    fn ranking(&self, specs: &[JobSpec], problem: &str, index: &BatchIndex) -> Option<Ranking> {
        let times = self.times.get(problem).map_or(&[][..], Vec::as_slice);
        let mut timed: Vec<(f64, usize)> = Vec::new();
        let mut unit = "ms";
        for &t in times {
            let (s, e) = (specs[t].stage.as_ref()?, index.jobs.get(&specs[t].id)?);
            if !e.state.is_final() {
                return None;
            }
            if passed(s, e)
                && let Some((figure, u)) = time_figure(s, e)
            {
                unit = u;
                timed.push((figure, t));
            }
        }
        timed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        Some(Ranking { timed, unit })
    }

    /// The margin and top-K rule for the profile job whose time job is `time_job`, once
    /// every candidate of the problem has been timed.
    fn profile_rule(
        &self,
        specs: &[JobSpec],
        stage: &StageRef,
        time_job: usize,
        index: &BatchIndex,
        rankings: &mut Rankings,
    ) -> Decision {
        let rule = stage.rule;
        if rule.margin.is_none() && rule.top_k.is_none() {
            return Decision::Run;
        }
        let ranking = rankings
            .entry(stage.problem.clone())
            .or_insert_with(|| self.ranking(specs, &stage.problem, index));
        let Some(Ranking { timed, unit }) = ranking.as_ref() else {
            return Decision::Wait;
        };
        let unit = *unit;
        let Some(rank) = timed.iter().position(|&(_, t)| t == time_job) else {
            // Its time stage passed (decide checked), so it is ranked; anything else is a bug
            // of the file's shape, and profiling is the safe answer.
            return Decision::Run;
        };
        let figure = timed[rank].0;
        let (best, best_job) = timed[0];
        let best_name = specs[best_job]
            .stage
            .as_ref()
            .map_or("?", |s| s.candidate.as_str());
        if let Some(margin) = rule.margin {
            let limit = best * (1.0 + margin);
            if figure > limit {
                return Decision::Skip(CascadeSkip {
                    decided_by: Stage::Profile.to_string(),
                    reason: format!(
                        "time {figure:.4} {unit} is above {limit:.4} {unit}: the best of problem `{}` ({best:.4} {unit}, candidate `{best_name}`) + {:.0} % margin",
                        stage.problem,
                        margin * 100.0
                    ),
                    figure: Some(figure),
                    limit: Some(limit),
                });
            }
        }
        if let Some(k) = rule.top_k
            && rank >= k
        {
            let limit = timed[k - 1].0;
            return Decision::Skip(CascadeSkip {
                decided_by: Stage::Profile.to_string(),
                reason: format!(
                    "time {figure:.4} {unit} ranks {} of {} in problem `{}`; only the top {k} are profiled (the {k}th: {limit:.4} {unit})",
                    rank + 1,
                    timed.len(),
                    stage.problem
                ),
                figure: Some(figure),
                limit: Some(limit),
            });
        }
        Decision::Run
    }
}

/// Set the index's cascade summary from its entries (with the profile cache's saving, when the
/// index has the cache's figures): the local pool's last write and the remote drivers' alike.
pub fn summarize(specs: &[JobSpec], index: &mut BatchIndex) {
    index.cascade = summary(specs, index);
    if let (Some(cascade), Some(cache)) = (index.cascade.as_mut(), index.profile_cache.as_ref()) {
        cascade.saved_by_cache_s = Some(cache.saved_s);
    }
}

/// The skipped entry of job `spec`.
pub fn skipped_entry(spec: &JobSpec, skip: CascadeSkip) -> BatchEntry {
    let mut entry = spec.pending_entry();
    entry.state = EntryState::Skipped;
    entry.definition_digest = Some(spec.definition_digest());
    entry.errors = vec![format!("skipped by the cascade: {}", skip.reason)];
    if let Some(c) = entry.cascade.as_mut() {
        c.skip = Some(skip);
    }
    entry
}

/// Per stage: the jobs that ran, passed and were skipped, their device time, and the device
/// seconds the skips saved. What a skipped job would have cost: an eval stage skipped because
/// an earlier stage failed would have failed the same way (an eval stops at the failed
/// correctness check, or at the import of a candidate that does not compile), so about that
/// failed job's own duration; any other skip (a command stage, the profile rule), the mean
/// duration of the jobs of its stage that ran.
pub fn summary(specs: &[JobSpec], index: &BatchIndex) -> Option<CascadeSummary> {
    let mut per: Vec<(Stage, StageCounts)> = Vec::new();
    let mut took: HashMap<(&str, &str, &str), f64> = HashMap::new();
    let mut skips: Vec<(&StageRef, &CascadeSkip)> = Vec::new();
    for spec in specs {
        let (Some(stage), Some(entry)) = (&spec.stage, index.jobs.get(&spec.id)) else {
            continue;
        };
        let at = match per.iter().position(|(s, _)| *s == stage.stage) {
            Some(at) => at,
            None => {
                per.push((
                    stage.stage,
                    StageCounts {
                        stage: stage.stage.to_string(),
                        ..Default::default()
                    },
                ));
                per.len() - 1
            }
        };
        let counts = &mut per[at].1;
        match entry.state {
            EntryState::Skipped => {
                counts.skipped += 1;
                if let Some(skip) = entry.cascade.as_ref().and_then(|c| c.skip.as_ref()) {
                    skips.push((stage, skip));
                }
            }
            state if state.is_final() && entry.attempts > 0 => {
                counts.ran += 1;
                counts.passed += usize::from(passed(stage, entry));
                let d = entry.duration_s.unwrap_or(0.0);
                counts.device_s += d;
                took.insert((&stage.problem, &stage.candidate, stage.stage.name()), d);
            }
            _ => {}
        }
    }
    if per.is_empty() {
        return None;
    }
    per.sort_by_key(|(s, _)| *s);
    let mean = |stage: Stage| {
        per.iter()
            .find(|(s, c)| *s == stage && c.ran > 0)
            .map(|(_, c)| c.device_s / c.ran as f64)
    };
    let mut saved = 0.0;
    let mut unestimated: Vec<String> = Vec::new();
    for (stage, skip) in skips {
        let failed_before = stage.eval && skip.decided_by != Stage::Profile.name();
        let like_the_failure = failed_before
            .then(|| {
                took.get(&(
                    stage.problem.as_str(),
                    stage.candidate.as_str(),
                    skip.decided_by.as_str(),
                ))
            })
            .flatten()
            .copied();
        match like_the_failure.or_else(|| mean(stage.stage)) {
            Some(s) => saved += s,
            None => {
                if !unestimated.iter().any(|u| u == stage.stage.name()) {
                    unestimated.push(stage.stage.to_string());
                }
            }
        }
    }
    Some(CascadeSummary {
        stages: per.into_iter().map(|(_, c)| c).collect(),
        saved_device_s: saved,
        unestimated,
        saved_by_cache_s: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::batch::{Backend, EvalSummary};
    use crate::pipeline::batch::problem::ProblemSpec;

    fn specs(profile: serde_json::Value) -> Vec<JobSpec> {
        serde_json::from_value::<ProblemSpec>(serde_json::json!({
            "id": "mm", "reference": "r.py",
            "candidates": ["a.py", "b.py", "c.py", "d.py"],
            "stages": ["check", "time", "profile"],
            "profile": profile, "eval": {"device": "cpu"}
        }))
        .unwrap()
        .expand()
        .unwrap()
    }

    fn index(specs: &[JobSpec]) -> BatchIndex {
        BatchIndex::new(
            "jobs",
            Backend::Local,
            specs.iter().map(JobSpec::pending_entry),
        )
    }

    /// Record job `id` as ended: `passed` and, for a time stage, `ms`.
    fn ended(index: &mut BatchIndex, id: &str, passed: bool, ms: Option<f64>) {
        let e = index.jobs.get_mut(id).unwrap();
        e.state = EntryState::Succeeded;
        e.attempts = 1;
        e.duration_s = Some(2.0);
        e.eval = Some(EvalSummary {
            passed,
            status: if passed { "correct" } else { "incorrect" }.into(),
            score_ms: ms,
            ..Default::default()
        });
    }

    fn decision(c: &Cascade, specs: &[JobSpec], index: &BatchIndex, id: &str) -> Decision {
        let job = specs.iter().position(|s| s.id == id).unwrap();
        c.decide(specs, job, index)
    }

    #[test]
    fn a_stage_waits_for_the_one_before_and_a_failed_check_skips_the_rest() {
        let specs = specs(serde_json::json!({}));
        let c = Cascade::new(&specs, false).unwrap();
        let mut index = index(&specs);
        assert_eq!(decision(&c, &specs, &index, "mm.a.check"), Decision::Run);
        assert_eq!(decision(&c, &specs, &index, "mm.a.time"), Decision::Wait);
        ended(&mut index, "mm.a.check", false, None);
        let Decision::Skip(skip) = decision(&c, &specs, &index, "mm.a.time") else {
            panic!("not skipped")
        };
        assert_eq!(skip.decided_by, "check");
        assert!(skip.reason.contains("verdict incorrect"), "{}", skip.reason);
        let a_time = specs.iter().find(|s| s.id == "mm.a.time").unwrap();
        index
            .jobs
            .insert(a_time.id.clone(), skipped_entry(a_time, skip));
        let Decision::Skip(skip) = decision(&c, &specs, &index, "mm.a.profile") else {
            panic!("not skipped")
        };
        assert_eq!(skip.decided_by, "check");
        assert!(
            skip.reason.contains("stage `check` did not pass"),
            "{}",
            skip.reason
        );
        // Without a rule, every candidate that was timed is profiled.
        ended(&mut index, "mm.b.check", true, None);
        ended(&mut index, "mm.b.time", true, Some(9.0));
        assert_eq!(decision(&c, &specs, &index, "mm.b.profile"), Decision::Run);
        // --all-stages runs everything at once.
        let all = Cascade::new(&specs, true).unwrap();
        assert_eq!(
            decision(&all, &specs, &index, "mm.c.profile"),
            Decision::Run
        );
    }

    #[test]
    fn profile_waits_for_every_time_then_keeps_the_margin_and_the_top_k() {
        let specs = specs(serde_json::json!({"margin": 0.5, "top_k": 2}));
        let c = Cascade::new(&specs, false).unwrap();
        let mut index = index(&specs);
        for (name, ms) in [("a", 10.0), ("b", 14.0), ("c", 30.0)] {
            ended(&mut index, &format!("mm.{name}.check"), true, None);
            ended(&mut index, &format!("mm.{name}.time"), true, Some(ms));
        }
        ended(&mut index, "mm.d.check", true, None);
        // d is not timed yet: nobody's profile decision can be made.
        assert_eq!(decision(&c, &specs, &index, "mm.a.profile"), Decision::Wait);
        let pos = |id: &str| specs.iter().position(|s| s.id == id).unwrap();
        // Before the last time stage ends, only the candidate's next stage waits on it.
        assert_eq!(
            c.dependents(&specs, pos("mm.a.time"), &index),
            [pos("mm.a.profile")]
        );
        assert_eq!(
            c.dependents(&specs, pos("mm.d.check"), &index),
            [pos("mm.d.time")]
        );
        ended(&mut index, "mm.d.time", true, Some(12.0));
        // The last one decides every profile job of the problem.
        let mut after_last = c.dependents(&specs, pos("mm.d.time"), &index);
        after_last.sort_unstable();
        after_last.dedup();
        let mut profiles = ["a", "b", "c", "d"].map(|n| pos(&format!("mm.{n}.profile")));
        profiles.sort_unstable();
        assert_eq!(after_last, profiles);
        assert_eq!(decision(&c, &specs, &index, "mm.a.profile"), Decision::Run);
        assert_eq!(decision(&c, &specs, &index, "mm.d.profile"), Decision::Run);
        // b is within the margin (14 ≤ 15) but third: out by the top 2.
        let Decision::Skip(b) = decision(&c, &specs, &index, "mm.b.profile") else {
            panic!("b profiled")
        };
        assert_eq!((b.figure, b.limit), (Some(14.0), Some(12.0)));
        assert!(b.reason.contains("ranks 3 of 4"), "{}", b.reason);
        let Decision::Skip(slow) = decision(&c, &specs, &index, "mm.c.profile") else {
            panic!("c profiled")
        };
        assert_eq!((slow.figure, slow.limit), (Some(30.0), Some(15.0)));
        assert!(slow.reason.contains("candidate `a`"), "{}", slow.reason);
    }

    #[test]
    fn the_summary_counts_each_stage_and_estimates_the_savings() {
        let specs = specs(serde_json::json!({"top_k": 1}));
        let mut index = index(&specs);
        ended(&mut index, "mm.a.check", true, None);
        ended(&mut index, "mm.a.time", true, Some(1.0));
        ended(&mut index, "mm.a.profile", true, None);
        ended(&mut index, "mm.b.check", true, None);
        ended(&mut index, "mm.b.time", true, Some(2.0));
        for id in ["mm.c.check", "mm.d.check"] {
            ended(&mut index, id, false, None);
            // An incorrect candidate's eval stops early: cheaper than a full one.
            index.jobs.get_mut(id).unwrap().duration_s = Some(0.5);
        }
        for (id, decided_by) in [
            ("mm.b.profile", "profile"),
            ("mm.c.time", "check"),
            ("mm.c.profile", "check"),
            ("mm.d.time", "check"),
            ("mm.d.profile", "check"),
        ] {
            let spec = specs.iter().find(|s| s.id == id).unwrap();
            let skip = CascadeSkip {
                decided_by: decided_by.into(),
                reason: "test".into(),
                ..Default::default()
            };
            index.jobs.insert(id.into(), skipped_entry(spec, skip));
        }
        let s = summary(&specs, &index).unwrap();
        let counts: Vec<(&str, usize, usize, usize)> = s
            .stages
            .iter()
            .map(|c| (c.stage.as_str(), c.ran, c.passed, c.skipped))
            .collect();
        assert_eq!(
            counts,
            [("check", 4, 2, 0), ("time", 2, 2, 2), ("profile", 1, 1, 3)]
        );
        // b's profile, out by the rule: the profile stage's mean, 2 s; the four stages after
        // a failed check would have stopped as the check did: 0.5 s each.
        assert!(
            (s.saved_device_s - 4.0).abs() < 1e-9,
            "{}",
            s.saved_device_s
        );
        assert!(s.saved_by_cache_s.is_none() && s.unestimated.is_empty());
    }
}
