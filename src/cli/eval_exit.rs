//! The exit statuses of `polyprof eval`, one candidate or a directory of them.

/// The candidate passed: correct, and no finding.
pub const EXIT_PASSED: u8 = 0;
/// The candidate was judged and did not pass (incorrect, a finding, or it failed).
pub const EXIT_NOT_PASSED: u8 = 1;
/// The eval itself could not run (bad paths, no Python, the reference broken).
pub const EXIT_EVAL_FAILED: u8 = 2;
