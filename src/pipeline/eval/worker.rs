//! One eval worker: a Python process (`polyprof_eval_worker.py`) run as a supervised job of
//! the pipeline (its own run directory, logs and `run.json`, optionally under a profiler),
//! and the one socket connection it makes back. The socket lives in a fresh private directory
//! (0700) and its file is removed once the worker has connected, so nothing else can connect
//! in its place.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::model::arg::Arg;
use crate::model::run::ProfileRun;
use crate::pipeline::eval::bystanders::{Bystanders, Membership};
use crate::pipeline::eval::confine::CandidateSandbox;
use crate::pipeline::eval::protocol::{Connection, Message};
use crate::pipeline::eval::spec::EvalSpec;
use crate::pipeline::job::{Job, pass_label, profile_claimed};
use crate::pipeline::rundir;
use crate::pipeline::runner::{EnvPolicy, RunOptions, Tracking};
use crate::pipeline::target::ExecutionTarget;
use crate::profilers::ProfilerSettings;

/// How long a worker that said `bye` (or whose connection closed) may take to exit by itself
/// before it is killed.
const EXIT_WAIT: Duration = Duration::from_secs(15);

/// What the untrusted workers may see of polyprof's environment besides the `untrusted`
/// policy's own list: what torch, Triton and their compilers read. Credentials never pass.
const CANDIDATE_ENV_ALLOW: [&str; 9] = [
    "TORCH_*",
    "TRITON_*",
    "PYTORCH_*",
    "CUDA_*",
    "NVIDIA_*",
    "CC",
    "CXX",
    "MAX_JOBS",
    "XDG_CACHE_HOME",
];

/// The thread-pool sizes of the CPU math libraries (OpenMP, OpenBLAS, MKL, Accelerate,
/// numexpr), each set to 1 for both workers of a `--device cpu` eval.
pub const CPU_THREAD_VARIABLES: [&str; 5] = [
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
];

/// The payload a candidate's answers may carry before its first trial sets the limit.
const CANDIDATE_SETUP_PAYLOAD: u64 = 1 << 20;

/// Whose code a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The reference, the inputs and the checks.
    Trusted,
    /// The candidate, for correctness and timing.
    Candidate,
    /// The candidate again, under the witness profiler.
    Witness,
    /// The candidate again, under the work counters (the work pass).
    Work,
    /// The reference again, under the work counters (the reference's work pass).
    ReferenceWork,
    /// The candidate's build stage: its import alone, no device visible, no socket.
    Build,
}

impl Role {
    /// `--role` of the worker script.
    pub fn arg(self) -> &'static str {
        match self {
            Role::Trusted | Role::ReferenceWork => "trusted",
            Role::Candidate | Role::Witness | Role::Work => "candidate",
            Role::Build => "build",
        }
    }

    /// The worker's run directory in the eval directory (`reference.000`).
    pub fn dir_name(self) -> String {
        let name = match self {
            Role::Trusted => "reference",
            Role::Candidate => "candidate",
            Role::Witness => "witness",
            Role::Work => "work",
            Role::ReferenceWork => "reference-work",
            Role::Build => "build",
        };
        pass_label(name, 0)
    }
}

/// How to start one worker.
#[derive(Debug, Clone)]
pub struct Launch {
    pub role: Role,
    pub python: PathBuf,
    /// `DIR/harness/polyprof_eval_worker.py`.
    pub script: PathBuf,
    /// The reference or the candidate file (absolute).
    pub source: PathBuf,
    pub device: &'static str,
    pub eval_dir: PathBuf,
    /// `none`, or the witness profiler.
    pub profiler: String,
    pub settings: ProfilerSettings,
    pub tracking: Tracking,
    /// Set for the worker after its policy (the pool's device pinning); before the two below.
    pub extra_env: std::collections::BTreeMap<String, String>,
    /// The eval's tokens; the worker gets its own children of them.
    pub cancel: CancellationToken,
    pub kill_now: CancellationToken,
    /// Waiting for the worker to connect.
    pub connect_timeout: Duration,
    /// The candidate's workers' sandbox (`None`: not confined; always `None` for the trusted
    /// side, which runs no candidate code).
    pub sandbox: Option<CandidateSandbox>,
    /// The candidate's build folder (`build::BuildDir`): its build caches point there instead
    /// of into the worker's scratch folder, and it may write there. `None` for the trusted side.
    pub build_dir: Option<PathBuf>,
    /// The scored pass's tracer, loaded into this worker: the candidate's scored worker, and the
    /// trusted worker that times the reference beside it (so both pay the tracer's cost).
    pub trace: Option<crate::pipeline::eval::scored_trace::TraceLoad>,
    /// Started ahead of its turn: it joins these once connected, and is held stopped while a
    /// timing block runs, until its turn takes it (`Worker::take_turn`).
    pub bystanders: Option<Bystanders>,
}

