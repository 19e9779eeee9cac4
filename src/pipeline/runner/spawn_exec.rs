//! The supervisor starts the command with `posix_spawn`: glibc creates the child with
//! `clone(CLONE_VM | CLONE_VFORK)`, so nothing of the supervisor's address space is copied. The
//! forked supervisor is a copy of polyprof (issue 37): a second `fork` of it copied its page
//! tables and made both processes take copy-on-write faults afterwards, 0.5–0.9 ms per run.
//! The child gets an empty signal mask (the supervisor blocks the signals it waits for) and
//! SIGPIPE at its default (the Rust runtime ignores it; an ignored signal stays ignored across
//! exec), as `std::process::Command` with the supervisor's old `pre_exec` hook did.
//!
//! The program is looked up the way `execvp` does with the command's environment (what std did
//! for a command with an environment of its own): each `PATH` entry in turn, an entry denied
//! (EACCES) remembered while the search goes on, a file without a `#!` line (ENOEXEC) run by
//! `/bin/sh`.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// `execvp`'s search path when the environment has no `PATH` (glibc's `_CS_PATH`).
const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// Start `program args…` as a child of this process with `env` as its environment (None: this
/// process's own). Returns its pid; the error is the one `execvp` would have given.
pub fn spawn_command(
    program: &OsStr,
    args: &[OsString],
    env: Option<&[(OsString, OsString)]>,
) -> io::Result<i32> {
    let env: Vec<(OsString, OsString)> = match env {
        Some(env) => env.to_vec(),
        None => std::env::vars_os().collect(),
    };
    let envp = Words::new(env.iter().map(|(name, value)| {
        let mut pair = name.clone();
        pair.push("=");
        pair.push(value);
        pair
    }))?;
    let argv = Words::new(std::iter::once(program.to_owned()).chain(args.iter().cloned()))?;
    if program.as_bytes().contains(&b'/') {
        return spawn_path(program.as_bytes(), &argv, &envp);
    }
    if program.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    let path = env
        .iter()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value.as_bytes())
        .unwrap_or(DEFAULT_PATH);
    let mut denied = false;
    for dir in path.split(|&b| b == b':') {
        // An empty entry is the current directory, as for execvp.
        let mut candidate = if dir.is_empty() {
            b".".to_vec()
        } else {
            dir.to_vec()
        };
        candidate.push(b'/');
        candidate.extend_from_slice(program.as_bytes());
        // Most entries hold no such file: a stat is cheaper than starting a child to find out.
        if std::fs::metadata(OsStr::from_bytes(&candidate)).is_err() {
            continue;
        }
        match spawn_path(&candidate, &argv, &envp) {
            Ok(pid) => return Ok(pid),
            Err(e) => match e.raw_os_error() {
                Some(libc::EACCES) => denied = true,
                Some(
                    libc::ENOENT | libc::ESTALE | libc::ENOTDIR | libc::ENODEV | libc::ETIMEDOUT,
                ) => {}
                _ => return Err(e),
            },
        }
    }
    Err(io::Error::from_raw_os_error(if denied {
        libc::EACCES
    } else {
        libc::ENOENT
    }))
}

/// `posix_spawn` of the file at `path`; a file the kernel cannot execute (no `#!` line) is run
/// by `/bin/sh`, as `execvp` does.
fn spawn_path(path: &[u8], argv: &Words, envp: &Words) -> io::Result<i32> {
    let file = CString::new(path).map_err(|_| nul_error())?;
    match posix_spawn(&file, argv, envp) {
        Err(e) if e.raw_os_error() == Some(libc::ENOEXEC) => {
            let shell = Words::new(
                [OsString::from("/bin/sh"), OsString::from_vec(path.to_vec())]
                    .into_iter()
                    .chain(
                        argv.words[1..]
                            .iter()
                            .map(|w| OsString::from_vec(w.to_bytes().to_vec())),
                    ),
            )?;
            posix_spawn(&shell.words[0], &shell, envp)
        }
        other => other,
    }
}

