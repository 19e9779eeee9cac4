//! The supervising process of `polyprof run` as a small binary of its own: the same hidden mode
//! as `polyprof __polyprof-supervise`, but it starts in about the time of `/bin/true` instead of
//! loading the whole CLI (see `pipeline::runner::supervisor`). `polyprof run` uses it when it
//! sits next to the `polyprof` executable. It is also the container watchdog
//! (`pipeline::container::watchdog`), which removes a killed polyprof's containers.

fn main() {
    polyprof::pipeline::runner::supervisor::run_if_requested();
    // `polyprof eval` starts the candidate's workers through this binary's sandbox launcher.
    polyprof::pipeline::sandbox::run_if_requested();
    polyprof::pipeline::container::watchdog::run_if_requested();
    eprintln!("polyprof-supervise is started by `polyprof run`; it is not meant to be run by hand");
    std::process::exit(2);
}