/// A worker's start under way beside other work (`Launch::start_ahead`).
pub type StartingWorker = JoinHandle<Result<Worker, StartError>>;

/// What an eval's worker launches are made of: the eval's spec, harness and directory, the
/// source the worker loads, and, on the candidate's side, its sandbox and build folder.
pub(crate) struct Launcher<'a> {
    pub spec: &'a EvalSpec,
    pub script: &'a Path,
    pub eval_dir: &'a Path,
    /// The reference or the candidate file, absolute.
    pub source: &'a Path,
    pub sandbox: Option<&'a CandidateSandbox>,
    pub build_dir: Option<PathBuf>,
}

impl<'a> Launcher<'a> {
    /// The trusted side's launcher: the reference, no sandbox, no build folder (it runs no
    /// candidate code).
    pub fn trusted(
        spec: &'a EvalSpec,
        script: &'a Path,
        eval_dir: &'a Path,
        reference: &'a Path,
    ) -> Self {
        Launcher {
            spec,
            script,
            eval_dir,
            source: reference,
            sandbox: None,
            build_dir: None,
        }
    }

    /// The launch of this side's worker in `role`.
    pub fn launch(&self, role: Role, profiler: &str, settings: ProfilerSettings) -> Launch {
        Launch {
            role,
            python: self.spec.python.clone(),
            script: self.script.to_path_buf(),
            source: self.source.to_path_buf(),
            device: self.spec.device.as_str(),
            eval_dir: self.eval_dir.to_path_buf(),
            profiler: profiler.to_string(),
            settings,
            tracking: self.spec.tracking.clone(),
            extra_env: self.spec.extra_env.clone(),
            cancel: self.spec.cancel.clone(),
            kill_now: self.spec.kill_now.clone(),
            connect_timeout: self.spec.options.setup_timeout,
            sandbox: self.sandbox.cloned(),
            build_dir: self.build_dir.clone(),
            trace: None,
            bystanders: None,
        }
    }
}

/// A running, connected worker.
#[derive(Debug)]
pub struct Worker {
    pub role: Role,
    pub run_dir: PathBuf,
    pub conn: Connection,
    /// The worker's own pid, from the socket's peer credentials (the process that connected,
    /// also under a profiler that started it), not from anything the worker says.
    pub pid: Option<u32>,
    job: JoinHandle<ProfileRun>,
    kill_now: CancellationToken,
    _socket_dir: tempfile::TempDir,
    /// The candidate's scratch folder (its HOME, TMPDIR and build caches), removed after it.
    _scratch: Option<tempfile::TempDir>,
    /// Its place among the bystanders while it waits for its turn.
    bystander: Option<Membership>,
}

/// Why a worker is not connected.
#[derive(Debug)]
pub enum StartError {
    /// Its run could not be set up (socket, run directory): polyprof's failure.
    Setup(String),
    /// The process ended (or never started) before connecting; its run says how.
    Ended(Box<ProfileRun>),
    /// It did not connect in time and was killed.
    Timeout(Box<ProfileRun>),
    /// The eval was cancelled.
    Cancelled(Box<ProfileRun>),
}

