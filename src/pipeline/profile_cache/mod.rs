//! The profile cache: one file per key under a locked directory, written atomically.

pub mod error;
pub mod options;
pub mod store;

pub use error::ProfileCacheError;
pub use options::ProfileCacheOptions;
pub use store::{CacheStats, EntrySummary, Lookup, ProfileCache};
