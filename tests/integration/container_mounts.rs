//! `--mount SRC:DST[:ro|:rw]` through the real binary: the three good forms mount where and how
//! they say; any other mode, and empty parts, are refused with exit 2 before a container exists
//! (`SRC:DST:RO` used to mount read-write at `DST:RO`).

use crate::support::assert_exit;
use crate::support::container::{IMAGE, containers, out_dir, run, tempdir};

#[test]
fn each_good_form_mounts_at_dst_with_its_mode() {
    let dir = tempdir();
    let sources: Vec<_> = ["plain", "ro", "rw"]
        .iter()
        .map(|name| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(&path).unwrap();
            path
        })
        .collect();
    let mounts = [
        format!("{}:/m/plain", sources[0].display()),
        format!("{}:/m/ro:ro", sources[1].display()),
        format!("{}:/m/rw:rw", sources[2].display()),
    ];
    let mut flags = Vec::new();
    for mount in &mounts {
        flags.extend(["--mount", mount.as_str()]);
    }
    let ran = run(
        &out_dir(&dir),
        &flags,
        &[
            "sh",
            "-c",
            "for m in plain ro rw; do touch /m/$m/x 2>/dev/null && echo $m=writable || echo $m=read-only; done; ls /m",
        ],
    );
    assert_eq!(ran.code, 0, "{:?} {}", ran.run.outcome, ran.stderr);
    assert_eq!(
        ran.attempt().stdout.head,
        [
            "plain=writable",
            "ro=read-only",
            "rw=writable",
            "plain",
            "ro",
            "rw"
        ]
    );
    assert!(sources[0].join("x").exists() && sources[2].join("x").exists());
    assert!(!sources[1].join("x").exists());
}

#[test]
fn an_unknown_mode_or_an_empty_part_exits_2_before_any_container() {
    let dir = tempdir();
    let src = dir.path().display().to_string();
    for (mount, says) in [
        (format!("{src}:/in:RO"), "unknown mode `RO`"),
        (format!("{src}:/in:xyz"), "unknown mode `xyz`"),
        (format!("{src}:/in:"), "mode after the last `:` is empty"),
        (format!("{src}:/in:ro:rw"), "too many `:`"),
        (format!("{src}::ro"), "must not be empty"),
        (":/in".to_string(), "must not be empty"),
        (format!("{src}:"), "must not be empty"),
        (src.clone(), "expected SRC:DST"),
    ] {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_polyprof"))
            .args(["run", "--json", "--container", IMAGE, "--output-dir"])
            .arg(out_dir(&dir))
            .args(["--mount", &mount, "--", "true"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(says) && stderr.contains("--mount"),
            "{mount}: {stderr}"
        );
        assert!(
            containers(&format!("label=polyprof.pid={pid}")).is_empty(),
            "{mount}: a container was created"
        );
    }
}