impl Launch {
    /// The worker's argv: `python -I script --socket S --role R --source F --device D`
    /// (isolated: no user site, no `PYTHON*` variables, no script folder on `sys.path`, so
    /// nothing the candidate places there is imported).
    pub fn argv(&self, socket: &Path) -> Vec<Arg> {
        let mut argv: Vec<Arg> = vec![
            self.python.as_os_str().into(),
            "-I".into(),
            self.script.as_os_str().into(),
        ];
        // The build worker only imports the candidate: it speaks to nobody.
        if self.role != Role::Build {
            argv.push("--socket".into());
            argv.push(socket.as_os_str().into());
        }
        argv.push("--role".into());
        argv.push(self.role.arg().into());
        argv.push("--source".into());
        argv.push(self.source.as_os_str().into());
        argv.push("--device".into());
        argv.push(self.device.into());
        argv
    }

    /// Run options: the trusted workers inherit polyprof's environment, the candidate's get the
    /// `untrusted` policy; both get `MALLOC_PERTURB_`, so memory malloc hands out is never left
    /// over from an earlier call. Nothing secret is in either.
    /// The worker's run, as a job of the runner into `run_dir`.
    fn job(&self, target: Vec<Arg>, run: RunOptions, run_dir: &Path) -> Job {
        Job {
            target,
            profiler: self.profiler.clone(),
            settings: self.settings.clone(),
            output_dir: run_dir.to_path_buf(),
            label: Some(self.role.dir_name()),
            run,
            call_path: Vec::new(),
            profile_cache: None,
        }
    }

