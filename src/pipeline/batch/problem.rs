//! A `problem` of a job file: one reference (or one command), many candidates, and the stages
//! of the cascade each candidate goes through (`compile`, `check`, `time`, `profile`). A
//! problem expands into ordinary jobs, one per candidate and stage (`<problem>.<candidate>.<stage>`),
//! each tagged with its [`StageRef`]; the cascade ([`super::cascade`]) decides which of them run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::cache_setting::ProfileCacheSetting;
use super::eval_table::EvalJob;
use super::spec::{JobSpec, check_id};
use super::stage::{ProfileRule, Stage, StageRef};
use crate::profilers::settings::BackendOverrides;

/// A `problem` table of the job file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProblemSpec {
    /// Names the problem; its jobs are `<id>.<candidate>.<stage>`.
    pub id: String,
    /// The reference problem (KernelBench format): the candidates are evals against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<PathBuf>,
    /// Or a command run for each candidate (`{candidate}` in a word is the candidate's path).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target: Vec<String>,
    /// The candidates' paths; each is named by its file stem (`cands/k7.py` → `k7`).
    pub candidates: Vec<PathBuf>,
    /// The stages each candidate goes through, in order.
    pub stages: Vec<Stage>,
    /// The `compile` stage's command (`{candidate}`, `{reference}` replaced).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compile: Vec<String>,
    /// The `check` stage's command, for a `target` problem.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check: Vec<String>,
    /// Which candidates are profiled.
    #[serde(default)]
    pub profile: ProfileRule,
    /// A `target` problem's profile stage runs the command under this profiler (default ncu).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiler: Option<String>,
    /// Nsight Compute's settings of a `target` problem's profile stage (`preset`,
    /// `clock_control`, …), as a job's `ncu`: kept as given and read as the job's backend
    /// settings (the batch names no vendor's module; a named key rather than flattened
    /// settings, with which serde would stop naming a mistyped key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ncu: Option<serde_json::Value>,
    /// The profile cache for a `target` problem's profile stage (as a job's `profile_cache`);
    /// its keys are scoped by the problem unless the table names a scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_cache: Option<ProfileCacheSetting>,
    /// The eval's options for every candidate (an `eval` table without `reference` and
    /// `candidate`); each stage takes what it needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    #[serde(
        default,
        deserialize_with = "super::spec::unique_keys",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub env: BTreeMap<String, String>,
    #[serde(
        default,
        deserialize_with = "super::spec::unique_keys",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
}

/// Replace `{candidate}` and `{reference}` in each word.
fn fill(words: &[String], candidate: &Path, reference: Option<&Path>) -> Vec<String> {
    let candidate = candidate.to_string_lossy();
    let reference = reference.map(|r| r.to_string_lossy()).unwrap_or_default();
    words
        .iter()
        .map(|w| {
            w.replace("{candidate}", &candidate)
                .replace("{reference}", &reference)
        })
        .collect()
}

