//! Kernel evaluation, the pure half: what an eval records ([`evidence`]), what it concludes
//! ([`verdict`]) and the audit that turns one into the other ([`audit`]). Nothing here runs a
//! process or knows a vendor; the harness that gathers the evidence is `pipeline::eval`.

pub mod audit;
pub mod evidence;
pub mod source_scan;
pub mod verdict;
pub mod witness;

pub use audit::judge;
pub use evidence::EvalEvidence;
pub use verdict::EvalVerdict;
