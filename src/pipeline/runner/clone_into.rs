//! Start the command directly inside the run's cgroup with `clone3(CLONE_INTO_CGROUP)` (Linux
//! 5.7+). Moving a running process into a cgroup (`cgroup.procs`) waits for an RCU grace period,
//! which took about 10 ms per run on a busy machine; a process created inside the cgroup needs
//! no move. Used by the single-threaded supervisor only: the child of `clone3` without
//! `CLONE_VM` is a plain fork of it, so it may do what the supervisor does until `execvp`.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// `CLONE_INTO_CGROUP` from linux/sched.h (the libc crate types it as a 32-bit int).
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// `struct clone_args` of linux/sched.h, up to `cgroup` (`CLONE_ARGS_SIZE_VER2`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// How the start went.
#[derive(Debug)]
pub enum Started {
    /// The command runs (its pid), inside the cgroup.
    Running(i32),
    /// `execvp` failed in the child (which has exited and been reaped).
    ExecFailed(io::Error),
    /// This kernel or sandbox has no `clone3` with `CLONE_INTO_CGROUP` (ENOSYS under Docker's
    /// default seccomp profile, EINVAL before 5.7, EPERM, …): start it another way.
    Unsupported,
}

/// Start `program args…` inside the cgroup whose directory is open as `cgroup`, with an empty
/// signal mask and SIGPIPE at its default (the Rust runtime ignores it; an ignored signal stays
/// ignored across exec).
/// `env`: the command's complete environment, when it is not this process's own (a forked
/// supervisor's).
pub fn spawn_in_cgroup(
    program: &OsString,
    args: &[OsString],
    env: Option<&[(OsString, OsString)]>,
    cgroup: &OwnedFd,
) -> io::Result<Started> {
    let cstring = |word: &OsString| {
        CString::new(word.as_bytes()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "an argument holds a NUL byte")
        })
    };
    let words: Vec<CString> = std::iter::once(program)
        .chain(args)
        .map(cstring)
        .collect::<io::Result<_>>()?;
    let mut pointers: Vec<*const libc::c_char> = words.iter().map(|w| w.as_ptr()).collect();
    pointers.push(std::ptr::null());
    let env_words: Option<Vec<CString>> = env
        .map(|env| {
            env.iter()
                .map(|(name, value)| {
                    let mut pair = name.clone();
                    pair.push("=");
                    pair.push(value);
                    cstring(&pair)
                })
                .collect::<io::Result<_>>()
        })
        .transpose()?;
    let env_pointers: Option<Vec<*const libc::c_char>> = env_words.as_ref().map(|words| {
        words
            .iter()
            .map(|w| w.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    });
    // Reports the child's exec failure: closed on a successful exec, errno written otherwise.
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors, which are owned from here on.
    let (read, write) = unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    };
    let mut clone_args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup.as_raw_fd() as u64,
        ..CloneArgs::default()
    };
    // SAFETY: clone3 with a valid, fully initialised argument struct of the size passed. In the
    // child (a fork of this single-threaded process) only signal-mask calls, execvp, write and
    // _exit run, on memory prepared above.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &mut clone_args as *mut CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if pid == 0 {
        // SAFETY: see above; this branch never returns.
        unsafe {
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            match &env_pointers {
                Some(envp) => libc::execvpe(pointers[0], pointers.as_ptr(), envp.as_ptr()),
                None => libc::execvp(pointers[0], pointers.as_ptr()),
            };
            let errno = *libc::__errno_location();
            libc::write(
                write.as_raw_fd(),
                (&errno as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>(),
            );
            libc::_exit(127);
        }
    }
    if pid < 0 {
        let error = io::Error::last_os_error();
        return match error.raw_os_error() {
            Some(libc::ENOSYS | libc::EINVAL | libc::EPERM | libc::E2BIG | libc::EOPNOTSUPP) => {
                Ok(Started::Unsupported)
            }
            _ => Err(error),
        };
    }
    drop(write);
    let mut errno = [0u8; std::mem::size_of::<libc::c_int>()];
    let mut got = 0;
    while got < errno.len() {
        // SAFETY: read into the rest of a local buffer.
        let n = unsafe {
            libc::read(
                read.as_raw_fd(),
                errno[got..].as_mut_ptr().cast(),
                errno.len() - got,
            )
        };
        match n {
            0 => break,
            n if n > 0 => got += n as usize,
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            _ => break,
        }
    }
    if got < errno.len() {
        return Ok(Started::Running(pid as i32));
    }
    // The child has exited with 127: reap it here, it never was the command.
    let mut status = 0;
    // SAFETY: waitpid on our own child.
    unsafe {
        libc::waitpid(pid as libc::pid_t, &mut status, 0);
    }
    Ok(Started::ExecFailed(io::Error::from_raw_os_error(
        libc::c_int::from_ne_bytes(errno),
    )))
}
