//! The flow of one eval (docs/eval-harness.md, "Order of one eval"): the trusted worker, then
//! the candidate's; correctness trials on secret seeds; interleaved timing blocks with the
//! GPU's conditions around each and the last timed output checked; the witness pass; the work
//! pass (and the reference's, when the candidate's work needs comparing with it); then
//! `evidence.json` and the audit's `verdict.json`. A failure stops the eval but keeps every
//! record made before it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::eval::evidence::{
    self, Comparison, DeviceState, EVIDENCE_VERSION, EvalEvidence, EvalSettings, Failure,
    FailureKind, JudgedTurn, ProblemInfo, ReferenceTiming, ReferenceWorkReuse, SandboxEvidence,
    Side, SourceFile, Stage, TensorSpec, TimingBlock, TrialEvidence, TrialPhase, WitnessEvidence,
};
use crate::model::atomic_file::write_atomic;
use crate::model::error::{Error, Result};
use crate::model::run::ProfileRun;
use crate::pipeline::eval::build::{self, Built};
use crate::pipeline::eval::conditions::ConditionsReader;
use crate::pipeline::eval::confine::{self, CandidateSandbox};
use crate::pipeline::eval::failure;
use crate::pipeline::eval::freeze::{Frozen, process_state};
use crate::pipeline::eval::harness_files::write_harness;
use crate::pipeline::eval::input_pool;
use crate::pipeline::eval::integrity::{self, Baseline};
use crate::pipeline::eval::protocol::{Message, ProtocolError};
use crate::pipeline::eval::scored_ahead::{self, ScoredPlan, StartedAhead};
use crate::pipeline::eval::scored_trace::{self, ScoredTracing, TraceLoad};
use crate::pipeline::eval::seeds::SeedSource;
use crate::pipeline::eval::spec::{Device, EvalOutcome, EvalSpec, IfExists};
use crate::pipeline::eval::warm_state::{
    MAX_REFERENCE_AGE, StoredReference, StoredReferenceWork, TrustedSetup, WarmState,
};
use crate::pipeline::eval::worker::{Launch, Launcher, Role, StartingWorker, Worker};
use crate::pipeline::lock::RUN_LOCK;
use crate::pipeline::rundir::{self, ClaimedDir};
use crate::profilers::ProfilerSettings;

/// File names of an eval's two documents.
pub const EVIDENCE_FILE: &str = "evidence.json";
pub const VERDICT_FILE: &str = "verdict.json";

/// Run one eval: writes `evidence.json` and `verdict.json` into the eval directory and returns
/// them. `Err` only when the eval could not begin (unreadable files, a directory in use or
/// already holding an eval, invalid options); anything after that is the evidence's `failure`.
pub async fn evaluate(spec: &EvalSpec) -> Result<EvalOutcome> {
    run_eval(spec, None, None).await
}

/// [`evaluate`] of a candidate whose build stage already ran ([`prepare`], ahead of its turn);
/// `spec` is the one `prepare` was given.
pub async fn evaluate_prepared(spec: &EvalSpec, prepared: Prepared) -> Result<EvalOutcome> {
    run_eval(spec, None, Some(prepared)).await
}

/// One eval through a warm evaluator's trusted worker and stored reference blocks
/// (`warm::WarmEvaluator`). A candidate whose sandbox does not confine signals (and ptrace)
/// could reach the trusted worker that outlives it: it is judged cold, beside a trusted worker
/// of its own.
pub(crate) async fn evaluate_warm(
    spec: &EvalSpec,
    warm: &mut WarmState,
    prepared: Option<Prepared>,
) -> Result<EvalOutcome> {
    run_eval(spec, Some(warm), prepared).await
}

/// An eval before its judged turn: its directory claimed, its harness written, its files'
/// baseline taken, and the candidate's build stage run (`build`). Made by [`prepare`].
pub struct Prepared {
    claimed: ClaimedDir,
    dir: PathBuf,
    script: PathBuf,
    reference: Source,
    candidate: Source,
    sandbox: Option<CandidateSandbox>,
    sandbox_evidence: SandboxEvidence,
    baseline: Baseline,
    built: std::result::Result<Built, Failure>,
    /// Its scored worker, started before its turn ([`prestart`]).
    ahead: Option<StartedAhead>,
}

