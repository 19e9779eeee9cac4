//! The fingerprint capability: key every kernel launch of a run without profiling it. The
//! backend's injection library logs each launch and saves the code images; the backend reads
//! the logs back into launches with their fingerprints (what the profile cache is keyed by).

use crate::model::profile_cache::ProcessLaunches;

use super::injection::InjectionLibrary;

pub trait FingerprintCapability: Send + Sync {
    /// The library the pass loads into the target.
    fn library(&self) -> &'static InjectionLibrary;

    /// Whether `file_name`, written by the library into the pass's folder, is a process's
    /// launch log.
    fn is_launch_log(&self, file_name: &str) -> bool;

    /// One process's launch log read into its launches. `image` reads an image the library
    /// saved, by the plain file name the log gives (`None`: missing or unreadable). `Err`: the
    /// file is not the library's log.
    fn read_launch_log(
        &self,
        text: &str,
        image: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
    ) -> Result<ProcessLaunches, String>;
}
