//! A sandbox launcher step: `polyprof-supervise __polyprof-sandbox [rules] -- COMMAND…` sets
//! resource limits, restricts itself with Landlock (filesystem beneath the given paths only,
//! no TCP bind or connect, no signals to and no abstract Unix sockets of processes outside its
//! own domain), then executes COMMAND, which inherits all of it, as does everything it starts.
//! Unprivileged: Landlock needs no capability, only `no_new_privs` (set by the crate).
//!
//! It knows nothing of what it runs; the caller says what may be read and written. The rules
//! are enforced as a hard requirement at the ABI the caller names (probed with
//! [`landlock_abi`] beforehand): a kernel that cannot enforce them all makes the launcher exit
//! with [`EXIT_SANDBOX_FAILED`] before COMMAND starts, so a recorded confinement is one that
//! held.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

/// `argv[1]` that selects the launcher.
pub const HIDDEN_MODE: &str = "__polyprof-sandbox";
/// The launcher's exit status when it could not confine itself (COMMAND never ran).
pub const EXIT_SANDBOX_FAILED: i32 = 125;
/// The first ABI that confines TCP (bind, connect).
const NETWORK_ABI: u32 = 4;
/// The first ABI that scopes signals and abstract Unix sockets to the domain.
const SCOPE_ABI: u32 = 6;

/// Resource limits set before COMMAND starts (soft = hard, so it cannot raise them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// `RLIMIT_AS`: the address space, bytes.
    pub address_space: Option<u64>,
    /// `RLIMIT_CPU`: CPU seconds over all threads (SIGXCPU, then SIGKILL).
    pub cpu_seconds: Option<u64>,
    /// `RLIMIT_FSIZE`: the largest file it may write, bytes.
    pub file_size: Option<u64>,
}

impl Limits {
    /// The limits by name, as recorded in evidence.
    pub fn named(&self) -> Vec<(&'static str, u64)> {
        [
            ("address_space_bytes", self.address_space),
            ("cpu_seconds", self.cpu_seconds),
            ("file_size_bytes", self.file_size),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
        .collect()
    }
}

/// What the launcher enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// Landlock's ABI to enforce at (from [`landlock_abi`]).
    pub abi: u32,
    /// Readable (and executable) beneath these; paths that do not exist are left out.
    pub read: Vec<PathBuf>,
    /// Readable and writable beneath these.
    pub write: Vec<PathBuf>,
    pub limits: Limits,
    /// Leave TCP, signals and abstract Unix sockets unconfined (the filesystem and the limits
    /// still hold): for a command a profiler has injected itself into, whose library talks to
    /// the profiler's own process (ncu's target and host connect over TCP on localhost).
    pub profiler_ipc: bool,
    /// Also writable: the command's own `/proc/<pid>` (the launcher's pid, which the command
    /// keeps across the exec; its threads' entries are beneath it). NVIDIA's driver library
    /// fails `cuInit` with "OS call failed" (CUDA error 304) when it cannot write there: seen on
    /// an H100, 2026-12-06. A process's own entries give it nothing it does not already have.
    pub own_proc: bool,
}

impl Confinement {
    /// What this ABI confines, by name: `filesystem`, `network`, `signals`,
    /// `abstract_unix_sockets`.
    pub fn confines(&self) -> Vec<&'static str> {
        let mut confines = vec!["filesystem"];
        if self.profiler_ipc {
            return confines;
        }
        if self.abi >= NETWORK_ABI {
            confines.push("network");
        }
        if self.abi >= SCOPE_ABI {
            confines.extend(["signals", "abstract_unix_sockets"]);
        }
        confines
    }
}

/// The running kernel's Landlock ABI version; `None` when it has no Landlock (or it is
/// disabled at boot).
#[cfg(not(target_os = "linux"))]
pub fn landlock_abi() -> Option<u32> {
    None
}

/// The running kernel's Landlock ABI version; `None` when it has no Landlock (or it is
/// disabled at boot).
#[cfg(target_os = "linux")]
pub fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with the VERSION flag the call reads no memory (null attributes, size 0).
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).ok().filter(|&v| v > 0)
}

