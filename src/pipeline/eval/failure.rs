//! What stopped an eval, as `evidence::Failure`: the stage, whose fault (the kind) and what
//! happened, from the worker's own error, the protocol, or how its process ended.

use std::path::Path;

use crate::eval::evidence::{Failure, FailureKind, Stage};
use crate::model::outcome::Outcome;
use crate::model::run::ProfileRun;
use crate::pipeline::eval::protocol::ProtocolError;
use crate::pipeline::eval::worker::{self, Role, StartError};

/// The kind a worker's error names (`{"error": {"kind": …}}`).
pub fn kind_of_worker_error(kind: &str) -> Option<FailureKind> {
    Some(match kind {
        "raised" => FailureKind::Raised,
        "bad_output" => FailureKind::BadOutput,
        "device_fault" => FailureKind::DeviceFault,
        "compile_error" => FailureKind::CompileError,
        _ => return None,
    })
}

/// How a worker's process ended, in words (`was killed by signal 11 (SIGSEGV)`).
pub fn ended_as(run: &ProfileRun) -> String {
    match &run.outcome {
        Some(Outcome::Signalled { signal } | Outcome::SupervisorKilled { signal }) => {
            let name = nix::sys::signal::Signal::try_from(*signal)
                .map(|s| format!(" ({})", s.as_str()))
                .unwrap_or_default();
            format!("was killed by signal {signal}{name}")
        }
        Some(Outcome::Exited { code }) => format!("exited with status {code}"),
        Some(other) => format!("ended: {other}"),
        None => "did not start".to_string(),
    }
}

/// The failure of `role` at `stage` after the request error `error`; `run` is the worker's run
/// once ended (how its process ended, its log).
pub fn from_request(
    role: Role,
    stage: Stage,
    error: &ProtocolError,
    run: &ProfileRun,
    eval_dir: &Path,
) -> Failure {
    let who = who(role);
    let tail = worker::stderr_tail(run, 12);
    let (kind, message) = match error {
        ProtocolError::Worker { op, error: e } => {
            let kind = kind_of_worker_error(&e.kind).unwrap_or(FailureKind::Harness);
            let mut message = format!("{who} failed `{op}` ({}): {}", e.kind, e.message);
            if let Some(traceback) = e.traceback.as_deref().filter(|t| !t.trim().is_empty()) {
                message.push('\n');
                message.push_str(traceback.trim_end());
            }
            (kind, message)
        }
        ProtocolError::Timeout { op, after } => (
            FailureKind::Timeout,
            format!(
                "{who} did not answer `{op}` within {:.0} s and was killed",
                after.as_secs_f64()
            ),
        ),
        ProtocolError::Cancelled { op } => (
            FailureKind::Harness,
            format!("the eval was cancelled while {who} ran `{op}`"),
        ),
        ProtocolError::Eof { op } | ProtocolError::Io { op, .. } => (
            FailureKind::Crashed,
            with_tail(
                format!("{who} died during `{op}`: its process {}", ended_as(run)),
                &tail,
            ),
        ),
        ProtocolError::Malformed { op, why } => (
            // The candidate's code shares its worker's process: a broken message is its doing.
            FailureKind::Crashed,
            format!("{who} broke the protocol during `{op}`: {why}"),
        ),
        ProtocolError::TooLarge { op, bytes, limit } => (
            FailureKind::BadOutput,
            format!(
                "{who} flooded its answer to `{op}`: {bytes} bytes, over the limit of {limit} \
                 (twice the bytes of the trial's reference outputs and inputs, plus 1 MiB); \
                 refused before it was read"
            ),
        ),
    };
    Failure {
        stage,
        kind: blame(role, kind),
        message,
        log: worker::stderr_log(run, eval_dir),
    }
}

/// The failure of a worker that never connected.
pub fn from_start(role: Role, stage: Stage, error: &StartError, eval_dir: &Path) -> Failure {
    let who = who(role);
    let (kind, message, run) = match error {
        StartError::Setup(why) => (
            FailureKind::Harness,
            format!("cannot start {who}: {why}"),
            None,
        ),
        StartError::Ended(run) => {
            let started = !matches!(run.outcome, None | Some(Outcome::SpawnFailed { .. }));
            let why = match &run.outcome {
                Some(Outcome::SpawnFailed { error, .. }) => format!(
                    "{error}; give the Python interpreter with --python (or $POLYPROF_PYTHON)"
                ),
                _ if !started => run
                    .errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
                _ => with_tail(
                    format!("its process {} before connecting", ended_as(run)),
                    &worker::stderr_tail(run, 12),
                ),
            };
            (FailureKind::Harness, format!("{who}: {why}"), Some(run))
        }
        StartError::Timeout(run) => (
            FailureKind::Harness,
            format!("{who} did not connect in time and was killed"),
            Some(run),
        ),
        StartError::Cancelled(run) => (
            FailureKind::Harness,
            format!("the eval was cancelled while {who} started"),
            Some(run),
        ),
    };
    Failure {
        stage,
        kind,
        message,
        log: run.and_then(|r| worker::stderr_log(r, eval_dir)),
    }
}

