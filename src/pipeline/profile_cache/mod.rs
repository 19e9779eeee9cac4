//! The profile cache: one file per key under a locked directory, written atomically.

pub mod options;

pub use options::ProfileCacheOptions;
