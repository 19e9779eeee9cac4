//! A program a capability or a device tool needs on PATH, and what to tell a user who lacks it.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// The executable's name, looked up on PATH.
    pub program: &'static str,
    /// What it stands for in a "missing" list (`an NVIDIA GPU`, `nvcc`).
    pub what: &'static str,
    /// Why it matters and how to get it.
    pub missing: &'static str,
}