/// The trusted worker ended by a hand outside it while an unconfined candidate ran beside it:
/// `ended` says how (`was killed by signal 9 (SIGKILL)`, `was stopped`). The candidate could
/// signal it, so it is judged against the candidate, not read as the problem's failure.
pub fn trusted_interfered(stage: Stage, ended: &str, run: &ProfileRun, eval_dir: &Path) -> Failure {
    Failure {
        stage,
        kind: FailureKind::Interfered,
        message: format!(
            "the reference's worker {ended} while the candidate's unconfined worker ran beside \
             it (the candidate could signal it): judged against the candidate"
        ),
        log: worker::stderr_log(run, eval_dir),
    }
}

/// Signals a process gets from another, never from its own fault: a trusted worker ended by
/// one of them was ended by a hand outside it.
pub fn sent_from_outside(run: &ProfileRun) -> bool {
    use nix::sys::signal::Signal;
    let signal = match &run.outcome {
        Some(Outcome::Signalled { signal }) => *signal,
        _ => return false,
    };
    matches!(
        Signal::try_from(signal),
        Ok(Signal::SIGKILL
            | Signal::SIGTERM
            | Signal::SIGINT
            | Signal::SIGHUP
            | Signal::SIGQUIT
            | Signal::SIGUSR1
            | Signal::SIGUSR2
            | Signal::SIGALRM
            | Signal::SIGPIPE)
    )
}

/// The trusted worker runs the reference and the checks only: its failures are the
/// problem's (or polyprof's), except a candidate output it could not read and a device fault.
fn blame(role: Role, kind: FailureKind) -> FailureKind {
    match (role, kind) {
        (
            Role::Trusted | Role::ReferenceWork,
            FailureKind::BadOutput
            | FailureKind::DeviceFault
            | FailureKind::Harness
            | FailureKind::Interfered,
        ) => kind,
        (Role::Trusted | Role::ReferenceWork, _) => FailureKind::ReferenceError,
        (_, kind) => kind,
    }
}

fn who(role: Role) -> &'static str {
    match role {
        Role::Trusted => "the reference's worker",
        Role::Candidate => "the candidate's worker",
        Role::Witness => "the candidate's worker under the witness",
        Role::Work => "the candidate's worker under the work counters",
        Role::ReferenceWork => "the reference's worker under the work counters",
        Role::Build => "the candidate's build worker",
    }
}

fn with_tail(message: String, tail: &str) -> String {
    if tail.trim().is_empty() {
        message
    } else {
        format!("{message}; its last output:\n{tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::eval::protocol::WorkerError;
    use std::time::Duration;

    fn run(outcome: Option<Outcome>) -> ProfileRun {
        let mut run = ProfileRun::new("candidate.000", "none", &[], Path::new("/e/candidate.000"));
        run.outcome = outcome;
        run
    }

    fn worker_error(kind: &str) -> ProtocolError {
        ProtocolError::Worker {
            op: "call".into(),
            error: WorkerError {
                kind: kind.into(),
                message: "boom".into(),
                traceback: Some("Traceback …".into()),
            },
        }
    }

    #[test]
    fn the_workers_error_kind_names_the_failure() {
        let dir = Path::new("/e");
        let f = from_request(
            Role::Candidate,
            Stage::Correctness,
            &worker_error("raised"),
            &run(None),
            dir,
        );
        assert_eq!(f.kind, FailureKind::Raised);
        assert!(
            f.message.contains("boom") && f.message.contains("Traceback"),
            "{}",
            f.message
        );
        let f = from_request(
            Role::Candidate,
            Stage::Load,
            &worker_error("compile_error"),
            &run(None),
            dir,
        );
        assert_eq!(f.kind, FailureKind::CompileError);
        // The reference raising is the problem's failure, not the candidate's.
        let f = from_request(
            Role::Trusted,
            Stage::Correctness,
            &worker_error("raised"),
            &run(None),
            dir,
        );
        assert_eq!(f.kind, FailureKind::ReferenceError);
        // A candidate output the checker cannot read is the candidate's.
        let f = from_request(
            Role::Trusted,
            Stage::Correctness,
            &worker_error("bad_output"),
            &run(None),
            dir,
        );
        assert_eq!(f.kind, FailureKind::BadOutput);
    }

    #[test]
    fn a_dead_worker_is_crashed_with_its_signal_and_a_silent_one_timed_out() {
        let dir = Path::new("/e");
        let eof = ProtocolError::Eof { op: "call".into() };
        let f = from_request(
            Role::Candidate,
            Stage::Correctness,
            &eof,
            &run(Some(Outcome::Signalled { signal: 11 })),
            dir,
        );
        assert_eq!(f.kind, FailureKind::Crashed);
        assert!(f.message.contains("signal 11 (SIGSEGV)"), "{}", f.message);
        let timeout = ProtocolError::Timeout {
            op: "time".into(),
            after: Duration::from_secs(120),
        };
        let f = from_request(
            Role::Candidate,
            Stage::Timing,
            &timeout,
            &run(Some(Outcome::Cancelled)),
            dir,
        );
        assert_eq!(f.kind, FailureKind::Timeout);
        assert!(f.message.contains("120 s"), "{}", f.message);
    }

    #[test]
    fn a_worker_that_cannot_start_is_the_harness_failure() {
        let f = from_start(
            Role::Trusted,
            Stage::Reference,
            &StartError::Ended(Box::new(run(Some(Outcome::SpawnFailed {
                error: "No such file or directory".into(),
                errno: Some(2),
            })))),
            Path::new("/e"),
        );
        assert_eq!(f.kind, FailureKind::Harness);
        assert!(f.message.contains("--python"), "{}", f.message);
    }
}
