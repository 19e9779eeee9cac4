//! The release wheel on a cluster node's older userland: its executables run `polyprof doctor`
//! in a chroot of a glibc-2.28-era release (Debian buster, else Ubuntu bionic's 2.27; built by
//! scripts/old-userland.sh with debootstrap, cached under target/tmp/old-userland), and the
//! old dynamic loader resolves every library and glibc symbol version the extension module
//! needs. The chroot has no Python >= 3.9 (buster's is 3.7), so the extension is not imported
//! there; scripts/check-wheel.py checks its symbol versions against the tag as well.
//!
//! The wheel is `$POLYPROF_TEST_WHEEL` (.ci/run builds the release wheel before the tests and
//! sets it); without it, root or debootstrap, the test says SKIPPED (under CI: fails).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{script, skip};

const TEST: &str = "wheel_old_glibc::the_release_wheel_runs_doctor_in_an_old_glibc_userland";

/// The chroot's root and its glibc version, built once (scripts/old-userland.sh).
fn userland() -> Result<(PathBuf, String), String> {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    let cache = target.join("tmp/old-userland");
    let out = Command::new(script("old-userland.sh"))
        .arg(&cache)
        .output()
        .map_err(|e| format!("scripts/old-userland.sh cannot run: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout.trim().rsplit_once(' ') {
        Some((root, glibc)) if out.status.success() => Ok((root.into(), glibc.to_string())),
        _ => Err(format!(
            "scripts/old-userland.sh could not build the chroot: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// `chroot ROOT ARGS…`: exit status, stdout and stderr.
fn in_chroot(root: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new("chroot")
        .arg(root)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_release_wheel_runs_doctor_in_an_old_glibc_userland() {
    let Some(wheel) = std::env::var_os("POLYPROF_TEST_WHEEL").filter(|w| !w.is_empty()) else {
        skip(
            TEST,
            "POLYPROF_TEST_WHEEL is not set (python/build-wheel.sh --release builds the wheel; \
             .ci/run sets it)",
        );
        return;
    };
    // SAFETY: geteuid only reads the process's credentials.
    if unsafe { libc::geteuid() } != 0 {
        skip(TEST, "chroot needs root");
        return;
    }
    let (root, glibc) = match userland() {
        Ok(found) => found,
        Err(why) => {
            skip(TEST, &why);
            return;
        }
    };
    let glibc_minor: u32 = glibc
        .strip_prefix("2.")
        .and_then(|m| m.parse().ok())
        .unwrap_or(u32::MAX);
    assert!(
        glibc_minor <= 28,
        "the chroot's glibc is {glibc}: not old enough to prove anything"
    );
    // A fresh copy of the wheel's files each time (a wheel is a zip file).
    let unpacked = root.join("opt/polyprof-wheel");
    let _ = std::fs::remove_dir_all(&unpacked);
    std::fs::create_dir_all(&unpacked).unwrap();
    let out = Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&unpacked)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cannot unpack {}: {}",
        Path::new(&wheel).display(),
        String::from_utf8_lossy(&out.stderr)
    );
    for exe in ["polyprof", "polyprof-supervise"] {
        use std::os::unix::fs::PermissionsExt;
        let path = unpacked.join("polyprof/bin").join(exe);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    let polyprof = "/opt/polyprof-wheel/polyprof/bin/polyprof";
    let (code, stdout, stderr) = in_chroot(&root, &[polyprof, "--version"]);
    assert_eq!(
        code,
        Some(0),
        "polyprof --version on glibc {glibc}:\n{stdout}{stderr}"
    );
    let (code, stdout, stderr) = in_chroot(&root, &[polyprof, "doctor"]);
    assert_eq!(
        code,
        Some(0),
        "polyprof doctor on glibc {glibc}:\n{stdout}{stderr}"
    );
    assert!(
        stdout.contains("the built-in `none` always can"),
        "{stdout}{stderr}"
    );
    // The supervisor runs (it prints its usage and exits non-zero without arguments; a
    // missing glibc symbol version would stop it in the loader instead).
    let (_, stdout, stderr) = in_chroot(
        &root,
        &["/opt/polyprof-wheel/polyprof/bin/polyprof-supervise"],
    );
    assert!(
        !stderr.contains("GLIBC_") && !stderr.contains("not found"),
        "polyprof-supervise on glibc {glibc}:\n{stdout}{stderr}"
    );
    // The extension module: the old loader resolves its libraries and their symbol versions
    // (`ld.so --list`, what ldd does; Python's own symbols come from the interpreter).
    let extension = std::fs::read_dir(unpacked.join("polyprof"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|name| name.starts_with("_native") && name.ends_with(".so"))
        .expect("the wheel has the extension module polyprof/_native*.so");
    let (code, stdout, stderr) = in_chroot(
        &root,
        &[
            "/lib64/ld-linux-x86-64.so.2",
            "--list",
            &format!("/opt/polyprof-wheel/polyprof/{extension}"),
        ],
    );
    assert!(
        code == Some(0) && !stdout.contains("not found") && !stderr.contains("not found"),
        "{extension} on glibc {glibc}:\n{stdout}{stderr}"
    );
    eprintln!("{TEST}: polyprof doctor ran and {extension} resolved on glibc {glibc}");
}

/// A wheel (zip file) at `path` holding the WHEEL file with `tag` and this host's `/bin/true`
/// as `polyprof/bin/polyprof` (it needs the host's glibc, 2.34 or later on a current distro).
fn wheel_with(path: &Path, tag: &str) {
    let program = "import sys, zipfile\n\
                   with zipfile.ZipFile(sys.argv[1], 'w') as w:\n\
                   \x20   w.writestr('polyprof-0.1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nTag: ' + sys.argv[2] + '\\n')\n\
                   \x20   w.writestr('polyprof-0.1.0.dist-info/METADATA', 'Name: polyprof\\n')\n\
                   \x20   w.write('/bin/true', 'polyprof/bin/polyprof')\n";
    let out = Command::new("python3")
        .args(["-c", program])
        .arg(path)
        .arg(tag)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn check_wheel_fails_a_wheel_whose_files_need_a_newer_glibc_than_its_tag() {
    let test =
        "wheel_old_glibc::check_wheel_fails_a_wheel_whose_files_need_a_newer_glibc_than_its_tag";
    if !Path::new("/bin/true").is_file() || cfg!(not(target_os = "linux")) {
        skip(test, "needs Linux's /bin/true as an ELF file to pack");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let check = |tag: &str, extra: &[&str]| {
        let wheel = dir
            .path()
            .join(format!("polyprof-0.1.0-cp39-abi3-{tag}.whl"));
        wheel_with(&wheel, &format!("cp39-abi3-{tag}"));
        let out = Command::new("python3")
            .arg(script("check-wheel.py"))
            .arg(&wheel)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "the stub wheel lacks the README, licenses…"
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // This host's /bin/true needs a glibc newer than 2.17 (GLIBC_2.34's __libc_start_main).
    let old = check("manylinux_2_17_x86_64.manylinux2014_x86_64", &[]);
    assert!(
        old.contains("polyprof/bin/polyprof needs GLIBC_2.")
            && old.contains("above the tag's glibc 2.17"),
        "{old}"
    );
    let new = check("manylinux_2_99_x86_64", &["--max-glibc", "2.28"]);
    assert!(!new.contains("above the tag's glibc"), "{new}");
    assert!(
        new.contains("tagged manylinux_2_99_x86_64: needs glibc 2.99, more than 2.28"),
        "{new}"
    );
    let plain = check("linux_x86_64", &[]);
    assert!(
        plain.contains("tagged linux_x86_64: not manylinux"),
        "{plain}"
    );
}
