//! One run directory, one run: `polyprof run --output-dir D` claims D (creates it, takes its
//! lock) before the command starts, so concurrent runs on one D leave exactly one run and
//! every other fails before running anything; documents are written without following a
//! planted symlink; an unusable D (a file, a dangling symlink, read-only) is named.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::assert_exit;

fn run_into(dir: &Path, script: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_polyprof"));
    command
        .args(["run", "-q", "--output-dir"])
        .arg(dir)
        .args(["--", "sh", "-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn eight_concurrent_runs_on_one_directory_leave_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("D");
    let ledger = tmp.path().join("ledger");
    let script = format!("echo $$ >> '{}'; echo run-$$; sleep 1", ledger.display());
    let children: Vec<_> = (0..8)
        .map(|_| run_into(&dir, &script).spawn().unwrap())
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let winners: Vec<&Output> = outs.iter().filter(|o| o.status.success()).collect();
    assert_eq!(winners.len(), 1, "exactly one run succeeds");
    let started = std::fs::read_to_string(&ledger).unwrap();
    assert_eq!(started.lines().count(), 1, "one command ran: {started}");
    for loser in outs.iter().filter(|o| !o.status.success()) {
        let text = stderr(loser);
        assert!(
            // The holder's line may not be written yet when a loser looks ("another polyprof
            // process"); either way the loser names the directory as taken.
            text.contains("is in use by") || text.contains("already holds a run"),
            "{text}"
        );
    }
    // The run document and the log on disk are the one run's.
    let run = polyprof::model::run::ProfileRun::read(&dir).unwrap();
    assert_eq!(run.output_dir, dir);
    let pid = started.trim();
    let log: String = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".stdout.log"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(log.trim(), format!("run-{pid}"));
}

#[test]
fn a_symlink_planted_as_the_temporary_run_document_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("D");
    std::fs::create_dir(&dir).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join(".run.json.tmp")).unwrap();
    let out = run_into(&dir, "true").output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let meta = std::fs::symlink_metadata(dir.join("run.json")).unwrap();
    assert!(meta.is_file(), "run.json is a plain file: {meta:?}");
}

#[test]
fn a_file_or_a_dangling_symlink_as_the_output_directory_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("ran");
    let script = format!("touch '{}'", marker.display());
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = run_into(&file, &script).output().unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is a file, not a directory"),
        "{}",
        stderr(&out)
    );
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(tmp.path().join("gone"), &link).unwrap();
    let out = run_into(&link, &script).output().unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("which does not exist"),
        "{}",
        stderr(&out)
    );
    assert!(!marker.exists(), "the command never ran");
}

#[test]
fn a_read_only_output_directory_fails_before_the_command_runs() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = tmp.path().join("D");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let open = tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = open.join("ran");
    let mut command = run_into(&dir, &format!("touch '{}'", marker.display()));
    // Root writes anywhere: run polyprof as `nobody`, for whom D is read-only.
    if unsafe { libc::geteuid() } == 0 {
        use std::os::unix::process::CommandExt;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(65534) != 0
                    || libc::setuid(65534) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = command.output().unwrap();
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("must be writable"),
        "{}",
        stderr(&out)
    );
    assert!(!marker.exists(), "the command never ran");
}

/// run.json's crash safety with one fsync per run (issue 37, docs/runner.md "Crash safety"):
/// the temporary document's data is fsynced before it is renamed to run.json (a crash never
/// leaves a partial or empty run.json), and no second fsync (of the directory) follows on the
/// run's path. Seen through `strace`; SKIPPED where strace cannot run.
#[test]
fn run_json_is_fsynced_once_before_its_rename() {
    let test = "runner_rundir_claim::run_json_is_fsynced_once_before_its_rename";
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("D");
    let trace = tmp.path().join("trace");
    let out = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=openat,fsync,fdatasync,rename,renameat,renameat2",
        ])
        .arg("-o")
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_polyprof"))
        .args(["run", "-q", "--output-dir"])
        .arg(&dir)
        .args(["--", "true"])
        .output();
    let out = match out {
        Ok(out) if out.status.success() && trace.exists() => out,
        Ok(out) => {
            return crate::support::skip(
                test,
                &format!("strace cannot trace here: {}", stderr(&out).trim()),
            );
        }
        Err(e) => return crate::support::skip(test, &format!("no strace ({e})")),
    };
    assert!(dir.join("run.json").is_file(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The temporary document's descriptor: `openat(…, ".../.run.json.XXXX.tmp", …) = FD`.
    let (open_at, fd) = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("openat(") && l.contains("/.run.json.") && l.contains(".tmp\""))
        .find_map(|(i, l)| Some((i, l.rsplit("= ").next()?.trim().parse::<i32>().ok()?)))
        .unwrap_or_else(|| panic!("no temporary run.json opened:\n{text}"));
    let rename_at = lines
        .iter()
        .position(|l| l.contains("rename") && l.contains("/run.json\""))
        .unwrap_or_else(|| panic!("run.json not renamed into place:\n{text}"));
    let data_sync = lines[open_at..rename_at]
        .iter()
        .filter(|l| l.contains(&format!("fsync({fd})")) || l.contains(&format!("fdatasync({fd})")))
        .count();
    assert_eq!(
        data_sync, 1,
        "the data is synced before the rename:\n{text}"
    );
    let syncs = lines.iter().filter(|l| l.contains("sync(")).count();
    assert_eq!(syncs, 1, "one fsync per run:\n{text}");
}