/// The argv that runs `command` under `confinement`, launched by `exe` (a binary whose `main`
/// calls [`run_if_requested`] first: `polyprof`, `polyprof-supervise`).
pub fn wrap_argv(
    exe: &std::path::Path,
    confinement: &Confinement,
    command: &[OsString],
) -> Vec<OsString> {
    let mut argv = vec![
        exe.as_os_str().to_owned(),
        HIDDEN_MODE.into(),
        "--abi".into(),
        confinement.abi.to_string().into(),
    ];
    for path in &confinement.read {
        argv.extend(["--read".into(), path.as_os_str().to_owned()]);
    }
    for path in &confinement.write {
        argv.extend(["--write".into(), path.as_os_str().to_owned()]);
    }
    for (flag, value) in [
        ("--address-space", confinement.limits.address_space),
        ("--cpu-seconds", confinement.limits.cpu_seconds),
        ("--file-size", confinement.limits.file_size),
    ] {
        if let Some(value) = value {
            argv.extend([flag.into(), value.to_string().into()]);
        }
    }
    if confinement.profiler_ipc {
        argv.push("--profiler-ipc".into());
    }
    if confinement.own_proc {
        argv.push("--write-own-proc".into());
    }
    argv.push("--".into());
    argv.extend(command.iter().cloned());
    argv
}