impl ProblemSpec {
    /// The name of candidate `path`: its file stem.
    pub fn candidate_name(path: &Path) -> String {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Checks that need no file; the message says what to change.
    pub fn validate(&self) -> Result<(), String> {
        check_id(&self.id).map_err(|e| format!("problem: {e}"))?;
        let id = &self.id;
        match (&self.reference, self.target.is_empty()) {
            (Some(_), false) => {
                return Err(format!(
                    "problem `{id}`: give either `reference` (candidates judged by evals) or `target` (a command per candidate), not both"
                ));
            }
            (None, true) => {
                return Err(format!(
                    "problem `{id}`: give `reference` (a KernelBench problem) or `target` (a command with `{{candidate}}`)"
                ));
            }
            _ => {}
        }
        if self.candidates.is_empty() {
            return Err(format!(
                "problem `{id}`: `candidates` is empty; list the candidates' paths"
            ));
        }
        if self.stages.is_empty() {
            return Err(format!(
                "problem `{id}`: `stages` is empty; give some of compile, check, time, profile, in that order"
            ));
        }
        if self.stages.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!(
                "problem `{id}`: `stages` must be in the order compile, check, time, profile, each at most once"
            ));
        }
        let has = |s: Stage| self.stages.contains(&s);
        if has(Stage::Compile) == self.compile.is_empty() {
            return Err(format!(
                "problem `{id}`: the `compile` stage and the `compile` command go together; give both or neither"
            ));
        }
        if self.reference.is_none() && has(Stage::Check) == self.check.is_empty() {
            return Err(format!(
                "problem `{id}`: a `target` problem's `check` stage runs the `check` command; give both or neither"
            ));
        }
        if self.reference.is_some() && !self.check.is_empty() {
            return Err(format!(
                "problem `{id}`: `check` (a command) is for a `target` problem; a `reference` problem's check is its eval"
            ));
        }
        if self.reference.is_none() && self.eval.is_some() {
            return Err(format!(
                "problem `{id}`: `eval` options are for a `reference` problem"
            ));
        }
        let rule = self.profile;
        if let Some(m) = rule.margin
            && !(m.is_finite() && m >= 0.0)
        {
            return Err(format!(
                "problem `{id}`: `profile.margin` = {m}; give a fraction of 0 or more (0.1: within 10 % of the best time)"
            ));
        }
        if rule.top_k == Some(0) {
            return Err(format!(
                "problem `{id}`: `profile.top_k` = 0 would profile nothing; give 1 or more (or drop the `profile` stage)"
            ));
        }
        if (rule.margin.is_some() || rule.top_k.is_some())
            && !(has(Stage::Time) && has(Stage::Profile))
        {
            return Err(format!(
                "problem `{id}`: `profile.margin` and `profile.top_k` compare the `time` stage's figures; they need both the `time` and the `profile` stage"
            ));
        }
        if let Some(setting) = &self.profile_cache {
            setting
                .validate()
                .map_err(|why| format!("problem `{id}`: {why}"))?;
            if self.reference.is_some() {
                return Err(format!(
                    "problem `{id}`: `profile_cache` applies to a `target` problem's profile stage (a command under its profiler); a `reference` problem's evals profile each candidate on the eval's own fresh inputs and never serve a cached profile; remove `profile_cache`"
                ));
            }
            if !has(Stage::Profile) {
                return Err(format!(
                    "problem `{id}`: `profile_cache` is for the `profile` stage; add it to `stages` or remove `profile_cache`"
                ));
            }
        }
        self.backend()?;
        if self.reference.is_some() && self.ncu.is_some() {
            return Err(format!(
                "problem `{id}`: backend settings (`ncu`) are for a `target` problem's profile stage; a `reference` problem's witness takes `eval.witness_profiler`"
            ));
        }
        let mut seen = BTreeMap::new();
        for path in &self.candidates {
            let name = Self::candidate_name(path);
            check_id(&name).map_err(|e| {
                format!(
                    "problem `{id}`: candidate `{}` is named by its file stem: {e}",
                    path.display()
                )
            })?;
            if let Some(first) = seen.insert(name.clone(), path) {
                return Err(format!(
                    "problem `{id}`: candidates `{}` and `{}` have the same name `{name}` (the file stem); rename one",
                    first.display(),
                    path.display()
                ));
            }
        }
        Ok(())
    }

    /// The jobs of this problem: for each candidate (in the given order), one per stage.
    pub fn expand(&self) -> Result<Vec<JobSpec>, String> {
        self.validate()?;
        let mut jobs = Vec::new();
        for path in &self.candidates {
            let candidate = Self::candidate_name(path);
            for (level, &stage) in self.stages.iter().enumerate() {
                let mut job = self.stage_job(path, stage)?;
                job.id = format!("{}.{candidate}.{stage}", self.id);
                job.timeout_s = self.timeout_s;
                job.env = self.env.clone();
                job.labels = self.labels.clone();
                job.labels.insert("problem".into(), self.id.clone());
                job.labels.insert("candidate".into(), candidate.clone());
                job.labels.insert("stage".into(), stage.name().into());
                job.stage = Some(StageRef {
                    problem: self.id.clone(),
                    candidate: candidate.clone(),
                    stage,
                    level,
                    rule: self.profile,
                    eval: job.eval.is_some(),
                    cache_scope: Some(self.cache_scope()),
                });
                job.validate()?;
                jobs.push(job);
            }
        }
        Ok(jobs)
    }

    /// The profile stage's backend settings (the problem's `ncu`, read as a job's).
    fn backend(&self) -> Result<BackendOverrides, String> {
        let Some(ncu) = &self.ncu else {
            return Ok(BackendOverrides::default());
        };
        serde_json::from_value(serde_json::json!({ "ncu": ncu }))
            .map_err(|e| format!("problem `{}`: `ncu`: {e}", self.id))
    }

    /// The profile cache's key scope of this problem's candidates: its id and what it judges
    /// them by (the reference, or the target command before `{candidate}` is filled in).
    pub fn cache_scope(&self) -> String {
        match &self.reference {
            Some(reference) => format!("problem {}; reference {}", self.id, reference.display()),
            None => format!(
                "problem {}; target {}",
                self.id,
                serde_json::to_string(&self.target).unwrap_or_default()
            ),
        }
    }

    /// What `stage` runs for the candidate at `path`: a command, or an eval whose options do
    /// that stage's part only.
    fn stage_job(&self, path: &Path, stage: Stage) -> Result<JobSpec, String> {
        let reference = self.reference.as_deref();
        let command = |words: &[String], profiler: &str| JobSpec {
            target: fill(words, path, reference),
            profiler: Some(profiler.to_string()),
            ..Default::default()
        };
        let Some(reference) = reference else {
            return Ok(match stage {
                Stage::Compile => command(&self.compile, "none"),
                Stage::Check => command(&self.check, "none"),
                Stage::Time => command(&self.target, "none"),
                Stage::Profile => JobSpec {
                    profile_cache: self.profile_cache.clone(),
                    backend: self.backend()?,
                    ..command(&self.target, self.profiler.as_deref().unwrap_or("ncu"))
                },
            });
        };
        if stage == Stage::Compile {
            return Ok(command(&self.compile, "none"));
        }
        let mut table = self.eval.clone().unwrap_or_default();
        for key in ["reference", "candidate"] {
            if table.contains_key(key) {
                return Err(format!(
                    "problem `{}`: `eval.{key}` is given by the problem (`reference`, `candidates`); remove it",
                    self.id
                ));
            }
        }
        table.insert("reference".into(), serde_json::json!(reference));
        table.insert("candidate".into(), serde_json::json!(path));
        let stage_keys: &[(&str, serde_json::Value)] = match stage {
            // Correctness only: the cheapest judgement.
            Stage::Check => &[
                ("timing_blocks", serde_json::json!(0)),
                ("witness_profiler", serde_json::json!("none")),
                ("work_pass", serde_json::json!(false)),
            ],
            // The timing the margin rule compares, without the profilers' cost.
            Stage::Time => &[
                ("witness_profiler", serde_json::json!("none")),
                ("work_pass", serde_json::json!(false)),
            ],
            // The witness and the work pass as the table says, not timed again.
            Stage::Profile => &[("timing_blocks", serde_json::json!(0))],
            Stage::Compile => &[],
        };
        for (key, value) in stage_keys {
            table.insert((*key).into(), value.clone());
        }
        let eval: EvalJob = serde_json::from_value(serde_json::Value::Object(table))
            .map_err(|e| format!("problem `{}`: `eval`: {e}", self.id))?;
        Ok(JobSpec {
            eval: Some(eval),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::profile_cache::ProfileCacheOptions;

    fn problem(json: serde_json::Value) -> Result<Vec<JobSpec>, String> {
        serde_json::from_value::<ProblemSpec>(json)
            .map_err(|e| e.to_string())?
            .expand()
    }

    #[test]
    fn each_candidate_gets_each_stage_with_that_stages_options() {
        let jobs = problem(serde_json::json!({
            "id": "mm", "reference": "p/mm.py", "candidates": ["c/k1.py", "c/k2.py"],
            "stages": ["compile", "check", "time", "profile"],
            "compile": ["python3", "-m", "py_compile", "{candidate}"],
            "profile": {"margin": 0.1, "top_k": 2},
            "eval": {"device": "cpu", "trials": 2, "timing_blocks": 3},
            "timeout_s": 30
        }))
        .unwrap();
        let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "mm.k1.compile",
                "mm.k1.check",
                "mm.k1.time",
                "mm.k1.profile",
                "mm.k2.compile",
                "mm.k2.check",
                "mm.k2.time",
                "mm.k2.profile"
            ]
        );
        assert_eq!(jobs[0].target, ["python3", "-m", "py_compile", "c/k1.py"]);
        let check = jobs[1].eval.as_ref().unwrap().options(None);
        assert_eq!(check.timing_blocks, 0);
        assert!(check.witness_profiler.is_none() && !check.work_pass);
        assert_eq!(check.trials, 2);
        let time = jobs[2].eval.as_ref().unwrap().options(None);
        assert_eq!(time.timing_blocks, 3);
        assert!(time.witness_profiler.is_none() && !time.work_pass);
        let profile = jobs[3].eval.as_ref().unwrap().options(None);
        assert_eq!(profile.timing_blocks, 0);
        assert!(profile.work_pass && profile.witness_profiler.as_deref() == Some("ncu"));
        let stage = jobs[3].stage.as_ref().unwrap();
        assert_eq!((stage.level, stage.rule.top_k), (3, Some(2)));
        assert_eq!(jobs[3].labels["candidate"], "k1");
        assert_eq!(jobs[3].timeout_s, Some(30.0));
        // Each stage is its own definition, so resume tells them apart.
        assert_ne!(jobs[1].definition_digest(), jobs[2].definition_digest());
    }

    #[test]
    fn a_command_problem_runs_its_commands() {
        let jobs = problem(serde_json::json!({
            "id": "bench", "target": ["./bench", "{candidate}"], "candidates": ["a.so"],
            "stages": ["check", "time", "profile"], "check": ["./check", "{candidate}"],
            "profiler": "none"
        }))
        .unwrap();
        assert_eq!(jobs[0].target, ["./check", "a.so"]);
        assert_eq!(jobs[1].target, ["./bench", "a.so"]);
        assert_eq!(jobs[2].profiler.as_deref(), Some("none"));
        assert!(!jobs[0].stage.as_ref().unwrap().eval);
    }

    #[test]
    fn a_target_problems_profile_stage_takes_the_cache_scoped_by_the_problem() {
        let spec = |id: &str, cache: serde_json::Value| {
            problem(serde_json::json!({
                "id": id, "target": ["./{candidate}"], "candidates": ["c/a", "c/b"],
                "stages": ["time", "profile"], "profile_cache": cache
            }))
        };
        let jobs = spec("mm", serde_json::json!("cache")).unwrap();
        let (time, profile) = (&jobs[0], &jobs[1]);
        let minimal = problem(serde_json::json!({
            "id": "mm", "target": ["./{candidate}"], "candidates": ["c/a"],
            "stages": ["time", "profile"], "ncu": {"preset": {"kind": "minimal"}}
        }))
        .unwrap();
        assert!(minimal[1].backend.ncu.is_some() && minimal[0].backend.ncu.is_none());
        let err = problem(serde_json::json!({
            "id": "mm", "target": ["./{candidate}"], "candidates": ["c/a"],
            "stages": ["time", "profile"], "ncu": {"preset": {"kind": "everything"}}
        }))
        .unwrap_err();
        assert!(err.contains("problem `mm`: `ncu`"), "{err}");
        assert_eq!(time.profile_cache_for("none", None), None);
        let a = profile.profile_cache_for("ncu", None).unwrap();
        assert_eq!(a.dir.as_deref(), Some(Path::new("cache")));
        let scope = a.scope.clone().unwrap();
        assert!(scope.starts_with("problem mm;"), "{scope}");
        // Candidates of a problem share the scope; another problem has its own.
        assert_eq!(
            jobs[3].profile_cache_for("ncu", None).unwrap().scope,
            Some(scope.clone())
        );
        let other = spec("conv", serde_json::json!(true)).unwrap();
        assert_ne!(
            other[1].profile_cache_for("ncu", None).unwrap().scope,
            Some(scope)
        );
        // The batch's cache reaches a problem's profile stage with the problem's scope too.
        let plain = problem(serde_json::json!({
            "id": "mm", "target": ["./{candidate}"], "candidates": ["c/a"], "stages": ["time", "profile"]
        }))
        .unwrap();
        let batch = ProfileCacheOptions::default();
        let o = plain[1].profile_cache_for("ncu", Some(&batch)).unwrap();
        assert!(o.scope.unwrap().starts_with("problem mm;"));
        assert!(
            spec("p", serde_json::json!({"audit_share": 2}))
                .unwrap_err()
                .contains("from 0 to 1")
        );
        let err = problem(serde_json::json!({
            "id": "p", "reference": "r.py", "candidates": ["a.py"], "stages": ["time", "profile"],
            "profile_cache": true
        }))
        .unwrap_err();
        assert!(err.contains("`target` problem"), "{err}");
        let err = problem(serde_json::json!({
            "id": "p", "target": ["./{candidate}"], "candidates": ["a"], "stages": ["time"],
            "profile_cache": true
        }))
        .unwrap_err();
        assert!(err.contains("add it to `stages`"), "{err}");
    }

    #[test]
    fn bad_problems_are_refused_with_what_to_change() {
        let base = || serde_json::json!({"id": "p", "reference": "r.py", "candidates": ["a.py"], "stages": ["check", "time"]});
        let with = |key: &str, value: serde_json::Value| {
            let mut v = base();
            v[key] = value;
            problem(v).unwrap_err()
        };
        assert!(with("stages", serde_json::json!(["time", "check"])).contains("in the order"));
        assert!(with("stages", serde_json::json!(["compile"])).contains("go together"));
        assert!(with("profile", serde_json::json!({"margin": 0.1})).contains("need both"));
        assert!(with("candidates", serde_json::json!(["a/x.py", "b/x.py"])).contains("same name"));
        assert!(with("target", serde_json::json!(["x"])).contains("not both"));
        assert!(with("eval", serde_json::json!({"candidate": "x"})).contains("remove it"));
        assert!(with("eval", serde_json::json!({"trials": 0})).contains("trials"));
        assert!(with("stages", serde_json::json!([])).contains("empty"));
        let mut v = base();
        v["stages"] = serde_json::json!(["time", "profile"]);
        v["profile"] = serde_json::json!({"top_k": 0});
        assert!(problem(v).unwrap_err().contains("top_k"));
    }
}