/// Owned C strings (nix's `posix_spawn` makes the null-terminated array).
struct Words {
    words: Vec<CString>,
}

impl Words {
    fn new(words: impl Iterator<Item = OsString>) -> io::Result<Words> {
        let words: Vec<CString> = words
            .map(|w| CString::new(w.into_vec()).map_err(|_| nul_error()))
            .collect::<io::Result<_>>()?;
        Ok(Words { words })
    }
}

fn nul_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "an argument or variable holds a NUL byte",
    )
}

/// One `posix_spawn` with an empty signal mask and SIGPIPE at its default.
fn posix_spawn(file: &CString, argv: &Words, envp: &Words) -> io::Result<i32> {
    use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags};
    use nix::sys::signal::{SigSet, Signal};
    let mut attr = PosixSpawnAttr::init()?;
    attr.set_sigmask(&SigSet::empty())?;
    let mut default = SigSet::empty();
    default.add(Signal::SIGPIPE);
    attr.set_sigdefault(&default)?;
    attr.set_flags(
        PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
    )?;
    let actions = PosixSpawnFileActions::init()?;
    let pid = nix::spawn::posix_spawn(file.as_c_str(), &actions, &attr, &argv.words, &envp.words)?;
    Ok(pid.as_raw())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(pid: i32) -> i32 {
        use nix::sys::wait::{WaitStatus, waitpid};
        match waitpid(nix::unistd::Pid::from_raw(pid), None) {
            Ok(WaitStatus::Exited(_, code)) => code,
            other => panic!("{other:?}"),
        }
    }

    fn env_with_path(path: &str) -> Vec<(OsString, OsString)> {
        vec![("PATH".into(), path.into())]
    }

    #[test]
    fn the_program_is_found_on_the_commands_path_not_this_processs() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("only-here");
        std::fs::write(&script, "#!/bin/sh\nexit 7\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("/nonexistent:{}", dir.path().display());
        let pid = spawn_command("only-here".as_ref(), &[], Some(&env_with_path(&path))).unwrap();
        assert_eq!(wait(pid), 7);
        let missing = spawn_command("only-here".as_ref(), &[], Some(&env_with_path("/usr/bin")));
        assert_eq!(missing.unwrap_err().raw_os_error(), Some(libc::ENOENT));
    }

    #[test]
    fn a_script_without_an_interpreter_line_runs_under_sh_and_a_denied_one_is_eacces() {
        let dir = tempfile::tempdir().unwrap();
        use std::os::unix::fs::PermissionsExt;
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "exit \"$1\"\n").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o755)).unwrap();
        let pid = spawn_command(plain.as_os_str(), &["5".into()], None).unwrap();
        assert_eq!(wait(pid), 5);
        let denied = dir.path().join("denied");
        std::fs::write(&denied, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&denied, std::fs::Permissions::from_mode(0o644)).unwrap();
        let path = dir.path().display().to_string();
        let error = spawn_command("denied".as_ref(), &[], Some(&env_with_path(&path)));
        assert_eq!(error.unwrap_err().raw_os_error(), Some(libc::EACCES));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_child_starts_with_no_blocked_signal_and_its_own_environment() {
        // SIGUSR2 blocked on this test thread only; posix_spawn must not pass it on.
        let mut set = nix::sys::signal::SigSet::empty();
        set.add(nix::sys::signal::Signal::SIGUSR2);
        set.thread_block().unwrap();
        let env = vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("POLYPROF_T".into(), "x y".into()),
        ];
        let script =
            "grep -q '^SigBlk:[[:space:]]*0*$' /proc/self/status && [ \"$POLYPROF_T\" = 'x y' ]";
        let pid = spawn_command("sh".as_ref(), &["-c".into(), script.into()], Some(&env)).unwrap();
        assert_eq!(wait(pid), 0);
    }
}
