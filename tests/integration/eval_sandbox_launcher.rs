//! The sandbox launcher on its own (`polyprof-supervise __polyprof-sandbox`): with
//! `--write-own-proc` the command may write its own `/proc/<pid>` entries (what NVIDIA's driver
//! library needs to initialise CUDA), and nothing else of `/proc`; without it, not even that.

use std::process::Command;

use crate::support::{skip, this_test};

fn sandboxed(own_proc: bool, script: &str) -> std::process::Output {
    let abi = polyprof::pipeline::sandbox::landlock_abi().unwrap_or(0);
    let mut command = Command::new(env!("CARGO_BIN_EXE_polyprof-supervise"));
    command.args([
        "__polyprof-sandbox",
        "--abi",
        &abi.to_string(),
        "--read",
        "/",
    ]);
    if own_proc {
        command.arg("--write-own-proc");
    }
    command.args(["--", "sh", "-c", script]);
    command.output().unwrap()
}

#[test]
fn a_confined_command_writes_its_own_proc_entries_only_when_allowed() {
    if polyprof::pipeline::sandbox::landlock_abi().is_none() {
        return skip(&this_test(), "this kernel has no Landlock");
    }
    // `exec` keeps the pid, so /proc/self of the command is the launcher's /proc/<pid>.
    let own = "exec sh -c 'echo renamed > /proc/$$/comm && cat /proc/$$/comm'";
    let allowed = sandboxed(true, own);
    assert!(allowed.status.success(), "{allowed:?}");
    assert_eq!(String::from_utf8_lossy(&allowed.stdout).trim(), "renamed");

    let denied = sandboxed(false, own);
    assert!(!denied.status.success(), "{denied:?}");
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("ermission denied"),
        "{denied:?}"
    );

    // Another process's entries stay read-only: a child has its own pid, outside the rule.
    let child = sandboxed(true, "sh -c 'echo renamed > /proc/$$/comm'");
    assert!(!child.status.success(), "{child:?}");
}