    fn run_options(&self, cancel: CancellationToken, kill_now: CancellationToken) -> RunOptions {
        let mut options = RunOptions {
            tracking: self.tracking.clone(),
            cancel,
            kill_now,
            extra_env: self.extra_env.clone(),
            ..RunOptions::default()
        };
        // No `__pycache__` in the eval's harness directory.
        options
            .extra_env
            .insert("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string());
        // Fresh malloc memory reads 0x7F… (a huge value, never a correct output). Both sides
        // get it: its memsets cost host time, and both sides are timed under the same
        // conditions (the candidate alone made an identical CPU model read 0.94×).
        options
            .extra_env
            .insert("MALLOC_PERTURB_".to_string(), "128".to_string());
        if self.device == "cpu" {
            // One thread on each side: a BLAS or torch pool sized to the machine swung an
            // identical CPU model 0.1 ms <-> 16 ms between blocks. The worker also pins itself
            // to one CPU (`polyprof_eval_worker.pin_host_threads`).
            for name in CPU_THREAD_VARIABLES {
                options.extra_env.insert(name.to_string(), "1".to_string());
            }
        }
        if self.role.arg() != "trusted" {
            options.env_policy = EnvPolicy::Untrusted {
                allow: CANDIDATE_ENV_ALLOW.iter().map(|s| s.to_string()).collect(),
            };
        }
        options
    }

    /// The command of the job: the worker's argv, under the sandbox launcher when confined
    /// (then its scratch folder, and the variables that point its writes there, are set).
    fn target(
        &self,
        socket: &Path,
        options: &mut RunOptions,
    ) -> Result<(Vec<Arg>, Option<tempfile::TempDir>), StartError> {
        let argv = self.argv(socket);
        // After the policy: the untrusted policy keeps no variable it was not told of.
        if let Some(trace) = &self.trace {
            options.extra_env.extend(trace.env.clone());
        }
        if self.role.arg() == "trusted" {
            return Ok((argv, None));
        }
        let scratch = tempfile::Builder::new()
            .prefix("polyprof-sandbox-")
            .tempdir()
            .map_err(|e| StartError::Setup(format!("cannot create the scratch folder: {e}")))?;
        private(scratch.path())?;
        for (name, sub) in [
            ("HOME", ""),
            ("TMPDIR", "tmp"),
            ("XDG_CACHE_HOME", "cache"),
            ("TORCH_EXTENSIONS_DIR", "torch_extensions"),
            ("TRITON_CACHE_DIR", "triton"),
        ] {
            let path = scratch.path().join(sub);
            std::fs::create_dir_all(&path)
                .map_err(|e| StartError::Setup(format!("cannot create {}: {e}", path.display())))?;
            options
                .extra_env
                .insert(name.to_string(), path.display().to_string());
        }
        // The build stage's products, where the build worker left them for the judged ones.
        if let Some(build_dir) = &self.build_dir {
            options
                .extra_env
                .extend(crate::pipeline::eval::build_dir::cache_env(build_dir));
        }
        let Some(sandbox) = &self.sandbox else {
            return Ok((argv, Some(scratch)));
        };
        let command: Vec<std::ffi::OsString> =
            argv.iter().map(|a| a.as_os_str().to_owned()).collect();
        let mut confinement = sandbox.confinement(scratch.path(), self.profiler != "none");
        if let Some(build_dir) = &self.build_dir {
            confinement.write.push(build_dir.clone());
        }
        if let Some(trace) = &self.trace {
            confinement.write.push(trace.write.clone());
            confinement.read.push(trace.read.clone());
        }
        if self.role == Role::Build {
            crate::pipeline::eval::build_dir::without_devices(&mut confinement);
        }
        let wrapped =
            crate::pipeline::sandbox::wrap_argv(&sandbox.launcher, &confinement, &command);
        Ok((wrapped.into_iter().map(Arg::from).collect(), Some(scratch)))
    }

    /// The connection to a connected worker. A candidate's answers carry no payload until a
    /// trial says how much its outputs may hold (`Connection::set_max_payload`).
    fn connection(&self, stream: tokio::net::UnixStream) -> Connection {
        let connection = Connection::new(stream, self.cancel.clone());
        if self.role.arg() == "trusted" {
            connection
        } else {
            connection.with_max_payload(CANDIDATE_SETUP_PAYLOAD)
        }
    }

    /// Start the worker and wait for its connection.
    pub async fn start(&self) -> Result<Worker, StartError> {
        let socket_dir = tempfile::Builder::new()
            .prefix("polyprof-eval-")
            .tempdir()
            .map_err(|e| StartError::Setup(format!("cannot create the socket's directory: {e}")))?;
        private(socket_dir.path())?;
        let socket = socket_dir.path().join("worker.sock");
        let listener = UnixListener::bind(&socket).map_err(|e| {
            StartError::Setup(format!("cannot listen on {}: {e}", socket.display()))
        })?;
        let run_dir = self.eval_dir.join(self.role.dir_name());
        let claimed = rundir::claim(&run_dir).map_err(|e| StartError::Setup(e.to_string()))?;
        let cancel = self.cancel.child_token();
        let kill_now = self.kill_now.child_token();
        let mut run = self.run_options(cancel, kill_now.clone());
        let (target, scratch) = self.target(&socket, &mut run)?;
        let job = self.job(target, run, &run_dir);
        let mut job =
            tokio::spawn(
                async move { profile_claimed(&job, &ExecutionTarget::Local, &claimed).await },
            );
        let stopped = |job: JoinHandle<ProfileRun>, kill_now: CancellationToken| async move {
            kill_now.cancel();
            Box::new(join(job, &run_dir_of(&self.eval_dir, self.role)).await)
        };
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Nobody else may connect in its place.
                    let _ = std::fs::remove_file(&socket);
                    let pid = stream
                        .peer_cred()
                        .ok()
                        .and_then(|c| c.pid())
                        .and_then(|p| u32::try_from(p).ok());
                    let bystander = self.bystanders.as_ref().zip(pid).map(|(b, pid)| b.join(pid));
                    Ok(Worker {
                        role: self.role,
                        run_dir,
                        conn: self.connection(stream),
                        pid,
                        job,
                        kill_now,
                        _socket_dir: socket_dir,
                        _scratch: scratch,
                        bystander,
                    })
                }
                Err(e) => {
                    let run = stopped(job, kill_now).await;
                    Err(StartError::Setup(format!(
                        "accepting the worker's connection failed: {e} (its run: {})",
                        run.output_dir.display()
                    )))
                }
            },
            ended = &mut job => Err(StartError::Ended(Box::new(
                ended.unwrap_or_else(|e| lost_run(&run_dir, &e.to_string())),
            ))),
            () = tokio::time::sleep(self.connect_timeout) => {
                Err(StartError::Timeout(stopped(job, kill_now).await))
            }
            () = self.cancel.cancelled() => Err(StartError::Cancelled(stopped(job, kill_now).await)),
        }
    }
}