/// Parse the launcher's arguments (after the hidden mode): the confinement and COMMAND.
fn parse(args: &[OsString]) -> Result<(Confinement, Vec<OsString>), String> {
    let mut confinement = Confinement {
        abi: 0,
        read: Vec::new(),
        write: Vec::new(),
        limits: Limits::default(),
        profiler_ipc: false,
        own_proc: false,
    };
    let mut rest = args.iter();
    let number = |value: Option<&OsString>, flag: &str| -> Result<u64, String> {
        value
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{flag} needs a number"))
    };
    loop {
        let Some(flag) = rest.next() else {
            return Err("no `--` before the command".to_string());
        };
        match flag.to_str() {
            Some("--") => break,
            Some("--abi") => {
                confinement.abi = u32::try_from(number(rest.next(), "--abi")?)
                    .map_err(|_| "--abi is too large".to_string())?;
            }
            Some("--read") => confinement.read.push(path(rest.next(), "--read")?),
            Some("--write") => confinement.write.push(path(rest.next(), "--write")?),
            Some("--address-space") => {
                confinement.limits.address_space = Some(number(rest.next(), "--address-space")?);
            }
            Some("--cpu-seconds") => {
                confinement.limits.cpu_seconds = Some(number(rest.next(), "--cpu-seconds")?);
            }
            Some("--file-size") => {
                confinement.limits.file_size = Some(number(rest.next(), "--file-size")?);
            }
            Some("--profiler-ipc") => confinement.profiler_ipc = true,
            Some("--write-own-proc") => confinement.own_proc = true,
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    let command: Vec<OsString> = rest.cloned().collect();
    if command.is_empty() {
        return Err("no command after `--`".to_string());
    }
    if confinement.abi == 0 {
        return Err("--abi is required".to_string());
    }
    Ok((confinement, command))
}

fn path(value: Option<&OsString>, flag: &str) -> Result<PathBuf, String> {
    value
        .map(PathBuf::from)
        .ok_or_else(|| format!("{flag} needs a path"))
}

/// If this process was started as the launcher, confine itself and execute the command (never
/// returns); otherwise return. Call it first thing in `main`.
pub fn run_if_requested() {
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() != Some(OsStr::new(HIDDEN_MODE)) {
        return;
    }
    let rest: Vec<OsString> = args.collect();
    let error = match parse(&rest) {
        Ok((confinement, command)) => match confine(&confinement) {
            Ok(()) => {
                let error = std::process::Command::new(&command[0])
                    .args(&command[1..])
                    .exec();
                format!("cannot execute {:?}: {error}", command[0])
            }
            Err(why) => format!("cannot confine the command: {why}"),
        },
        Err(why) => why,
    };
    eprintln!("polyprof sandbox: {error}");
    std::process::exit(EXIT_SANDBOX_FAILED);
}

/// Landlock is a Linux interface: elsewhere nothing can be confined (the eval says so, since
/// `landlock_abi` is `None` there and no launcher is asked for).
#[cfg(not(target_os = "linux"))]
fn confine(_confinement: &Confinement) -> Result<(), String> {
    Err("Landlock exists on Linux only".to_string())
}

/// Set the limits, then restrict this process with Landlock at `confinement.abi`, every right
/// of that ABI handled (so denied unless a rule grants it), as a hard requirement.
#[cfg(target_os = "linux")]
fn confine(confinement: &Confinement) -> Result<(), String> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
    };
    set_limits(&confinement.limits)?;
    let mut write = confinement.write.clone();
    if confinement.own_proc {
        // This pid is the command's after the exec below.
        write.push(PathBuf::from(format!("/proc/{}", std::process::id())));
    }
    let abi = ABI::from(i32::try_from(confinement.abi).map_err(|e| e.to_string())?);
    let text = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(text)?;
    if confinement.abi >= NETWORK_ABI && !confinement.profiler_ipc {
        // No rule allows a port: every TCP bind and connect is refused.
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(text)?;
    }
    if confinement.abi >= SCOPE_ABI && !confinement.profiler_ipc {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(text)?;
    }
    let status = ruleset
        .create()
        .map_err(text)?
        .add_rules(path_beneath_rules(
            &confinement.read,
            AccessFs::from_read(abi),
        ))
        .map_err(text)?
        .add_rules(path_beneath_rules(&write, AccessFs::from_all(abi)))
        .map_err(text)?
        .restrict_self()
        .map_err(text)?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(format!(
            "Landlock ABI {} is not fully enforced by this kernel ({:?})",
            confinement.abi, status.ruleset
        ));
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn set_limits(limits: &Limits) -> Result<(), String> {
    let pairs = [
        (libc::RLIMIT_AS, limits.address_space, "address space"),
        (libc::RLIMIT_CPU, limits.cpu_seconds, "CPU time"),
        (libc::RLIMIT_FSIZE, limits.file_size, "file size"),
        (libc::RLIMIT_CORE, Some(0), "core size"),
    ];
    for (resource, value, what) in pairs {
        let Some(value) = value else { continue };
        let limit = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        // SAFETY: a plain struct passed by pointer, read by the kernel only.
        if unsafe { libc::setrlimit(resource, &limit) } != 0 {
            return Err(format!(
                "cannot limit the {what} to {value}: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argv_round_trips_through_the_parser() {
        let confinement = Confinement {
            abi: 7,
            read: vec!["/usr".into(), "/p/cand dir".into()],
            write: vec!["/tmp/scratch".into()],
            limits: Limits {
                address_space: Some(1 << 30),
                cpu_seconds: Some(600),
                file_size: None,
            },
            profiler_ipc: false,
            own_proc: true,
        };
        let command: Vec<OsString> = vec!["python3".into(), "-I".into(), "--".into()];
        let argv = wrap_argv(std::path::Path::new("/bin/pp"), &confinement, &command);
        assert_eq!(argv[1], HIDDEN_MODE);
        let (parsed, rest) = parse(&argv[2..]).unwrap();
        assert_eq!(parsed, confinement);
        assert_eq!(rest, command);
        assert_eq!(
            confinement.confines(),
            ["filesystem", "network", "signals", "abstract_unix_sockets"]
        );
        assert!(parse(&["--abi".into(), "7".into()]).is_err());
        assert!(
            parse(&["--".into(), "x".into()])
                .unwrap_err()
                .contains("--abi")
        );
    }

    #[test]
    fn under_a_profiler_only_the_filesystem_and_the_limits_are_confined() {
        let confinement = Confinement {
            abi: 7,
            read: vec!["/usr".into()],
            write: vec!["/tmp/scratch".into()],
            limits: Limits::default(),
            profiler_ipc: true,
            own_proc: false,
        };
        let command: Vec<OsString> = vec!["python3".into()];
        let argv = wrap_argv(std::path::Path::new("/bin/pp"), &confinement, &command);
        assert!(argv.iter().any(|a| a == "--profiler-ipc"));
        let (parsed, _) = parse(&argv[2..]).unwrap();
        assert_eq!(parsed, confinement);
        assert_eq!(confinement.confines(), ["filesystem"]);
    }
}
