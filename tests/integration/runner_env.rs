//! Environment policies through the real binary.

use crate::support::polyprof;
use crate::support::runner::*;

fn env_line(policy: &str, extra: &[&str]) -> (String, Vec<String>) {
    let fx = Fixture::new();
    let mut args = vec!["--env-policy", policy];
    args.extend_from_slice(extra);
    let out = fx.out();
    let output = polyprof()
        .args(["run", "--json", "-q", "--output-dir"])
        .arg(&out)
        .args(&args)
        .args(["--", "sh", &program("print_env.sh")])
        .env("FOO_TOKEN", "s3cret")
        .env("OPENAI_API_KEY", "sk-x")
        .output()
        .unwrap();
    crate::support::assert_exit(&output, 0);
    let run: polyprof::results::ProfileRun = serde_json::from_slice(&output.stdout).unwrap();
    (
        run.steps[0].attempts[0].stdout.head[0].clone(),
        run.warnings,
    )
}

#[test]
fn untrusted_drops_credentials_even_when_asked() {
    let (line, warnings) = env_line(
        "untrusted",
        &[
            "--env-allow",
            "FOO_TOKEN",
            "--env",
            "EXTRA=1",
            "--env",
            "MY_SECRET=x",
        ],
    );
    assert_eq!(line, "token=unset api=unset path=set extra=1");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("FOO_TOKEN") && w.contains("MY_SECRET")),
        "{warnings:?}"
    );
    assert!(!warnings.iter().any(|w| w.contains("s3cret")));
}

#[test]
fn clean_passes_only_the_allowlist_and_inherit_passes_all() {
    let (line, _) = env_line("clean", &["--env-allow", "FOO_TOKEN"]);
    assert_eq!(line, "token=s3cret api=unset path=set extra=unset");
    let (line, _) = env_line("inherit", &[]);
    assert_eq!(line, "token=s3cret api=sk-x path=set extra=unset");
}
