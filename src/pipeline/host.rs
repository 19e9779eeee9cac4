//! Facts about this host that runs record (container labels, batch entries).

/// This host's name (`gethostname`); `None` when the system gives none or it is empty.
pub fn hostname() -> Option<String> {
    nix::unistd::gethostname()
        .ok()
        .map(|name| name.to_string_lossy().trim().to_string())
        .filter(|name| !name.is_empty())
}