impl Launch {
    /// [`Launch::start`] in a task of its own: the worker's interpreter and imports load while
    /// the caller goes on; its result is taken where the worker is needed.
    pub fn start_ahead(self) -> StartingWorker {
        tokio::spawn(async move { self.start().await })
    }

    /// Run a worker that speaks to nobody (the build worker) to its end, within
    /// `connect_timeout` (the setup limit), into its run directory `eval_dir/<role>.000`.
    pub async fn run_to_end(&self) -> Result<ProfileRun, StartError> {
        let run_dir = self.eval_dir.join(self.role.dir_name());
        let claimed = rundir::claim(&run_dir).map_err(|e| StartError::Setup(e.to_string()))?;
        let mut run = self.run_options(self.cancel.child_token(), self.kill_now.child_token());
        run.timeout = Some(self.connect_timeout);
        let (target, _scratch) = self.target(Path::new(""), &mut run)?;
        let job = self.job(target, run, &run_dir);
        Ok(profile_claimed(&job, &ExecutionTarget::Local, &claimed).await)
    }
}

impl Worker {
    /// Its turn has come: no longer a bystander (continued, if a hold had stopped it).
    pub fn take_turn(&mut self) {
        self.bystander = None;
    }

    /// Say `bye` and wait for the process to exit (killed if it does not within a while).
    pub async fn finish(mut self) -> ProfileRun {
        if let Err(e) = self.conn.request(&bye(), EXIT_WAIT).await {
            tracing::debug!(role = ?self.role, error = %e, "the worker did not answer `bye`");
        }
        self.wait_or_kill(EXIT_WAIT).await
    }

    /// The worker failed: let a dying process finish dying (its outcome is the evidence),
    /// kill a live one at once.
    pub async fn end(self, dying: bool) -> ProfileRun {
        let wait = if dying { EXIT_WAIT } else { Duration::ZERO };
        self.wait_or_kill(wait).await
    }

    async fn wait_or_kill(self, wait: Duration) -> ProfileRun {
        let Worker {
            mut job,
            kill_now,
            run_dir,
            conn,
            ..
        } = self;
        drop(conn);
        if !wait.is_zero()
            && let Ok(done) = tokio::time::timeout(wait, &mut job).await
        {
            return done.unwrap_or_else(|e| lost_run(&run_dir, &e.to_string()));
        }
        kill_now.cancel();
        join(job, &run_dir).await
    }
}

/// The `bye` every worker gets: end at once, skipping the interpreter's teardown (0.4-0.7 s with
/// torch loaded, on every worker's close). Under ncu the report loses nothing by it: ncu takes
/// each kernel's counters at its launch, and on an H100 `scripts/gpu-check-ncu.sh` found the same
/// kernels in the same NVTX ranges either way (docs/eval-harness.md, "Ending a worker"). The
/// build worker never gets one: it ends by itself after the import.
fn bye() -> Message {
    Message::request("bye", serde_json::json!({"exit": "now"}))
}

fn run_dir_of(eval_dir: &Path, role: Role) -> PathBuf {
    eval_dir.join(role.dir_name())
}

async fn join(job: JoinHandle<ProfileRun>, run_dir: &Path) -> ProfileRun {
    job.await
        .unwrap_or_else(|e| lost_run(run_dir, &e.to_string()))
}

/// The run document of a job whose task was lost (a panic): what is on disk is kept.
fn lost_run(run_dir: &Path, why: &str) -> ProfileRun {
    let mut run = ProfileRun::read(run_dir)
        .unwrap_or_else(|_| ProfileRun::new("worker", "none", &[], run_dir));
    run.fail(
        crate::model::run::ErrorKind::Internal,
        format!("the worker's job task failed: {why}"),
    );
    run
}

/// Mode 0700 on the socket's directory: only this user may reach the socket.
fn private(dir: &Path) -> Result<(), StartError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| StartError::Setup(format!("cannot make {} private: {e}", dir.display())))
}

