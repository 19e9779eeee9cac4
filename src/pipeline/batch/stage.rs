//! The stages of a problem's candidates (`compile`, `check`, `time`, `profile`), the rule of
//! the profile stage, and what a job a problem expanded to knows of its place in the cascade.

use serde::{Deserialize, Serialize};

use crate::model::batch::CascadeStage;

/// A stage of the cascade, in the order they run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// A command (`compile` argv): passes when it exits 0.
    #[default]
    Compile,
    /// Correctness only: an eval without timing, witness or work pass (or the `check` argv).
    Check,
    /// The eval's timing without the witness (or the command without a profiler, timed).
    Time,
    /// The witness and the work pass (or the command under `profiler`).
    Profile,
}

impl Stage {
    pub const ALL: [Stage; 4] = [Stage::Compile, Stage::Check, Stage::Time, Stage::Profile];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Compile => "compile",
            Stage::Check => "check",
            Stage::Time => "time",
            Stage::Profile => "profile",
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which candidates get the profile stage: those whose time is within `margin` of the best
/// time of their problem and, when `top_k` is given, among its `top_k` fastest. Neither:
/// every candidate that passed the earlier stages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileRule {
    /// A fraction: 0.1 profiles the candidates at most 10 % slower than the best.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<usize>,
}

/// What a job of a problem is: which problem, which candidate, which stage, and the rule the
/// profile stage goes by.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageRef {
    pub problem: String,
    pub candidate: String,
    pub stage: Stage,
    /// Its position among the problem's stages (0: the first).
    pub level: usize,
    pub rule: ProfileRule,
    /// An eval stage (judged by its verdict) rather than a command's (judged by its exit).
    pub eval: bool,
    /// The profile cache's key scope of the problem's jobs: its id and its reference or target
    /// command, so that candidates of one problem share entries and different problems do not.
    pub cache_scope: Option<String>,
}

impl StageRef {
    pub fn entry_stage(&self) -> CascadeStage {
        CascadeStage {
            problem: self.problem.clone(),
            candidate: self.candidate.clone(),
            stage: self.stage.name().to_string(),
            skip: None,
        }
    }
}
