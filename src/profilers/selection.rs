//! Profiler selection (to be written).
