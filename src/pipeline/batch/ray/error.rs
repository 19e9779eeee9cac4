//! What can stop a Ray batch before or while it runs (a job's own failure never does).

#[derive(Debug, thiserror::Error)]
pub enum RayError {
    /// The address is not one the Job Submission API is reached at.
    #[error(
        "`{address}` is not a Ray dashboard address: {reason}; give it as `ray job submit --address` takes it, http://HOST:8265"
    )]
    Address { address: String, reason: String },
    /// No answer from the dashboard (refused, timed out, a dropped connection).
    #[error(
        "cannot reach the Ray dashboard at {address} ({what}): {detail}; is the cluster up and its dashboard port reachable from here (`ray status` on the head, `curl {address}/api/version`)?"
    )]
    Unreachable {
        address: String,
        what: String,
        detail: String,
    },
    /// The dashboard answered with an error status.
    #[error("Ray refused {what} (HTTP {status}): {body}")]
    Http {
        what: String,
        status: u16,
        body: String,
    },
    /// The dashboard answered something this code cannot read.
    #[error(
        "unexpected answer from {address} to {what}: {detail}; is it a Ray dashboard (Ray 2.9 or later)?"
    )]
    Protocol {
        address: String,
        what: String,
        detail: String,
    },
    /// Ray jobs of this batch root are still live and the driver was not asked to resume.
    #[error(
        "{count} Ray jobs of this batch root are still pending or running ({first}, …); pass --resume to follow them, or stop them (`ray job stop ID`) first"
    )]
    StillRunning { count: usize, first: String },
    /// Anything the library's common error covers (a parse, an index write, a file operation).
    #[error(transparent)]
    Other(#[from] crate::model::error::Error),
}
