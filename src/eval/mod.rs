//! Kernel evaluation, the pure half: what an eval records ([`evidence`]), what it concludes
//! ([`verdict`]) and the audit that turns one into the other ([`audit`]). Nothing here runs a
//! process or knows a vendor; the harness that gathers the evidence is `pipeline::eval`.

pub mod array_floor;
pub mod audit;
pub mod calls;
pub mod candidate_match;
pub mod ci_case;
pub mod counter_trust;
pub mod device_peaks;
pub mod drift;
pub mod evidence;
pub mod evidence_read;
#[cfg(test)]
mod h200_captures;
pub mod precision;
pub mod required_checks;
pub mod rules;
pub mod sample_scoring;
pub mod schema;
pub mod source_scan;
pub mod speedup;
#[cfg(test)]
pub(crate) mod test_support;
pub mod timeline;
pub mod timeline_checks;
pub mod timeline_facts;
pub mod timing;
pub mod verdict;
pub mod witness;
pub mod witness_summary;
#[cfg(test)]
mod work_captures;
pub mod work_match;
pub mod work_pass;

pub use audit::judge;
pub use evidence::EvalEvidence;
pub use verdict::EvalVerdict;