impl Prepared {
    /// The eval directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Everything of an eval before its judged turn, the build stage included (`ahead`: it runs
/// beside other candidates' work, recorded in the evidence). `Err` only when the eval could not
/// begin, as for [`evaluate`].
pub async fn prepare(spec: &EvalSpec, ahead: bool) -> Result<Prepared> {
    spec.options.validate()?;
    let reference = source_file(&spec.reference, "reference")?;
    let candidate = source_file(&spec.candidate, "candidate")?;
    let claimed = claim_eval_dir(&spec.output_dir, spec.if_exists)?;
    let dir = std::path::absolute(&claimed.dir)
        .map_err(|e| Error::io("resolve the eval directory", &claimed.dir, e))?;
    let script = write_harness(&dir)?;
    let harness_dir = script.parent().unwrap_or(&dir).to_path_buf();
    let (sandbox, sandbox_evidence) = confine::plan(spec, &harness_dir, &candidate.absolute);
    // Taken before the build worker starts: whatever it changes is seen.
    let baseline = Baseline::take(
        &harness_dir,
        &[&reference.absolute, &candidate.absolute],
        &[dir.join(EVIDENCE_FILE), dir.join(VERDICT_FILE)],
    );
    let built = build::run(build::BuildLaunch {
        spec,
        eval_dir: &dir,
        script: &script,
        candidate: &candidate.absolute,
        sandbox: sandbox.clone(),
        ahead,
    })
    .await;
    Ok(Prepared {
        claimed,
        dir,
        script,
        reference,
        candidate,
        sandbox,
        sandbox_evidence,
        baseline,
        built,
        ahead: None,
    })
}

/// The launch of a warm evaluator's trusted worker for `spec`'s problem, started before any
/// candidate's turn: from the evaluator's own harness copy and directory, under the scored
/// pass's tracer when the scored pass is traced (as `Eval::start` launches it).
pub(crate) async fn trusted_launch(spec: &EvalSpec, warm: &WarmState) -> Launch {
    let reference = std::path::absolute(&spec.reference).unwrap_or_else(|_| spec.reference.clone());
    let launcher = Launcher::trusted(spec, &warm.script, &warm.dir, &reference);
    let mut launch = launcher.launch(Role::Trusted, "none", ProfilerSettings::default());
    let plan = scored_ahead::plan(spec, &warm.dir).await;
    launch.trace = reference_trace_load(plan.tracing.as_ref(), &launch.eval_dir);
    launch
}

/// The scored pass's tracer for the trusted worker whose directory is `eval_dir` (so the
/// reference is timed under the tracer's cost too); none when the scored pass is not traced.
fn reference_trace_load(tracing: Option<&ScoredTracing>, eval_dir: &Path) -> Option<TraceLoad> {
    let dir = eval_dir.join(scored_trace::REFERENCE_TRACE_DIR);
    tracing?.load_for_reference(&dir).ok()
}

/// Start the scored worker of a prepared candidate now, ahead of its turn (a warm evaluator's
/// next candidate, while the current one is judged): its interpreter, torch and the tracer
/// load, held stopped while any timing block runs (it joins `spec.bystanders`); its `setup`,
/// where its code first runs, waits for its turn, and is sent only once the trusted worker is
/// set up. A candidate whose build failed, or whose files changed, gets none.
pub async fn prestart(spec: &EvalSpec, prepared: &mut Prepared) {
    let built = match &prepared.built {
        Ok(built) if built.failure.is_none() => built,
        _ => return,
    };
    if prepared.ahead.is_some() || !prepared.baseline.changes().is_empty() {
        return;
    }
    let plan = scored_ahead::plan(spec, &prepared.dir).await;
    let launcher = Launcher {
        spec,
        script: &prepared.script,
        eval_dir: &prepared.dir,
        source: &prepared.candidate.absolute,
        sandbox: prepared.sandbox.as_ref(),
        build_dir: Some(built.dir.path().to_path_buf()),
    };
    let mut launch = launcher.launch(Role::Candidate, "none", ProfilerSettings::default());
    launch.bystanders = Some(spec.bystanders.clone());
    prepared.ahead = Some(StartedAhead::start(plan, launch));
}

async fn run_eval(
    spec: &EvalSpec,
    warm: Option<&mut WarmState>,
    prepared: Option<Prepared>,
) -> Result<EvalOutcome> {
    let prepared = match prepared {
        Some(prepared) => prepared,
        None => prepare(spec, false).await?,
    };
    let Prepared {
        claimed,
        dir,
        script,
        reference,
        candidate,
        sandbox,
        sandbox_evidence,
        baseline,
        built,
        ahead,
    } = prepared;
    let warm = warm.filter(|_| sandbox_evidence.confines.iter().any(|c| c == "signals"));
    let urandom = Path::new("/dev/urandom");
    let mut seeds = SeedSource::open().map_err(|e| Error::io("open", urandom, e))?;
    // A warm trusted worker built its model under its init seed: every candidate it judges
    // builds theirs under the same one.
    let warm_seed = warm
        .as_ref()
        .filter(|w| w.trusted.is_some())
        .and_then(|w| w.setup.as_ref())
        .map(|s| s.init_seed);
    let init_seed = match (warm_seed, spec.options.init_seed) {
        (Some(seed), _) | (None, Some(seed)) => seed,
        (None, None) => seeds
            .next_seed()
            .map_err(|e| Error::io("read", urandom, e))?,
    };
    // The scored pass traced is the witness: no separate witness pass then. A worker started
    // ahead was started under its eval's plan: there is one plan per eval.
    let (plan, scored_ready) = match ahead {
        Some(StartedAhead { plan, worker }) => (plan, Some(worker)),
        None => (scored_ahead::plan(spec, &dir).await, None),
    };
    let ScoredPlan {
        witness,
        tracing,
        timeline,
    } = plan;
    let work = work_pass(spec);
    let o = &spec.options;
    let evidence = EvalEvidence {
        schema_version: EVIDENCE_VERSION,
        problem: ProblemInfo {
            reference: reference.info,
            candidate: candidate.info,
            framework: String::new(),
            device: spec.device.as_str().to_string(),
            reference_flops: None,
            flops_note: None,
        },
        settings: EvalSettings {
            trials: o.trials,
            timing_blocks: o.timing_blocks,
            repeat: o.repeat,
            warmup: o.warmup,
            atol: o.atol,
            rtol: o.rtol,
            flush_l2: o.flush_l2,
            witness_calls: o.witness_calls,
            witness_profiler: witness.as_ref().map(|(name, _)| name.clone()),
            witness_tolerance: o.witness_tolerance,
            suspicious_speedup: o.suspicious_speedup,
            require_candidate_kernels: o.require_candidate_kernels,
            min_plausible_ms: o.min_plausible_ms,
            init_seed,
            work_pass: work.is_some(),
            work_calls: o.work_calls,
            flops_per_call: o.flops_per_call,
            allow_tf32: o.allow_tf32,
            timed_checks: crate::pipeline::eval::input_pool::timed_checks(spec.device, o.repeat),
            scored_trace: tracing.is_some(),
        },
        environment: evidence::Environment {
            polyprof: Some(env!("CARGO_PKG_VERSION").to_string()),
            ..Default::default()
        },
        candidate_kernels: crate::eval::source_scan::candidate_kernels(&candidate.text),
        trials: Vec::new(),
        samples: Vec::new(),
        witness: None,
        timeline,
        work: None,
        reference_work: None,
        reference_work_reused: None,
        calibration: None,
        sandbox: Some(sandbox_evidence),
        reference_timing: None,
        trusted_run: None,
        build: None,
        judged: None,
        failure: None,
    };
    let (built, build_failure) = match built {
        Ok(mut built) => {
            let failure = built.failure.take();
            (Some(built), failure)
        }
        Err(failure) => (None, Some(failure)),
    };
    let mut evidence = evidence;
    evidence.build = built.as_ref().map(|b| b.evidence.clone());
    // A failed build is the verdict: the judged turn (the trusted worker, the device) never
    // begins for it.
    let (baseline, evidence) = match build_failure {
        Some(failure) => {
            evidence.failure = Some(failure);
            (baseline, evidence)
        }
        None => {
            judged_turn(
                spec,
                warm,
                evidence,
                JudgedParts {
                    sandbox,
                    baseline,
                    dir: dir.clone(),
                    script,
                    sources: [reference.absolute, candidate.absolute],
                    seeds,
                    built,
                    witness,
                    work,
                    tracing,
                    scored_ready,
                },
            )
            .await
        }
    };
    finish(claimed, dir, baseline, evidence)
}

/// What the judged turn is given besides the spec, the warm state and the evidence.
struct JudgedParts {
    sandbox: Option<CandidateSandbox>,
    baseline: Baseline,
    dir: PathBuf,
    script: PathBuf,
    sources: [PathBuf; 2],
    seeds: SeedSource,
    built: Option<Built>,
    witness: Option<(String, ProfilerSettings)>,
    work: Option<(String, ProfilerSettings)>,
    tracing: Option<ScoredTracing>,
    /// The candidate's scored worker, started ahead of this turn.
    scored_ready: Option<StartingWorker>,
}

/// The judged turn: the trusted worker (a warm one, or its own), the candidate's workers, every
/// stage from setup to the work pass, and their close; its span goes into the evidence.
async fn judged_turn(
    spec: &EvalSpec,
    mut warm: Option<&mut WarmState>,
    evidence: EvalEvidence,
    parts: JudgedParts,
) -> (Baseline, EvalEvidence) {
    let started_at = build::now();
    let clock = Instant::now();
    tracing::debug!("eval: the judged turn begins");
    let (trusted, next_trial) = match warm {
        Some(ref mut w) => (w.trusted.take(), w.next_trial),
        None => (None, 0),
    };
    let JudgedParts {
        sandbox,
        baseline,
        dir,
        script,
        sources,
        seeds,
        built,
        witness,
        work,
        tracing,
        scored_ready,
    } = parts;
    let mut eval = Eval {
        sandbox,
        baseline,
        spec,
        dir,
        script,
        sources,
        seeds,
        evidence,
        built,
        trusted,
        candidate: None,
        reference_work: None,
        init_inputs: None,
        next_trial,
        trusted_held: std::collections::BTreeSet::new(),
        warm,
        reuse: None,
        scored: tracing,
        work_ready: None,
        scored_ready,
        started_ahead: false,
        scored_ending: None,
        conditions: spec
            .device
            .vendor()
            .and_then(crate::profilers::device_tools::for_vendor)
            .map(|tool| ConditionsReader::new(tool, spec.cancel.clone())),
    };
    let ran = eval.run(witness, work).await;
    if let Err(failure) = ran {
        tracing::debug!(stage = ?failure.stage, kind = ?failure.kind, message = %failure.message, "the eval stopped");
        eval.evidence.failure = Some(failure);
    }
    eval.close().await;
    tracing::debug!("eval: the workers are closed");
    // Every worker has ended: the tracer has handed over its last records.
    if let (Some(tracing), Some(record)) = (&eval.scored, eval.evidence.timeline.as_mut()) {
        tracing.read(record);
        // What the trusted worker's tracer wrote is never read: a cold eval's goes with its
        // worker, a warm one's is emptied (the tracer appends to its open file, from 0 again).
        match eval.warm.as_deref() {
            None => {
                let _ = std::fs::remove_dir_all(eval.dir.join(scored_trace::REFERENCE_TRACE_DIR));
            }
            Some(warm) => {
                scored_trace::empty_files(&warm.dir.join(scored_trace::REFERENCE_TRACE_DIR))
            }
        }
    }
    tracing::debug!("eval: the scored trace is read");
    eval.evidence.judged = Some(JudgedTurn {
        started_at,
        ended_at: build::now(),
        seconds: clock.elapsed().as_secs_f64(),
        worker_started_ahead: eval.started_ahead,
    });
    (eval.baseline, eval.evidence)
}

/// After the eval (judged or not): the integrity check of its files, the audit, both
/// documents written.
fn finish(
    claimed: ClaimedDir,
    dir: PathBuf,
    baseline: Baseline,
    mut evidence: EvalEvidence,
) -> Result<EvalOutcome> {
    let changes = baseline.changes();
    baseline.restore_modes();
    let already = evidence
        .failure
        .as_ref()
        .is_some_and(|f| f.kind == FailureKind::Interfered);
    if !changes.is_empty() && !already {
        evidence.failure = Some(integrity::failure(
            Stage::Correctness,
            &changes,
            evidence.failure.as_ref(),
        ));
    }
    if evidence.work.is_some() {
        evidence.calibration = cached_calibration(&evidence.environment);
    }
    let verdict = crate::eval::judge(&evidence);
    write_document(&dir.join(EVIDENCE_FILE), &evidence)?;
    write_document(&dir.join(VERDICT_FILE), &verdict)?;
    drop(claimed);
    Ok(EvalOutcome {
        dir,
        evidence,
        verdict,
    })
}

/// The work pass's profiler (the witness's) and its work settings, when the eval takes one:
/// asked for, on CUDA, with at least one call.
fn work_pass(spec: &EvalSpec) -> Option<(String, ProfilerSettings)> {
    let o = &spec.options;
    if spec.device != Device::Cuda || !o.work_pass || o.work_calls == 0 {
        return None;
    }
    let name = o.witness_profiler.clone()?;
    let settings = crate::profilers::witness::work_settings(&name)?;
    Some((name, settings))
}

/// A work-pass request may take this many times the call limit: ncu replays every kernel once
/// per pass its counters need (up to about 10 on the H200), each after a cache flush.
const WORK_LIMIT_FACTOR: u32 = 10;

struct Source {
    info: SourceFile,
    absolute: PathBuf,
    text: String,
}

/// Read a problem file: its digest, its text, its absolute path for the worker.
fn source_file(path: &Path, what: &'static str) -> Result<Source> {
    let action = match what {
        "reference" => "read the reference",
        _ => "read the candidate",
    };
    // A FIFO, device or directory is refused at once: an open never blocks.
    let bytes = crate::pipeline::regular_file::read_regular(path)
        .map_err(|e| Error::io(action, path, e))?;
    let absolute = std::path::absolute(path).map_err(|e| Error::io(action, path, e))?;
    Ok(Source {
        info: SourceFile {
            path: path.display().to_string(),
            sha256: format!("{:x}", Sha256::digest(&bytes)),
        },
        absolute,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// Whether `dir` holds anything besides its lock file (an eval, or files not polyprof's).
fn holds_anything(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_str() != Some(RUN_LOCK))
    })
}

/// Claim the eval directory like a run directory (its lock held for the eval's life). One that
/// holds anything is refused, or passed over for the next free `<name>.NNN`.
pub fn claim_eval_dir(dir: &Path, if_exists: IfExists) -> Result<ClaimedDir> {
    if if_exists == IfExists::Refuse {
        let claimed = rundir::claim(dir)?;
        if holds_anything(dir) {
            return Err(Error::invalid(
                "output directory",
                format!(
                    "{} is not empty (it may hold an earlier eval); choose another output directory",
                    dir.display()
                ),
            ));
        }
        return Ok(claimed);
    }
    for candidate in std::iter::once(dir.to_path_buf())
        .chain(rundir::successors(dir))
        .take(1000)
    {
        if holds_anything(&candidate) {
            continue;
        }
        match rundir::claim(&candidate) {
            Ok(claimed) if !holds_anything(&candidate) => return Ok(claimed),
            Ok(_) | Err(Error::Busy { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Err(Error::invalid(
        "output directory",
        format!(
            "no free eval directory after {} (1000 taken); choose another output directory",
            dir.display()
        ),
    ))
}

/// Write one of the eval's documents: whatever is at its path (a planted file, a directory, a
/// link) is replaced; only polyprof writes these.
fn write_document(path: &Path, document: &impl serde::Serialize) -> Result<()> {
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && meta.is_dir()
    {
        std::fs::remove_dir_all(path)
            .map_err(|e| Error::io("remove what was planted at", path, e))?;
    }
    let mut bytes = serde_json::to_vec_pretty(document).map_err(|source| Error::Json {
        context: path.display().to_string(),
        source,
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes).map_err(|e| Error::io("write", path, e))
}

/// One eval in progress.
struct Eval<'a> {
    spec: &'a EvalSpec,
    /// The candidate's workers' sandbox; `None`: not confined.
    sandbox: Option<CandidateSandbox>,
    /// The files the candidate must not change, as they were at the start.
    baseline: Baseline,
    dir: PathBuf,
    script: PathBuf,
    /// The reference and the candidate, absolute.
    sources: [PathBuf; 2],
    seeds: SeedSource,
    evidence: EvalEvidence,
    trusted: Option<Worker>,
    /// The candidate's worker, or the witness's in the witness pass, or the work pass's.
    candidate: Option<Worker>,
    /// The reference's worker under the work counters (the reference's work pass).
    reference_work: Option<Worker>,
    /// The reference's init inputs, for a candidate file without `get_init_inputs`.
    init_inputs: Option<(Value, Vec<u8>)>,
    next_trial: u32,
    /// The trials the trusted worker holds (made and not yet released).
    trusted_held: std::collections::BTreeSet<u32>,
    /// `None` on the CPU.
    conditions: Option<ConditionsReader>,
    /// The warm evaluator's state: its trusted worker lives on after this eval.
    warm: Option<&'a mut WarmState>,
    /// Stored reference blocks this eval reuses (the drift probe passed).
    reuse: Option<Vec<TimingBlock>>,
    /// The candidate's build stage: its folder, which its judged workers build into too.
    built: Option<Built>,
    /// The scored pass's tracer (`None`: the scored pass is not traced).
    scored: Option<ScoredTracing>,
    /// The work pass's worker, started at the turn's beginning (its interpreter, torch and the
    /// profiler load beside the trials and blocks; no candidate code runs before its `setup`).
    work_ready: Option<StartingWorker>,
    /// The candidate's scored worker, started before this turn (`prestart`).
    scored_ready: Option<StartingWorker>,
    /// The candidate's scored worker this eval used was started ahead of its turn.
    started_ahead: bool,
    /// The scored worker's end, under way beside the work pass's setup.
    scored_ending: Option<tokio::task::JoinHandle<ProfileRun>>,
}

impl Eval<'_> {
    async fn run(
        &mut self,
        witness: Option<(String, ProfilerSettings)>,
        work: Option<(String, ProfilerSettings)>,
    ) -> std::result::Result<(), Failure> {
        let warm_setup = self
            .warm
            .as_ref()
            .filter(|_| self.trusted.is_some())
            .and_then(|w| w.setup.clone());
        match warm_setup {
            Some(setup) => self.apply_setup(setup),
            None => {
                // A candidate's worker started ahead runs none of its code before its `setup`,
                // which is sent only once the trusted worker is set up.
                let starting = self.warm.as_mut().and_then(|w| w.trusted_starting.take());
                match starting {
                    Some(starting) => {
                        self.take_started(Role::Trusted, Stage::Reference, starting)
                            .await?
                    }
                    None => {
                        self.start(
                            Role::Trusted,
                            "none",
                            ProfilerSettings::default(),
                            Stage::Reference,
                        )
                        .await?
                    }
                }
                self.setup_trusted().await?;
                self.keep_setup();
            }
        }
        if self.warm.is_some() {
            self.evidence.trusted_run = self
                .trusted
                .as_ref()
                .map(|t| t.run_dir.display().to_string());
        }
        // The work pass's worker (ncu, the interpreter, torch: 3.6-4.5 s on an H100) starts
        // now, at the turn's beginning, so that it loads beside the correctness trials and the
        // timing blocks: started once the trials had passed, a correct candidate's work pass
        // still waited 2.1 s on average for its load (H100, five KernelBench problems,
        // 2026-12-07). The framework it needs is known from the trusted worker's setup. Until
        // its `setup`, sent only after the scored pass has ended, it runs polyprof's harness
        // alone on one CPU core: no candidate code, no device context (importing torch
        // initializes none), so nothing of it reaches the GPU the trials and blocks use. It is
        // not held still like the bystanders: stopped during the blocks, a worker under ncu
        // never finished its first request under the counters (H100, 2026-12-06). A candidate
        // that turns out incorrect, or whose eval stops, never uses it: `close` ends it.
        if let Some((profiler, settings)) = &work {
            self.start_work_ahead(profiler, settings.clone());
        }
        // Only now, with the trusted worker connected, may the candidate's start (or, started
        // ahead, be taken).
        match self.scored_ready.take() {
            Some(ready) => {
                self.take_started(Role::Candidate, Stage::Load, ready)
                    .await?;
                self.started_ahead = true;
            }
            None => {
                self.start(
                    Role::Candidate,
                    "none",
                    ProfilerSettings::default(),
                    Stage::Load,
                )
                .await?
            }
        }
        tracing::debug!(
            ahead = self.started_ahead,
            "eval: the candidate's worker is up"
        );
        let setup = self.setup_candidate(Role::Candidate, Stage::Setup).await;
        if let (Some(built), Some(record)) = (&self.built, self.evidence.build.as_mut()) {
            record.reused = Some(built.unchanged());
        }
        setup?;
        tracing::debug!("eval: the candidate is set up");
        let timing_trial = self.correctness().await?;
        let correct = self.correct_so_far();
        tracing::debug!(correct, "eval: the correctness trials are done");
        // An incorrect candidate is not timed: its speed means nothing.
        if correct && self.spec.options.timing_blocks > 0 {
            self.timing(timing_trial).await?;
        }
        self.release(Role::Candidate, timing_trial, Stage::Timing)
            .await?;
        tracing::debug!("eval: the timing is done");
        if correct && let Some((profiler, settings)) = witness {
            self.witness(profiler, settings).await?;
        }
        // Counters cost replay passes: only a candidate still correct after the witness gets
        // them (a failure has ended the eval before this point).
        if self.correct_so_far()
            && let Some((profiler, settings)) = work
        {
            self.work(profiler, settings).await?;
            tracing::debug!("eval: the work pass is done");
        }
        Ok(())
    }

    /// Every output compared so far matched.
    fn correct_so_far(&self) -> bool {
        self.evidence
            .trials
            .iter()
            .all(|t| t.comparison.as_ref().is_some_and(|c| c.passed))
    }

    fn slot(&mut self, role: Role) -> &mut Option<Worker> {
        match role {
            Role::Trusted => &mut self.trusted,
            Role::Candidate | Role::Witness | Role::Work | Role::Build => &mut self.candidate,
            Role::ReferenceWork => &mut self.reference_work,
        }
    }

    fn launch(&self, role: Role, profiler: &str, settings: ProfilerSettings) -> Launch {
        let launcher = match (role, &self.warm) {
            // A warm trusted worker runs from the evaluator's own harness copy and directory.
            (Role::Trusted, Some(warm)) => {
                Launcher::trusted(self.spec, &warm.script, &warm.dir, &self.sources[0])
            }
            (Role::Trusted | Role::ReferenceWork, _) => {
                Launcher::trusted(self.spec, &self.script, &self.dir, &self.sources[0])
            }
            (Role::Candidate | Role::Witness | Role::Work | Role::Build, _) => Launcher {
                spec: self.spec,
                script: &self.script,
                eval_dir: &self.dir,
                source: &self.sources[1],
                sandbox: self.sandbox.as_ref(),
                build_dir: self.built.as_ref().map(|b| b.dir.path().to_path_buf()),
            },
        };
        launcher.launch(role, profiler, settings)
    }

    async fn start(
        &mut self,
        role: Role,
        profiler: &str,
        settings: ProfilerSettings,
        stage: Stage,
    ) -> std::result::Result<(), Failure> {
        // A trusted worker runs the harness scripts: never after anything changed them.
        let changes = self.baseline.changes();
        if !changes.is_empty() {
            return Err(integrity::failure(stage, &changes, None));
        }
        let mut launch = self.launch(role, profiler, settings);
        match role {
            Role::Candidate => launch.trace = self.trace_load(),
            Role::Trusted => {
                launch.trace = reference_trace_load(self.scored.as_ref(), &launch.eval_dir);
            }
            _ => {}
        }
        match launch.start().await {
            Ok(worker) => {
                self.place(role, worker);
                Ok(())
            }
            Err(e) => Err(failure::from_start(role, stage, &e, &self.dir)),
        }
    }

    /// `worker` into `role`'s slot; the scored worker's pid into the timeline's record.
    fn place(&mut self, role: Role, mut worker: Worker) {
        worker.take_turn();
        if role == Role::Candidate
            && let Some(record) = self.evidence.timeline.as_mut()
        {
            record.worker_pid = worker.pid;
        }
        *self.slot(role) = Some(worker);
    }

    /// What loads the scored pass's tracer into the candidate's worker; a tracer that cannot
    /// be loaded leaves the scored pass untraced, and the evidence says why.
    fn trace_load(&mut self) -> Option<TraceLoad> {
        scored_ahead::trace_load(self.scored.as_ref(), self.evidence.timeline.as_mut())
    }

    /// Send `request` to `role`'s worker. On any error the worker is ended and the failure
    /// says how it ended. A request to the traced candidate's worker is marked first.
    async fn ask(
        &mut self,
        role: Role,
        stage: Stage,
        mut request: Message,
        limit: Duration,
    ) -> std::result::Result<Message, Failure> {
        let traced = role == Role::Candidate && self.scored.is_some();
        if traced
            && let (Some(tracing), Some(record)) =
                (self.scored.as_mut(), self.evidence.timeline.as_mut())
        {
            tracing
                .mark(&mut request, &mut self.seeds, record)
                .map_err(|e| {
                    harness(
                        stage,
                        format!("cannot draw the marks from /dev/urandom: {e}"),
                    )
                })?;
        }
        let Some(worker) = self.slot(role).as_mut() else {
            return Err(harness(stage, format!("no worker for `{}`", request.op())));
        };
        let asked = Instant::now();
        match worker.conn.request(&request, limit).await {
            Ok(reply) => {
                tracing::debug!(
                    ?role,
                    op = request.op(),
                    ms = asked.elapsed().as_secs_f64() * 1e3,
                    "eval: a request answered"
                );
                if role == Role::Trusted {
                    self.track_trusted_trials(&request);
                }
                if traced && let Some(record) = self.evidence.timeline.as_mut() {
                    scored_trace::note_reported(record, &reply);
                }
                Ok(reply)
            }
            Err(error) => Err(self.fail(role, stage, error).await),
        }
    }

    /// The trials the trusted worker holds: made by `trial`, dropped by `release` (a warm
    /// trusted worker releases the rest after the eval).
    fn track_trusted_trials(&mut self, request: &Message) {
        let index = request
            .get("trial")
            .and_then(Value::as_u64)
            .and_then(|i| u32::try_from(i).ok());
        if let Some(index) = index {
            match request.op() {
                "trial" => {
                    self.trusted_held.insert(index);
                }
                "release" => {
                    self.trusted_held.remove(&index);
                }
                _ => {}
            }
        }
    }

    /// End `role`'s worker after `error` and describe the failure.
    async fn fail(&mut self, role: Role, stage: Stage, error: ProtocolError) -> Failure {
        let Some(worker) = self.slot(role).take() else {
            return harness(stage, error.to_string());
        };
        // A worker that timed out is hung: kill it at once. Others are let finish dying, so
        // their exit status or signal is known.
        let dying = !matches!(
            error,
            ProtocolError::Timeout { .. } | ProtocolError::Cancelled { .. }
        );
        // Stopped (SIGSTOP) rather than hung: read before it is killed.
        let stopped =
            matches!(error, ProtocolError::Timeout { .. }) && worker.pid.is_some_and(is_stopped);
        let run = worker.end(dying).await;
        self.record_profiled_run(role, &run);
        // An unconfined candidate could signal the trusted worker: its death by another's
        // signal, or its stop, is the candidate's doing while one ran beside it.
        if role == Role::Trusted
            && self.sandbox.is_none()
            && self.candidate.is_some()
            && !self.spec.cancel.is_cancelled()
        {
            if stopped {
                return failure::trusted_interfered(stage, "was stopped", &run, &self.dir);
            }
            if matches!(error, ProtocolError::Eof { .. } | ProtocolError::Io { .. })
                && failure::sent_from_outside(&run)
            {
                let ended = failure::ended_as(&run);
                return failure::trusted_interfered(stage, &ended, &run, &self.dir);
            }
        }
        failure::from_request(role, stage, &error, &run, &self.dir)
    }

    /// A reply field, or the failure of a malformed reply.
    async fn field<T: DeserializeOwned>(
        &mut self,
        role: Role,
        stage: Stage,
        reply: &Message,
        key: &str,
    ) -> std::result::Result<T, Failure> {
        let value = reply.get(key).cloned().unwrap_or(Value::Null);
        match serde_json::from_value::<T>(value) {
            Ok(parsed) => Ok(parsed),
            Err(e) => {
                let error = ProtocolError::Malformed {
                    op: reply_op(reply),
                    why: format!("the reply's `{key}` is not usable: {e}"),
                };
                Err(self.fail(role, stage, error).await)
            }
        }
    }

    fn call_limit(&self) -> Duration {
        self.spec.options.call_timeout
    }

    /// The limit of a call, check or trial request of `role`: longer under the work counters.
    fn limit_of(&self, role: Role) -> Duration {
        match role {
            Role::Work | Role::ReferenceWork => self.call_limit().saturating_mul(WORK_LIMIT_FACTOR),
            Role::Trusted | Role::Candidate | Role::Witness | Role::Build => self.call_limit(),
        }
    }

    /// The trusted side's `setup`: the device, the init seed and the tolerance; `annotate`
    /// asks it to mark its reference calls for a profiler (the reference's work pass).
    fn reference_setup(&self, annotate: bool) -> Message {
        let o = &self.spec.options;
        let mut body = json!({
            "device": self.spec.device.as_str(),
            "init_seed": self.evidence.settings.init_seed,
            "atol": o.atol,
            "rtol": o.rtol,
        });
        if annotate {
            body["annotate"] = json!(true);
        }
        Message::request("setup", body)
    }

    /// A fresh trial's index, its new secret seed and its `trial` request to the trusted side;
    /// `profile` asks for the reference's own run to be profiled.
    fn trial_request(
        &mut self,
        stage: Stage,
        profile: Option<bool>,
    ) -> std::result::Result<(u32, u64, Message), Failure> {
        let index = self.next_trial;
        self.next_trial += 1;
        let seed = self
            .seeds
            .next_seed()
            .map_err(|e| harness(stage, format!("cannot read a seed from /dev/urandom: {e}")))?;
        let mut body =
            json!({"trial": index, "seed": seed, "transport": self.spec.device.transport()});
        if let Some(profile) = profile {
            body["profile"] = json!(profile);
        }
        Ok((index, seed, Message::request("trial", body)))
    }

    async fn setup_trusted(&mut self) -> std::result::Result<(), Failure> {
        let request = self.reference_setup(false);
        let limit = self.spec.options.setup_timeout;
        let reply = self
            .ask(Role::Trusted, Stage::Reference, request, limit)
            .await?;
        let text = |key: &str| reply.get(key).and_then(Value::as_str).map(str::to_string);
        let environment = &mut self.evidence.environment;
        environment.python = text("python");
        environment.torch = text("torch");
        environment.numpy = text("numpy");
        environment.device_name = text("device_name");
        self.evidence.problem.framework = text("framework").unwrap_or_default();
        if let Some(init_inputs) = reply.get("init_inputs").filter(|v| !v.is_null()) {
            self.init_inputs = Some((init_inputs.clone(), reply.payload.clone()));
        }
        Ok(())
    }

    /// `setup` of the candidate's worker (`role` Candidate, Witness or Work). An import that fails is
    /// the `load` stage's failure.
    async fn setup_candidate(
        &mut self,
        role: Role,
        stage: Stage,
    ) -> std::result::Result<(), Failure> {
        let mut fields = json!({
            "device": self.spec.device.as_str(),
            "init_seed": self.evidence.settings.init_seed,
            "annotate": matches!(role, Role::Witness | Role::Work),
        });
        let mut payload = Vec::new();
        if let Some((init_inputs, bytes)) = &self.init_inputs {
            fields["init_inputs"] = init_inputs.clone();
            payload = bytes.clone();
        }
        let request = Message::request("setup", fields).with_payload(payload);
        let limit = self.spec.options.setup_timeout;
        match self.ask(role, stage, request, limit).await {
            Ok(_) => Ok(()),
            Err(mut failure) => {
                if failure.kind == FailureKind::CompileError && stage == Stage::Setup {
                    failure.stage = Stage::Load;
                }
                Err(failure)
            }
        }
    }

    /// `trials` correctness trials; the last one stays alive for timing (its index returned).
    async fn correctness(&mut self) -> std::result::Result<u32, Failure> {
        let mut last = 0;
        for n in 0..self.spec.options.trials {
            if n > 0 {
                self.release(Role::Candidate, last, Stage::Correctness)
                    .await?;
            }
            last = self
                .trial(
                    Role::Candidate,
                    TrialPhase::Correctness,
                    Stage::Correctness,
                    false,
                )
                .await?;
        }
        Ok(last)
    }

    /// One trial: fresh inputs from a secret seed, the candidate's call, the trusted check.
    /// `warm_first`: a `warmup` on the same inputs before the call (the witness's first). The
    /// work pass's call is `profile`d: made inside the profiler's collection window.
    async fn trial(
        &mut self,
        role: Role,
        phase: TrialPhase,
        stage: Stage,
        warm_first: bool,
    ) -> std::result::Result<u32, Failure> {
        let (index, seed, mut request) = self.trial_request(stage, None)?;
        // The first trial also counts the reference's analytic FLOPs (the FLOP floor's count).
        let count_flops = self.evidence.problem.reference_flops.is_none()
            && self.evidence.problem.flops_note.is_none();
        if count_flops {
            request
                .header
                .insert("count_flops".into(), Value::Bool(true));
        }
        let limit = self.call_limit();
        let reply = self.ask(Role::Trusted, stage, request, limit).await?;
        if count_flops {
            self.record_reference_flops(&reply);
        }
        let input_specs: Vec<TensorSpec> = self
            .field(Role::Trusted, stage, &reply, "input_specs")
            .await?;
        let reference_outputs: Vec<TensorSpec> = self
            .field(Role::Trusted, stage, &reply, "reference_outputs")
            .await?;
        let inputs: Vec<Value> = self.field(Role::Trusted, stage, &reply, "inputs").await?;
        let poison = reply
            .get("reference_outputs")
            .cloned()
            .unwrap_or(Value::Null);
        self.evidence.trials.push(TrialEvidence {
            index,
            phase,
            seed,
            inputs: input_specs,
            reference_outputs,
            candidate_outputs: Vec::new(),
            comparison: None,
            inputs_unchanged: None,
            host_ms: None,
            timed_call: None,
            block: None,
        });
        let record = self.evidence.trials.len() - 1;
        let allowance = output_allowance(&self.evidence.trials[record]);
        if let Some(worker) = self.slot(role).as_mut() {
            worker.conn.set_max_payload(allowance);
        }
        let limit = self.limit_of(role);
        if warm_first {
            let warmup = Message::request(
                "warmup",
                json!({"trial": index, "calls": 1, "inputs": inputs, "poison": poison}),
            )
            .with_payload(reply.payload.clone());
            self.ask(role, stage, warmup, limit).await?;
        }
        let call = Message::request(
            "call",
            json!({"trial": index, "inputs": inputs, "poison": poison, "profile": role == Role::Work}),
        )
        .with_payload(reply.payload);
        let started = Instant::now();
        let answer = self.ask(role, stage, call, limit).await?;
        self.evidence.trials[record].host_ms = Some(started.elapsed().as_secs_f64() * 1e3);
        self.check(role, index, record, answer, stage).await?;
        Ok(index)
    }

    /// The reference's analytic FLOPs (or why there are none) from a `trial` answer.
    fn record_reference_flops(&mut self, reply: &Message) {
        let problem = &mut self.evidence.problem;
        problem.reference_flops = reply
            .get("reference_flops")
            .and_then(Value::as_f64)
            .filter(|f| f.is_finite() && *f > 0.0);
        problem.flops_note = match problem.reference_flops {
            Some(_) => None,
            None => Some(
                reply
                    .get("flops_note")
                    .and_then(Value::as_str)
                    .unwrap_or("the trusted worker gave no FLOP count")
                    .to_string(),
            ),
        };
    }

    /// The trusted worker compares the outputs of `answer` (the reply of `role`'s `call` or
    /// `time`) with trial `index`'s reference outputs; the result goes into trial record
    /// `record`. Inputs that crossed as copies come back with the outputs (`inputs_after`), so
    /// the checker sees writes into them.
    async fn check(
        &mut self,
        role: Role,
        index: u32,
        record: usize,
        answer: Message,
        stage: Stage,
    ) -> std::result::Result<(), Failure> {
        let outputs: Vec<Value> = self.field(role, stage, &answer, "outputs").await?;
        let mut fields = json!({"trial": index, "outputs": outputs});
        if let Some(after) = answer.get("inputs_after").filter(|v| !v.is_null()) {
            fields["inputs_after"] = after.clone();
        }
        let request = Message::request("check", fields).with_payload(answer.payload);
        let limit = self.call_limit();
        let reply = self.ask(Role::Trusted, stage, request, limit).await?;
        let comparison: Comparison = self
            .field(Role::Trusted, stage, &reply, "comparison")
            .await?;
        let candidate_outputs: Option<Vec<TensorSpec>> = self
            .field(Role::Trusted, stage, &reply, "candidate_outputs")
            .await?;
        let trial = &mut self.evidence.trials[record];
        trial.comparison = Some(comparison);
        trial.inputs_unchanged = reply.get("inputs_unchanged").and_then(Value::as_bool);
        trial.candidate_outputs = candidate_outputs.unwrap_or_default();
        Ok(())
    }

    /// Both workers drop trial `index` (`role`: the candidate's side, Candidate or Witness).
    async fn release(
        &mut self,
        role: Role,
        index: u32,
        stage: Stage,
    ) -> std::result::Result<(), Failure> {
        let limit = self.call_limit();
        for who in [role, Role::Trusted] {
            if self.slot(who).is_some() {
                let request = Message::request("release", json!({"trial": index}));
                self.ask(who, stage, request, limit).await?;
            }
        }
        Ok(())
    }

    /// `timing_blocks` rounds on trial `trial`'s inputs, each side's block first in turn; the
    /// candidate's last timed output is checked after each of its blocks.
    async fn timing(&mut self, trial: u32) -> std::result::Result<(), Failure> {
        if self.spec.device == Device::Cpu {
            return self.pooled_timing(trial).await;
        }
        let base = self.trial_record(trial, "to time")?;
        self.begin_reference_timing();
        let o = &self.spec.options;
        let fields =
            json!({"trial": trial, "repeat": o.repeat, "warmup": o.warmup, "flush_l2": o.flush_l2});
        let limit = self.call_limit();
        let mut between: Option<evidence::Conditions> = None;
        for block in 0..o.timing_blocks {
            let sides = if block % 2 == 0 {
                [Side::Reference, Side::Candidate]
            } else {
                [Side::Candidate, Side::Reference]
            };
            for side in sides {
                if let Some(stored) = self.reused_block(side, block) {
                    self.evidence.samples.push(stored);
                    continue;
                }
                let role = match side {
                    Side::Reference => Role::Trusted,
                    Side::Candidate => Role::Candidate,
                };
                // The reading taken right after the block before is this block's before: nothing
                // ran on the device between them but the harness's output check.
                let conditions_before = match between.take() {
                    Some(reading) => Some(reading),
                    None => self.read_conditions().await,
                };
                let mut fields = fields.clone();
                if side == Side::Candidate
                    && let Some(bound) = self.reference_graph_batch_bound()
                {
                    fields["max_batch"] = json!(bound);
                }
                let request = Message::request("time", fields);
                // The other side stopped while this one is timed (its last request answered,
                // after a device synchronize: nothing of it is queued).
                let (reply, stopped, bystanders_stopped) =
                    self.time_held(role, request, limit).await?;
                let conditions_after = self.read_conditions().await;
                between.clone_from(&conditions_after);
                let times_ms: Vec<f64> =
                    self.field(role, Stage::Timing, &reply, "times_ms").await?;
                let method: String = self.field(role, Stage::Timing, &reply, "method").await?;
                let batch: Option<u32> = self.field(role, Stage::Timing, &reply, "batch").await?;
                let device_state: Option<DeviceState> = self
                    .field(role, Stage::Timing, &reply, "device_state")
                    .await?;
                self.evidence.samples.push(TimingBlock {
                    side,
                    block,
                    method,
                    batch: batch.unwrap_or(1),
                    times_ms,
                    device_state,
                    conditions_before,
                    conditions_after,
                    input_trials: Vec::new(),
                    warmup_trial: None,
                    checked_calls: Vec::new(),
                    other_side_stopped: stopped,
                    bystanders_stopped,
                });
                if side == Side::Reference && block == 0 {
                    self.judge_probe();
                }
                if side == Side::Candidate {
                    self.evidence.trials.push(TrialEvidence {
                        phase: TrialPhase::Timed,
                        candidate_outputs: Vec::new(),
                        comparison: None,
                        inputs_unchanged: None,
                        host_ms: None,
                        ..base.clone()
                    });
                    let record = self.evidence.trials.len() - 1;
                    self.check(role, trial, record, reply, Stage::Timing)
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// The most calls one CUDA-graph replay of the candidate may hold: as many as fill
    /// `GRAPH_REPLAY_MS` at the reference's median per-call time, measured by the trusted worker.
    /// The candidate's harness sizes its batch from its own first estimate, taken with timers in
    /// its own process: a candidate that patches them to report nanoseconds would otherwise get
    /// the full 1000 calls per replay and hold the GPU up to 1000 times longer than its block
    /// needs (206 s for one block set of a 4096² matmul, H100). A candidate that is really faster
    /// than the reference still gets a replay long enough to time, with a flush in every pair.
    fn reference_graph_batch_bound(&self) -> Option<u32> {
        let mut times: Vec<f64> = self
            .evidence
            .samples
            .iter()
            .filter(|b| b.side == Side::Reference)
            .flat_map(|b| b.times_ms.iter().copied())
            .filter(|t| t.is_finite() && *t > 0.0)
            .collect();
        if times.is_empty() {
            return None;
        }
        times.sort_by(f64::total_cmp);
        Some(graph_batch_bound(times[times.len() / 2]))
    }

    /// The latest record of trial `index`, which the timing needs `for_what`.
    fn trial_record(
        &self,
        index: u32,
        for_what: &str,
    ) -> std::result::Result<TrialEvidence, Failure> {
        self.evidence
            .trials
            .iter()
            .rfind(|t| t.index == index)
            .cloned()
            .ok_or_else(|| {
                harness(
                    Stage::Timing,
                    format!("no record of trial {index} {for_what}"),
                )
            })
    }

    /// `timing_blocks` rounds, each on a fresh pool of input sets (`input_pool`): the timed
    /// calls of both sides cycle through the pool in one secret order, the warm-up runs on
    /// trial `warm` (in no pool), the other side's processes are stopped while a block runs,
    /// and after each candidate block a random draw of its calls is compared.
    async fn pooled_timing(&mut self, warm: u32) -> std::result::Result<(), Failure> {
        let base = self.trial_record(warm, "to warm up on")?;
        let bytes = |specs: &[TensorSpec]| specs.iter().map(|s| s.nbytes).sum::<u64>();
        let o = &self.spec.options;
        let (repeat, warmup, blocks, flush_l2) = (o.repeat, o.warmup, o.timing_blocks, o.flush_l2);
        let size =
            input_pool::pool_size(repeat, bytes(&base.inputs), bytes(&base.reference_outputs));
        let checks = self.evidence.settings.timed_checks;
        let limit = self.call_limit();
        self.begin_reference_timing();
        for block in 0..blocks {
            let pool = self.make_pool(size).await?;
            let indices: Vec<u32> = pool.iter().map(|t| t.index).collect();
            let order =
                self.random_positions(|random| input_pool::secret_order(size, repeat, random))?;
            let poison: Vec<Value> = pool
                .iter()
                .map(|t| serde_json::to_value(&t.reference_outputs).unwrap_or(Value::Null))
                .collect();
            let fields = json!({
                "pool": indices, "order": order, "repeat": repeat, "warmup": warmup,
                "warmup_trial": warm, "poison": poison, "flush_l2": flush_l2,
            });
            let sides = if block % 2 == 0 {
                [Side::Reference, Side::Candidate]
            } else {
                [Side::Candidate, Side::Reference]
            };
            // The draw's comparisons wait for the round's end: the trusted worker checking right
            // before its own block ran the reference 35 % faster there (warm on the shared CPU).
            let mut to_check = None;
            for side in sides {
                if let Some(stored) = self.reused_block(side, block) {
                    self.evidence.samples.push(stored);
                    continue;
                }
                let role = match side {
                    Side::Reference => Role::Trusted,
                    Side::Candidate => Role::Candidate,
                };
                let request = Message::request("time", fields.clone());
                let (reply, stopped, bystanders_stopped) =
                    self.time_held(role, request, limit).await?;
                let times_ms: Vec<f64> =
                    self.field(role, Stage::Timing, &reply, "times_ms").await?;
                let method: String = self.field(role, Stage::Timing, &reply, "method").await?;
                let drawn = if side == Side::Candidate {
                    self.random_positions(|random| input_pool::draw(repeat, checks, random))?
                } else {
                    Vec::new()
                };
                self.evidence.samples.push(TimingBlock {
                    side,
                    block,
                    method,
                    batch: 1,
                    times_ms,
                    device_state: None,
                    conditions_before: None,
                    conditions_after: None,
                    input_trials: indices.clone(),
                    warmup_trial: Some(warm),
                    checked_calls: drawn.clone(),
                    other_side_stopped: stopped,
                    bystanders_stopped,
                });
                if side == Side::Reference && block == 0 {
                    self.judge_probe();
                }
                if side == Side::Candidate {
                    to_check = Some((reply, drawn));
                }
            }
            if let Some((reply, drawn)) = to_check {
                for call in drawn {
                    let set = order[call as usize] as usize;
                    self.check_timed_call(&reply, &pool[set], set, call, block)
                        .await?;
                }
            }
            for index in indices {
                self.release(Role::Candidate, index, Stage::Timing).await?;
            }
        }
        Ok(())
    }

    /// `size` fresh trials for one block's pool: each made by the trusted worker from its own
    /// secret seed (the reference run once on it, for the comparison) and its inputs handed to
    /// the candidate's worker, which keeps them for the block.
    async fn make_pool(&mut self, size: u32) -> std::result::Result<Vec<TrialEvidence>, Failure> {
        let limit = self.call_limit();
        let mut pool = Vec::with_capacity(size as usize);
        for _ in 0..size {
            let (index, seed, request) = self.trial_request(Stage::Timing, None)?;
            let reply = self
                .ask(Role::Trusted, Stage::Timing, request, limit)
                .await?;
            let stage = Stage::Timing;
            let inputs: Vec<TensorSpec> = self
                .field(Role::Trusted, stage, &reply, "input_specs")
                .await?;
            let reference_outputs: Vec<TensorSpec> = self
                .field(Role::Trusted, stage, &reply, "reference_outputs")
                .await?;
            let wires: Value = self.field(Role::Trusted, stage, &reply, "inputs").await?;
            let hand = Message::request("inputs", json!({"trial": index, "inputs": wires}))
                .with_payload(reply.payload);
            self.ask(Role::Candidate, stage, hand, limit).await?;
            pool.push(TrialEvidence {
                index,
                phase: TrialPhase::Timed,
                seed,
                inputs,
                reference_outputs,
                candidate_outputs: Vec::new(),
                comparison: None,
                inputs_unchanged: None,
                host_ms: None,
                timed_call: None,
                block: None,
            });
        }
        Ok(pool)
    }

    /// Compare timed call `call` of a candidate block (its outputs in `reply`, on pool set
    /// `set`, trial `trial`) with the reference's outputs of that set.
    async fn check_timed_call(
        &mut self,
        reply: &Message,
        trial: &TrialEvidence,
        set: usize,
        call: u32,
        block: u32,
    ) -> std::result::Result<(), Failure> {
        let null = Value::Null;
        let outputs = reply
            .get("calls")
            .and_then(|c| c.get(call as usize))
            .and_then(|c| c.get("outputs"))
            .unwrap_or(&null);
        let after = reply
            .get("inputs_after")
            .and_then(|a| a.get(set))
            .unwrap_or(&null);
        let mut payload = Vec::new();
        let cut = input_pool::cut_arrays(outputs, &reply.payload, &mut payload)
            .zip(input_pool::cut_arrays(after, &reply.payload, &mut payload));
        let Some((outputs, after)) = cut else {
            let error = ProtocolError::Malformed {
                op: "time".into(),
                why: format!("timed call {call}'s arrays run past the answer's payload"),
            };
            return Err(self.fail(Role::Candidate, Stage::Timing, error).await);
        };
        let mut fields = json!({"outputs": outputs});
        if !after.is_null() {
            fields["inputs_after"] = after;
        }
        self.evidence.trials.push(TrialEvidence {
            timed_call: Some(call),
            block: Some(block),
            ..trial.clone()
        });
        let record = self.evidence.trials.len() - 1;
        let answer = Message::request("time", fields).with_payload(payload);
        self.check(Role::Candidate, trial.index, record, answer, Stage::Timing)
            .await
    }

    /// `request` (a timing block) to `timed`'s worker while the process tree of the other side
    /// (its pid from the socket's peer credentials) and every worker started ahead of its turn
    /// (`spec.bystanders`) are stopped; with the answer, whether the other side was stopped and
    /// how many bystanders were.
    async fn time_held(
        &mut self,
        timed: Role,
        request: Message,
        limit: Duration,
    ) -> std::result::Result<(Message, Option<bool>, u32), Failure> {
        let other = match timed {
            Role::Trusted => Role::Candidate,
            _ => Role::Trusted,
        };
        let other_side = self
            .slot(other)
            .as_ref()
            .and_then(|w| w.pid)
            .map(Frozen::stop);
        let bystanders = self.spec.bystanders.hold_still();
        let asked = self.ask(timed, Stage::Timing, request, limit).await;
        let stopped = other_side.as_ref().map(Frozen::stopped_any);
        let bystanders_stopped = bystanders.stopped();
        drop((other_side, bystanders));
        Ok((asked?, stopped, bystanders_stopped))
    }

    /// `make(random)` with the orchestrator's randomness (`/dev/urandom`).
    fn random_positions(
        &mut self,
        make: impl FnOnce(&mut dyn FnMut() -> u64) -> Vec<u32>,
    ) -> std::result::Result<Vec<u32>, Failure> {
        let mut failed = None;
        let seeds = &mut self.seeds;
        let mut random = || {
            seeds.random_u64().unwrap_or_else(|e| {
                failed = Some(e);
                0
            })
        };
        let positions = make(&mut random);
        match failed {
            Some(e) => Err(harness(
                Stage::Timing,
                format!("cannot read /dev/urandom: {e}"),
            )),
            None => Ok(positions),
        }
    }

    /// The GPU's conditions now (CUDA only), with the eval's workers left out of the others.
    async fn read_conditions(&mut self) -> Option<evidence::Conditions> {
        let workers: Vec<u32> = [&self.trusted, &self.candidate]
            .into_iter()
            .flatten()
            .filter_map(|w| w.pid)
            .collect();
        let reading = self.conditions.as_mut()?.read(&workers).await?;
        let environment = &mut self.evidence.environment;
        environment.device_uuid = environment.device_uuid.take().or(reading.uuid);
        environment.driver = environment.driver.take().or(reading.driver);
        environment.device_name = environment.device_name.take().or(reading.name);
        Some(reading.conditions)
    }

    /// The candidate again under the witness profiler: a warmup, then `witness_calls` checked
    /// calls on fresh trials, every kernel launch of its process recorded.
    async fn witness(
        &mut self,
        profiler: String,
        settings: ProfilerSettings,
    ) -> std::result::Result<(), Failure> {
        if let Some(candidate) = self.candidate.take() {
            candidate.finish().await;
        }
        self.evidence.witness = Some(profiled_evidence(&profiler, Role::Witness));
        // No witness (the profiler is missing or failed to start the worker): the audit says
        // its checks did not run; the eval itself is not failed by it.
        let calls = self.spec.options.witness_calls;
        self.profiled_calls(
            Role::Witness,
            TrialPhase::Witness,
            Stage::Witness,
            calls,
            &profiler,
            settings,
        )
        .await?;
        Ok(())
    }

    /// The candidate's worker under `profiler`: set up, then `calls` checked calls on fresh
    /// trials (the first preceded by a warmup), then ended and its run recorded in `role`'s
    /// evidence. A worker that cannot start is recorded there as the error, not a failure
    /// (`Ok(false)`); a candidate that fails in it fails the eval.
    async fn profiled_calls(
        &mut self,
        role: Role,
        phase: TrialPhase,
        stage: Stage,
        calls: u32,
        profiler: &str,
        settings: ProfilerSettings,
    ) -> std::result::Result<bool, Failure> {
        let started = match (role, self.work_ready.take()) {
            (Role::Work, Some(ready)) => self.take_started(role, stage, ready).await,
            _ => self.start(role, profiler, settings, stage).await,
        };
        if let Err(e) = started {
            self.set_profiled_error(role, e.message);
            return Ok(false);
        }
        tracing::debug!(?role, "eval: the profiled worker is up");
        let setup = self.setup_candidate(role, stage).await;
        self.scored_ended().await;
        setup?;
        tracing::debug!(?role, "eval: the profiled worker is set up");
        for n in 0..calls {
            let index = self.trial(role, phase, stage, n == 0).await?;
            self.release(role, index, stage).await?;
        }
        tracing::debug!(?role, "eval: the profiled calls are done");
        if let Some(worker) = self.candidate.take() {
            let run = worker.finish().await;
            tracing::debug!(?role, "eval: the profiled worker has ended");
            self.record_profiled_run(role, &run);
        }
        Ok(true)
    }

    /// The work pass: the candidate again under the work counters, a warmup (not profiled),
    /// then `work_calls` checked calls on fresh trials, each inside the profiler's window. A
    /// pass that cannot be taken is recorded in `work.error`; a candidate that fails in it
    /// fails the eval, as in the witness. Then the reference's work pass, when needed.
    async fn work(
        &mut self,
        profiler: String,
        settings: ProfilerSettings,
    ) -> std::result::Result<(), Failure> {
        // The scored worker ends beside the work worker's setup (no call of the work pass runs
        // before it has ended: `profiled_calls` waits for it after the setup).
        if let Some(candidate) = self.candidate.take() {
            self.scored_ending = Some(tokio::spawn(candidate.finish()));
        }
        self.evidence.work = Some(profiled_evidence(&profiler, Role::Work));
        // Only torch problems run CUDA kernels of their own to count; a numpy problem's arrays
        // stay on the host.
        let framework = self.evidence.problem.framework.clone();
        if framework != "torch" {
            self.set_profiled_error(
                Role::Work,
                format!("no work pass: the problem's framework is {framework}, not torch (its work is not CUDA kernels)"),
            );
            return Ok(());
        }
        let calls = self.spec.options.work_calls;
        if !self
            .profiled_calls(
                Role::Work,
                TrialPhase::Work,
                Stage::Work,
                calls,
                &profiler,
                settings.clone(),
            )
            .await?
        {
            return Ok(());
        }
        if crate::eval::precision::needs_reference_work(&self.evidence) {
            let conditions = format!(
                "{}; {profiler} {}",
                self.conditions_key(),
                serde_json::to_string(&settings).unwrap_or_default()
            );
            if !self.reuse_reference_work(&conditions) {
                let measured_at = now_rfc3339();
                self.reference_work(&profiler, settings).await;
                self.keep_reference_work(conditions, measured_at);
            }
        }
        Ok(())
    }

    /// Through a warm evaluator, the reference's work pass an earlier candidate's eval took
    /// under the same conditions, recorded as this one's with where it came from; false when
    /// there is none to reuse (then it is taken here).
    fn reuse_reference_work(&mut self, conditions: &str) -> bool {
        let Some(warm) = self.warm.as_deref_mut() else {
            return false;
        };
        let Some(stored) = warm.stored_work.as_mut() else {
            return false;
        };
        if !stored.serves(conditions, stored.taken.elapsed()) {
            warm.stored_work = None;
            return false;
        }
        self.evidence.reference_work = Some(stored.evidence.clone());
        self.evidence.reference_work_reused = Some(stored.reuse.clone());
        stored.reuse.reused_before += 1;
        tracing::debug!(
            measured_in = %stored.reuse.measured_in,
            "eval: the reference's work pass is reused"
        );
        true
    }

    /// A reference work pass taken here kept for the warm evaluator's later candidates, when it
    /// recorded launches and no error.
    fn keep_reference_work(&mut self, conditions: String, measured_at: String) {
        let measured_in = self.dir.display().to_string();
        let (Some(warm), Some(evidence)) = (
            self.warm.as_deref_mut(),
            self.evidence.reference_work.as_ref(),
        ) else {
            return;
        };
        if evidence.error.is_some() || evidence.launches.is_empty() {
            return;
        }
        warm.stored_work = Some(StoredReferenceWork {
            evidence: evidence.clone(),
            reuse: ReferenceWorkReuse {
                measured_in,
                measured_at,
                conditions,
                reused_before: 0,
            },
            taken: std::time::Instant::now(),
        });
    }

    /// The reference's work pass: a trusted worker of its own under the work counters, one
    /// reference run to warm up, then one inside the profiler's window (`trial` with
    /// `profile`). Evidence only: whatever goes wrong is recorded in `reference_work.error`
    /// and the eval goes on.
    async fn reference_work(&mut self, profiler: &str, settings: ProfilerSettings) {
        self.evidence.reference_work = Some(profiled_evidence(profiler, Role::ReferenceWork));
        if let Err(failure) = self.reference_work_calls(profiler, settings).await {
            self.set_profiled_error(Role::ReferenceWork, failure.message);
        }
        if let Some(worker) = self.reference_work.take() {
            let run = worker.finish().await;
            self.record_profiled_run(Role::ReferenceWork, &run);
        }
    }

    async fn reference_work_calls(
        &mut self,
        profiler: &str,
        settings: ProfilerSettings,
    ) -> std::result::Result<(), Failure> {
        let role = Role::ReferenceWork;
        self.start(role, profiler, settings, Stage::Work).await?;
        let setup = self.reference_setup(true);
        let setup_limit = self.spec.options.setup_timeout;
        self.ask(role, Stage::Work, setup, setup_limit).await?;
        let limit = self.limit_of(role);
        for profile in [false, true] {
            let (index, _, trial) = self.trial_request(Stage::Work, Some(profile))?;
            self.ask(role, Stage::Work, trial, limit).await?;
            let release = Message::request("release", json!({"trial": index}));
            self.ask(role, Stage::Work, release, limit).await?;
        }
        Ok(())
    }

    /// The evidence slot a profiled role's run goes into.
    fn profiled_slot(&mut self, role: Role) -> Option<&mut WitnessEvidence> {
        match role {
            Role::Witness => self.evidence.witness.as_mut(),
            Role::Work => self.evidence.work.as_mut(),
            Role::ReferenceWork => self.evidence.reference_work.as_mut(),
            Role::Trusted | Role::Candidate | Role::Build => None,
        }
    }

    /// Why a profiled pass could not be (fully) taken, before what its run said, if anything.
    fn set_profiled_error(&mut self, role: Role, error: String) {
        if let Some(slot) = self.profiled_slot(role) {
            slot.error = Some(match slot.error.take() {
                Some(run_errors) => format!("{error}; {run_errors}"),
                None => error,
            });
        }
    }

    /// A profiled run's kernel launches, profiler version and errors into the evidence (the
    /// witness's, the work pass's or the reference's work pass's; nothing for the others).
    fn record_profiled_run(&mut self, role: Role, run: &ProfileRun) {
        if !matches!(role, Role::Witness | Role::Work | Role::ReferenceWork) {
            return;
        }
        if let Some(version) = run.profiler.version.as_ref() {
            self.evidence.environment.witness_tool =
                Some(format!("{} {version}", run.profiler.name));
        }
        let Some(slot) = self.profiled_slot(role) else {
            return;
        };
        slot.launches = crate::eval::witness::launches_from_records(&run.kernels);
        if !run.errors.is_empty() {
            let errors = run
                .errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            // An error recorded before (a failed request) comes first.
            slot.error = Some(match slot.error.take() {
                Some(earlier) => format!("{earlier}; {errors}"),
                None => errors,
            });
        }
    }

    /// Start the work pass's worker now, at the turn's beginning: only the interpreter, torch
    /// and the profiler load before its `setup`, which waits for the scored pass to end. Only a
    /// torch problem gets a work pass.
    fn start_work_ahead(&mut self, profiler: &str, settings: ProfilerSettings) {
        if self.evidence.problem.framework != "torch" || !self.baseline.changes().is_empty() {
            return;
        }
        let launch = self.launch(Role::Work, profiler, settings);
        self.work_ready = Some(launch.start_ahead());
    }

    /// The worker started ahead, in `role`'s slot (or the failure of its start).
    async fn take_started(
        &mut self,
        role: Role,
        stage: Stage,
        ready: StartingWorker,
    ) -> std::result::Result<(), Failure> {
        let started = ready
            .await
            .map_err(|e| harness(stage, format!("the worker's start did not finish: {e}")))?;
        match started {
            Ok(worker) => {
                let changes = self.baseline.changes();
                if !changes.is_empty() {
                    worker.end(false).await;
                    return Err(integrity::failure(stage, &changes, None));
                }
                self.place(role, worker);
                Ok(())
            }
            Err(e) => Err(failure::from_start(role, stage, &e, &self.dir)),
        }
    }

    /// The scored worker, ending beside the work pass's setup, has ended (its last records are
    /// in the tracer's file).
    async fn scored_ended(&mut self) {
        if let Some(ending) = self.scored_ending.take() {
            if let Err(e) = ending.await {
                tracing::debug!(error = %e, "the scored worker's end was not awaited");
            }
            tracing::debug!("eval: the scored worker has ended");
        }
    }

    /// Say `bye` to whichever workers are still up, the candidate's first. A warm trusted
    /// worker is kept instead: every trial of this eval released, it goes back to the
    /// evaluator with this eval's reference blocks (when they may be reused).
    async fn close(&mut self) {
        self.scored_ended().await;
        // A worker started ahead and never taken (the eval stopped before it; the work pass's
        // worker of a candidate found incorrect) ends beside the candidate's own worker: it
        // records nothing, and its end (ncu's with it) need not wait for the other's.
        let unused = [self.work_ready.take(), self.scored_ready.take()];
        let end_unused = async move {
            for ready in unused.into_iter().flatten() {
                if let Ok(Ok(worker)) = ready.await {
                    worker.end(false).await;
                }
            }
        };
        let finish_used = async {
            for slot in [Role::Candidate, Role::ReferenceWork] {
                if let Some(worker) = self.slot(slot).take() {
                    let role = worker.role;
                    let run = worker.finish().await;
                    self.record_profiled_run(role, &run);
                }
            }
        };
        tokio::join!(end_unused, finish_used);
        if self.warm.is_some() {
            self.hand_back_trusted().await;
        }
        if let Some(trusted) = self.trusted.take() {
            trusted.finish().await;
        }
    }

    /// The warm trusted worker back to the evaluator, with every trial of this eval released
    /// (a release that fails loses it: the next candidate gets a fresh one).
    async fn hand_back_trusted(&mut self) {
        let limit = self.call_limit();
        for index in std::mem::take(&mut self.trusted_held) {
            let Some(trusted) = self.trusted.as_mut() else {
                break;
            };
            let request = Message::request("release", json!({"trial": index}));
            if trusted.conn.request(&request, limit).await.is_err()
                && let Some(lost) = self.trusted.take()
            {
                lost.end(false).await;
            }
        }
        self.keep_reference_blocks();
        if let Some(warm) = self.warm.as_deref_mut() {
            warm.next_trial = self.next_trial;
            warm.trusted = self.trusted.take();
        }
    }

    /// The trusted worker's `setup` answer kept for the evaluator's later candidates (a fresh
    /// trusted worker: nothing measured before it is reused).
    fn keep_setup(&mut self) {
        let environment = &self.evidence.environment;
        let setup = TrustedSetup {
            python: environment.python.clone(),
            torch: environment.torch.clone(),
            numpy: environment.numpy.clone(),
            device_name: environment.device_name.clone(),
            framework: self.evidence.problem.framework.clone(),
            init_seed: self.evidence.settings.init_seed,
            init_inputs: self.init_inputs.clone(),
        };
        if let Some(warm) = self.warm.as_deref_mut() {
            warm.setup = Some(setup);
            warm.stored = None;
        }
    }

    /// A warm trusted worker's `setup` answer, as if it had just been given.
    fn apply_setup(&mut self, setup: TrustedSetup) {
        let environment = &mut self.evidence.environment;
        environment.python = setup.python;
        environment.torch = setup.torch;
        environment.numpy = setup.numpy;
        environment.device_name = setup.device_name;
        self.evidence.problem.framework = setup.framework;
        self.init_inputs = setup.init_inputs;
    }

    /// The conditions reference blocks are valid for: they are reused only under the same.
    fn conditions_key(&self) -> String {
        let e = &self.evidence.environment;
        let or_none = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        let threads = match self.spec.device {
            Device::Cpu => "; 1 thread a side",
            Device::Cuda => "",
        };
        format!(
            "{} {} (uuid {}, driver {}); python {}; torch {}; numpy {}{threads}",
            self.spec.device.as_str(),
            or_none(&e.device_name),
            or_none(&e.device_uuid),
            or_none(&e.driver),
            or_none(&e.python),
            or_none(&e.torch),
            or_none(&e.numpy),
        )
    }

    /// Before the first block (warm evaluator only): whether the stored reference blocks may
    /// be reused at all (then block 0's reference block is their drift probe), or why the
    /// reference is measured in full beside this candidate.
    fn begin_reference_timing(&mut self) {
        let blocks = self.spec.options.timing_blocks;
        let measured_in = self.dir.display().to_string();
        let Some(warm) = self.warm.as_deref_mut() else {
            return;
        };
        let because = match &warm.stored {
            None => Some("no reference blocks stored yet (the evaluator's first timed candidate, a fresh trusted worker, or the last ones dropped)".to_string()),
            Some(s) if s.taken.elapsed() > MAX_REFERENCE_AGE => Some(format!(
                "the stored blocks were older than {} s",
                MAX_REFERENCE_AGE.as_secs()
            )),
            Some(s) if s.blocks.len() != blocks as usize => {
                Some("the stored blocks are not this eval's count".to_string())
            }
            Some(_) => None,
        };
        if because.is_some() {
            warm.stored = None;
        }
        self.evidence.reference_timing = Some(ReferenceTiming {
            reused_blocks: Vec::new(),
            measured_in,
            measured_at: now_rfc3339(),
            conditions: String::new(),
            reused_before: 0,
            measured_because: because,
            probe: None,
        });
    }

    /// After block 0's reference block (the probe): compare it with the stored blocks; reuse
    /// them for the later blocks when it agrees under the same conditions, else drop them.
    fn judge_probe(&mut self) {
        let conditions = self.conditions_key();
        let probe_block = self
            .evidence
            .samples
            .iter()
            .rfind(|b| b.side == Side::Reference && b.block == 0)
            .cloned();
        let (Some(warm), Some(timing)) = (
            self.warm.as_deref_mut(),
            self.evidence.reference_timing.as_mut(),
        ) else {
            return;
        };
        timing.conditions = conditions.clone();
        let Some(stored) = warm.stored.as_ref() else {
            return;
        };
        if stored.conditions != conditions {
            timing.measured_because = Some(format!(
                "the conditions changed (the stored blocks': {})",
                stored.conditions
            ));
            warm.stored = None;
            return;
        }
        let Some(probe_block) = probe_block else {
            return;
        };
        let changed = crate::eval::drift::clocks_changed(
            &stored.blocks,
            probe_block.conditions_before.as_ref(),
        );
        let probe = crate::eval::drift::probe(
            &stored.blocks,
            &probe_block.times_ms,
            crate::eval::drift::DRIFT_BOUND,
            now_rfc3339(),
            changed,
        );
        match probe {
            Some(p) if !p.drifted => {
                timing.reused_blocks = stored
                    .blocks
                    .iter()
                    .filter(|b| b.side == Side::Reference && b.block > 0)
                    .map(|b| b.block)
                    .collect();
                timing.measured_in.clone_from(&stored.measured_in);
                timing.measured_at.clone_from(&stored.measured_at);
                timing.reused_before = stored.reused;
                timing.probe = Some(p);
                self.reuse = Some(stored.blocks.clone());
            }
            Some(p) => {
                timing.measured_because = Some(if changed {
                    "the device's clocks moved since the stored blocks".to_string()
                } else {
                    format!(
                        "the drift probe's median, {:.4} ms, lay outside the stored blocks' {:.4}-{:.4} ms widened by {}x",
                        p.median_ms, p.stored_low_ms, p.stored_high_ms, p.bound
                    )
                });
                timing.probe = Some(p);
                warm.stored = None;
            }
            None => {
                timing.measured_because =
                    Some("the probe or the stored blocks had no usable time".to_string());
                warm.stored = None;
            }
        }
    }

    /// The stored reference block `block` when this eval reuses them (never block 0, the
    /// probe, and never a candidate's).
    fn reused_block(&self, side: Side, block: u32) -> Option<TimingBlock> {
        if side != Side::Reference || block == 0 {
            return None;
        }
        self.reuse
            .as_ref()?
            .iter()
            .find(|b| b.side == Side::Reference && b.block == block)
            .cloned()
    }

    /// After the eval: reused blocks count one more candidate; blocks measured here in full,
    /// beside a candidate judged correct with no failure, are stored for the next ones.
    fn keep_reference_blocks(&mut self) {
        let complete = self.evidence.failure.is_none() && self.correct_so_far();
        let blocks: Vec<TimingBlock> = self
            .evidence
            .samples
            .iter()
            .filter(|b| b.side == Side::Reference)
            .cloned()
            .collect();
        let wanted = self.spec.options.timing_blocks as usize;
        let conditions = self.conditions_key();
        let (Some(warm), Some(timing)) = (
            self.warm.as_deref_mut(),
            self.evidence.reference_timing.as_ref(),
        ) else {
            return;
        };
        if !timing.reused_blocks.is_empty() {
            if let Some(stored) = warm.stored.as_mut() {
                stored.reused += 1;
            }
            return;
        }
        if complete && blocks.len() == wanted && wanted > 0 {
            warm.stored = Some(StoredReference {
                blocks,
                measured_in: timing.measured_in.clone(),
                measured_at: timing.measured_at.clone(),
                taken: std::time::Instant::now(),
                conditions,
                reused: 0,
            });
        }
    }
}

/// The evidence of a profiled pass before it runs: its profiler, run directory and controls.
fn profiled_evidence(profiler: &str, role: Role) -> WitnessEvidence {
    let (clock_control, cache_control) = match role {
        Role::Work | Role::ReferenceWork => {
            match crate::profilers::witness::work_controls(profiler) {
                Some((clock, cache)) => (Some(clock), Some(cache)),
                None => (None, None),
            }
        }
        _ => (
            crate::profilers::witness::witness_clock_control(profiler),
            None,
        ),
    };
    WitnessEvidence {
        profiler: profiler.to_string(),
        run_dir: role.dir_name(),
        clock_control: clock_control.map(str::to_string),
        cache_control: cache_control.map(str::to_string),
        launches: Vec::new(),
        error: None,
    }
}

/// The most a candidate's answer for `trial` may carry: twice the bytes of the reference's
/// outputs and of the inputs (which come back as `inputs_after` on the CPU), plus 1 MiB.
fn output_allowance(trial: &TrialEvidence) -> u64 {
    let bytes: u64 = trial
        .reference_outputs
        .iter()
        .chain(&trial.inputs)
        .map(|s| s.nbytes)
        .sum();
    bytes.saturating_mul(2).saturating_add(1 << 20)
}

/// Whether process `pid` is stopped (state `T` or `t` in `/proc/PID/stat`).
fn is_stopped(pid: u32) -> bool {
    matches!(process_state(pid), Some('T' | 't'))
}

/// Now, as RFC 3339 (UTC, seconds).
fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

fn harness(stage: Stage, message: String) -> Failure {
    Failure {
        stage,
        kind: FailureKind::Harness,
        message,
        log: None,
    }
}

fn reply_op(reply: &Message) -> String {
    reply
        .get("op")
        .and_then(Value::as_str)
        .unwrap_or("a request")
        .to_string()
}

/// The device's calibration (`polyprof calibrate`) for the GPU, driver and profiler version the
/// eval ran under, when one is cached: the work checks cite it and skip untrusted counters.
fn cached_calibration(
    environment: &evidence::Environment,
) -> Option<crate::model::calibration::Calibration> {
    let device = environment
        .device_uuid
        .as_deref()
        .or(environment.device_name.as_deref())?;
    let driver = environment.driver.as_deref()?;
    let tool = environment.witness_tool.as_deref()?;
    crate::pipeline::calibrate::lookup(device, driver, tool)
}

/// Target GPU time of one graph replay, ms: `GRAPH_REPLAY_MS` of the harness's
/// `polyprof_timing.py`, which sizes its batches to it.
const GRAPH_REPLAY_MS: f64 = 32.0;
/// The harness's own cap on calls per graph replay.
const GRAPH_BATCH_MAX: u32 = 1000;

/// Calls per graph replay that fill `GRAPH_REPLAY_MS` at `reference_ms` a call (at least 1, at
/// most the harness's own cap).
fn graph_batch_bound(reference_ms: f64) -> u32 {
    let calls = (GRAPH_REPLAY_MS / reference_ms).ceil();
    if calls.is_finite() && calls >= 1.0 {
        (calls.min(f64::from(GRAPH_BATCH_MAX))) as u32
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_graph_replay_holds_at_most_the_references_32_ms_of_calls() {
        // A 2.66 ms matmul: 13 calls a replay, not the 1000 a patched timer would ask for.
        assert_eq!(graph_batch_bound(2.66), 13);
        // A reference slower than a replay: one call.
        assert_eq!(graph_batch_bound(50.0), 1);
        // A µs reference: the harness's own cap.
        assert_eq!(graph_batch_bound(0.001), 1000);
        assert_eq!(graph_batch_bound(0.0), 1);
        assert_eq!(graph_batch_bound(f64::NAN), 1);
    }

    #[test]
    fn an_eval_directory_is_refused_or_numbered_when_not_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("eval");
        let first = claim_eval_dir(&dir, IfExists::Refuse).unwrap();
        // Busy while claimed.
        assert!(matches!(
            claim_eval_dir(&dir, IfExists::Refuse),
            Err(Error::Busy { .. })
        ));
        std::fs::write(dir.join(EVIDENCE_FILE), "{}").unwrap();
        drop(first);
        let err = claim_eval_dir(&dir, IfExists::Refuse)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not empty"), "{err}");
        let numbered = claim_eval_dir(&dir, IfExists::Number).unwrap();
        assert_eq!(numbered.dir, tmp.path().join("eval.001"));
    }

    #[test]
    fn a_source_file_has_its_digest_and_a_missing_one_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("ref.py");
        std::fs::write(&path, "abc").unwrap();
        let source = source_file(&path, "reference").unwrap();
        assert_eq!(
            source.info.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(source.absolute.is_absolute());
        let err = source_file(&tmp.path().join("nope.py"), "candidate")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("read the candidate") && err.contains("nope.py"),
            "{err}"
        );
    }
}