/// The stderr log of a worker's run, relative to the eval directory when it is inside it.
pub fn stderr_log(run: &ProfileRun, eval_dir: &Path) -> Option<String> {
    let path = run
        .steps
        .iter()
        .rev()
        .find_map(|s| s.attempts.last())
        .and_then(|a| a.stderr.log_path.clone())?;
    let shown = path.strip_prefix(eval_dir).unwrap_or(&path);
    Some(shown.display().to_string())
}

/// The last lines the worker wrote on stderr (a traceback, a crash message).
pub fn stderr_tail(run: &ProfileRun, lines: usize) -> String {
    // A short output is kept whole in the head; the tail holds only what came after it.
    let tail = run
        .steps
        .iter()
        .rev()
        .find_map(|s| s.attempts.last())
        .map(|a| {
            let mut lines = a.stderr.head.clone();
            lines.extend(a.stderr.tail.iter().cloned());
            lines
        })
        .unwrap_or_default();
    let skip = tail.len().saturating_sub(lines);
    tail[skip..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_that_runs_calls_ends_without_its_teardown() {
        let bye = bye();
        assert_eq!(bye.op(), "bye");
        assert_eq!(bye.get("exit").and_then(|v| v.as_str()), Some("now"));
    }

    fn launch(role: Role) -> Launch {
        Launch {
            role,
            python: "python3".into(),
            script: "/e/harness/polyprof_eval_worker.py".into(),
            source: "/p/cand.py".into(),
            device: "cpu",
            eval_dir: "/e".into(),
            profiler: "none".into(),
            settings: ProfilerSettings::default(),
            tracking: Tracking::Group,
            extra_env: [("CUDA_VISIBLE_DEVICES".to_string(), "3".to_string())].into(),
            cancel: CancellationToken::new(),
            kill_now: CancellationToken::new(),
            connect_timeout: Duration::from_secs(1),
            sandbox: None,
            build_dir: None,
            trace: None,
            bystanders: None,
        }
    }

    #[test]
    fn the_argv_names_socket_role_source_and_device_only() {
        let argv: Vec<String> = launch(Role::Witness)
            .argv(Path::new("/tmp/x/worker.sock"))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            argv,
            [
                "python3",
                "-I",
                "/e/harness/polyprof_eval_worker.py",
                "--socket",
                "/tmp/x/worker.sock",
                "--role",
                "candidate",
                "--source",
                "/p/cand.py",
                "--device",
                "cpu"
            ]
        );
        assert_eq!(Role::Trusted.dir_name(), "reference.000");
        assert_eq!(Role::Witness.dir_name(), "witness.000");
        assert_eq!(Role::Work.dir_name(), "work.000");
        assert_eq!(Role::ReferenceWork.dir_name(), "reference-work.000");
        assert_eq!(Role::Work.arg(), "candidate");
        assert_eq!(Role::ReferenceWork.arg(), "trusted");
    }

    #[test]
    fn only_the_candidate_is_untrusted_and_both_are_perturbed() {
        let trusted = launch(Role::Trusted).run_options(Default::default(), Default::default());
        assert_eq!(trusted.env_policy, EnvPolicy::Inherit);
        let reference_work =
            launch(Role::ReferenceWork).run_options(Default::default(), Default::default());
        assert_eq!(reference_work.env_policy, EnvPolicy::Inherit);
        assert!(trusted.extra_env.contains_key("MALLOC_PERTURB_"));
        for role in [Role::Candidate, Role::Witness, Role::Work] {
            let options = launch(role).run_options(Default::default(), Default::default());
            assert!(matches!(options.env_policy, EnvPolicy::Untrusted { .. }));
            assert!(options.extra_env.contains_key("MALLOC_PERTURB_"));
            // The pool's pinning reaches the untrusted side too (set after the policy).
            assert_eq!(options.extra_env["CUDA_VISIBLE_DEVICES"], "3");
        }
        assert_eq!(trusted.extra_env["CUDA_VISIBLE_DEVICES"], "3");
    }
}
