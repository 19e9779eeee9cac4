//! The configuration's layers through the real binary: a project's `polyprof.toml` (found from a
//! subfolder) and the user file are overridden by `POLYPROF_*` variables, and those by flags;
//! `polyprof config` says where each value came from.

use std::path::Path;

use serde_json::Value;

use crate::support::{assert_exit, polyprof};

/// `polyprof ARGS` in `cwd`, with `home` as HOME (its `.config/polyprof/config.toml` the user
/// file) and only the `POLYPROF_*` variables of `env`.
fn polyprof_in(
    cwd: &Path,
    home: &Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    let mut command = polyprof();
    command
        .current_dir(cwd)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .args(args);
    for (name, _) in std::env::vars() {
        if name.starts_with("POLYPROF_") {
            command.env_remove(name);
        }
    }
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn config_json(cwd: &Path, home: &Path, env: &[(&str, &str)]) -> Value {
    let out = polyprof_in(cwd, home, env, &["config", "--json"]);
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn file_then_environment_then_flag() {
    let home = tempfile::tempdir().unwrap();
    let user = home.path().join(".config/polyprof");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("config.toml"),
        "clock_control = \"none\"\noutput_root = \"user-runs\"\n",
    )
    .unwrap();
    let project = tempfile::tempdir().unwrap();
    let sub = project.path().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        project.path().join("polyprof.toml"),
        "output_root = \"file-runs\"\nenv_policy = \"clean\"\n",
    )
    .unwrap();

    // The files: the project's over the user's, its paths relative to the project's folder.
    let seen = config_json(&sub, home.path(), &[]);
    assert_eq!(seen["clock_control"]["value"], "none");
    assert_eq!(seen["clock_control"]["source"]["kind"], "user");
    assert_eq!(seen["output_root"]["source"]["kind"], "project");
    let out = polyprof_in(&sub, home.path(), &[], &["run", "-q", "--", "true"]);
    assert_exit(&out, 0);
    assert!(project.path().join("file-runs/none.000/run.json").is_file());

    // A variable over the files, relative to the working directory.
    let env = [
        ("POLYPROF_OUTPUT_ROOT", "env-runs"),
        ("POLYPROF_ENV_POLICY", "inherit"),
    ];
    let seen = config_json(&sub, home.path(), &env);
    assert_eq!(seen["output_root"]["value"], "env-runs");
    assert_eq!(seen["output_root"]["source"]["kind"], "env");
    assert_eq!(
        seen["output_root"]["source"]["from"],
        "POLYPROF_OUTPUT_ROOT"
    );
    let out = polyprof_in(&sub, home.path(), &env, &["run", "-q", "--", "true"]);
    assert_exit(&out, 0);
    assert!(sub.join("env-runs/none.000/run.json").is_file());

    // A flag over both.
    let out = polyprof_in(
        &sub,
        home.path(),
        &env,
        &["run", "-q", "--output-dir", "flag-run", "--", "true"],
    );
    assert_exit(&out, 0);
    assert!(sub.join("flag-run/run.json").is_file());
    assert!(!sub.join("env-runs/none.001").exists());
}

#[test]
fn env_policy_from_file_then_environment_then_flag() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("polyprof.toml"),
        "env_policy = \"clean\"\n",
    )
    .unwrap();
    // What the command sees of a variable polyprof has: `clean` drops it, `inherit` passes it.
    let sees_mark = |env: &[(&str, &str)], flag: &[&str]| {
        let mut args = vec!["run", "--output-dir"];
        let dir = project.path().join(format!("r{}", env.len() + flag.len()));
        let dir = dir.to_str().unwrap().to_string();
        args.push(&dir);
        args.extend_from_slice(flag);
        args.extend_from_slice(&["--", "sh", "-c", "echo \"mark=[$PP_CONFIG_MARK]\""]);
        let mut all = env.to_vec();
        all.push(("PP_CONFIG_MARK", "here"));
        let out = polyprof_in(project.path(), home.path(), &all, &args);
        assert_exit(&out, 0);
        String::from_utf8_lossy(&out.stdout).contains("mark=[here]")
    };
    assert!(!sees_mark(&[], &[]), "the file's clean policy drops it");
    assert!(
        sees_mark(&[("POLYPROF_ENV_POLICY", "inherit")], &[]),
        "the variable's inherit passes it"
    );
    assert!(
        !sees_mark(
            &[("POLYPROF_ENV_POLICY", "inherit")],
            &["--env-policy", "clean"]
        ),
        "the flag's clean drops it"
    );
}

#[test]
fn a_bad_value_names_its_source_and_the_valid_ones() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let out = polyprof_in(
        project.path(),
        home.path(),
        &[("POLYPROF_CLOCK_CONTROL", "locked")],
        &["config"],
    );
    assert_exit(&out, 2);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("POLYPROF_CLOCK_CONTROL") && text.contains("valid: base, none"),
        "{text}"
    );
}
