//! `polyprof completions SHELL` and `polyprof man` through the real binary: bash completes
//! subcommands and flags with the generated script, groff renders the pages.

use std::process::Command;

use crate::support::{assert_exit, polyprof};

/// What bash's completion of `words` (the last one being typed) offers with the script.
fn bash_completes(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let words_text = words
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let program = format!(
        "source '{}'; COMP_WORDS=({words_text}); COMP_CWORD={}; COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}; \
         _polyprof polyprof '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        words.len() - 1,
        words.join(" "),
        words[words.len() - 1],
        words[words.len().saturating_sub(2)],
    );
    let out = Command::new("bash")
        .args(["-c", &program])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn bash_completes_subcommands_and_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    let out = polyprof().args(["completions", "bash"]).output().unwrap();
    assert_exit(&out, 0);
    let script = dir.path().join("polyprof.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let offered = bash_completes(&script, &["polyprof", "di"]);
    assert_eq!(offered, ["diff"], "{offered:?}");
    let offered = bash_completes(&script, &["polyprof", "diff", "--ju"]);
    assert_eq!(offered, ["--junit"], "{offered:?}");
    let offered = bash_completes(&script, &["polyprof", "completions", "fi"]);
    assert_eq!(offered, ["fish"], "{offered:?}");
}

#[test]
fn zsh_and_fish_scripts_name_every_subcommand() {
    for (shell, head) in [
        ("zsh", "#compdef polyprof"),
        ("fish", "complete -c polyprof"),
    ] {
        let out = polyprof().args(["completions", shell]).output().unwrap();
        assert_exit(&out, 0);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(head),
            "{shell}: {}",
            &text[..text.len().min(300)]
        );
        for sub in ["diff", "batch", "eval", "config", "man"] {
            assert!(text.contains(sub), "{shell} script lacks {sub}");
        }
    }
    let out = polyprof().args(["completions", "tcsh"]).output().unwrap();
    assert_exit(&out, 2);
}

/// The page rendered by groff as text (`-k`: UTF-8 input, as `man` reads pages), or `None` when
/// groff is missing.
fn groff(page: &[u8]) -> Option<String> {
    use std::io::Write;
    let mut child = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-P", "-cbou"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| {
            crate::support::record_skip(
                &crate::support::this_test(),
                &format!("groff rendering ({e})"),
            )
        })
        .ok()?;
    child.stdin.take().unwrap().write_all(page).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 0);
    assert!(
        out.stderr.is_empty(),
        "groff warned: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Plain text: no bold or underline (`-P -cbou`), roff's minus and hyphen as ASCII.
    Some(String::from_utf8_lossy(&out.stdout).replace(['\u{2212}', '\u{2010}'], "-"))
}

#[test]
fn man_pages_render_with_every_command() {
    let out = polyprof().arg("man").output().unwrap();
    assert_exit(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(".ie \\n(.g .ds Aq"));
    if let Some(text) = groff(&out.stdout) {
        assert!(
            text.contains("polyprof-diff(1)") && text.contains("polyprof-batch(1)"),
            "{text}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = polyprof()
        .args(["man", "--output-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    for page in [
        "polyprof.1",
        "polyprof-diff.1",
        "polyprof-batch.1",
        "polyprof-metal-analyze.1",
        "polyprof-cache.1",
        "polyprof-cache-list.1",
        "polyprof-cache-expire.1",
    ] {
        assert!(dir.path().join(page).is_file(), "{page} missing");
    }
    assert!(
        !dir.path().join("polyprof-demo-workload.1").exists(),
        "a hidden command got a page"
    );
    let diff = std::fs::read(dir.path().join("polyprof-diff.1")).unwrap();
    if let Some(text) = groff(&diff) {
        assert!(
            text.contains("--junit") && text.contains("--threshold"),
            "{text}"
        );
    }
}
