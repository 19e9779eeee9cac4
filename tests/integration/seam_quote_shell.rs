//! The POSIX shell form of plans (`polyprof wrap --shell`), run through a real `sh`: quoting,
//! environment, working directory, stdout files, step order and the retry loop.

use std::path::PathBuf;
use std::process::Command;

use polyprof::model::{CommandSpec, EndMarker, Graces, Plan, RetryPolicy, Step, Validator};
use polyprof::profilers::quote::{join, plan_to_shell, quote_command};

fn sh(script: &str) -> std::process::Output {
    Command::new("sh").arg("-c").arg(script).output().unwrap()
}

fn step(argv: &[&str]) -> Step {
    Step::new(
        "s",
        CommandSpec::new(polyprof::model::arg::args(argv.iter().copied())),
        EndMarker::None,
        Graces::default(),
    )
}

fn plan(steps: Vec<Step>) -> Plan {
    Plan {
        profiler: "test".into(),
        target: vec![],
        steps,
        outputs: Default::default(),
        capabilities: Vec::new(),
    }
}

#[test]
fn reserved_words_in_command_position_are_quoted() {
    assert_eq!(quote_command("if").unwrap(), "'if'");
    assert_eq!(quote_command("unitrace").unwrap(), "unitrace");
    assert_eq!(join(&["done", "if"]).unwrap(), "'done' if");
    // `A=1` as argv[0] must stay a command name, not become an assignment.
    let out = sh(&join(&["A=1"]).unwrap());
    assert!(!out.status.success());
}

#[test]
fn env_cwd_and_stdout_file_reach_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("out put.txt");
    let mut s = step(&["sh", "-c", "printf '%s|%s' \"$V\" \"$(pwd)\""]);
    s.command.env.insert("V".into(), "it's $(x) \"q\"".into());
    s.command.cwd = Some(dir.path().to_path_buf());
    s.stdout_file = Some(out_file.clone());
    let script = plan_to_shell(&plan(vec![s])).unwrap();
    assert!(sh(&script).status.success(), "{script}");
    let got = std::fs::read_to_string(out_file).unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(got, format!("it's $(x) \"q\"|{}", cwd.display()));
}

#[test]
fn steps_honour_run_after_failure_and_keep_first_failure() {
    let dir = tempfile::tempdir().unwrap();
    let mark = |name: &str| {
        let path = dir.path().join(name);
        step(&["touch", path.to_str().unwrap()])
    };
    let fail = step(&["sh", "-c", "exit 3"]);
    let mut report = mark("report");
    report.run_after_failure = true;
    let script = plan_to_shell(&plan(vec![fail, mark("skipped"), report])).unwrap();
    let out = sh(&script);
    assert_eq!(out.status.code(), Some(3), "{script}");
    assert!(dir.path().join("report").exists());
    assert!(!dir.path().join("skipped").exists());

    let script = plan_to_shell(&plan(vec![mark("a"), mark("b")])).unwrap();
    assert_eq!(sh(&script).status.code(), Some(0));
    assert!(dir.path().join("b").exists());
}

#[test]
fn retry_loop_is_bounded_and_cleans_between_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    // Each attempt appends to a counter and writes a metrics file of N lines, where N is
    // the attempt number: only the third attempt reaches 3 lines.
    let script = format!(
        "n=$(cat '{d}/count' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{d}/count'; \
         i=0; while [ $i -lt $n ]; do echo row; i=$((i+1)); done > '{d}/trace.metrics.'$n"
    );
    let mut s = step(&["sh", "-c", &script]);
    s.retry = Some(RetryPolicy {
        max_attempts: 5,
        validator: Validator::FileMinLines {
            dir: PathBuf::from(&d),
            prefix: "trace.metrics.".into(),
            min_lines: 3,
        },
        clean_prefixes: vec!["trace.".into()],
    });
    let text = plan_to_shell(&plan(vec![s.clone()])).unwrap();
    let out = sh(&text);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("count")).unwrap(),
        "3\n"
    );
    // Earlier attempts' files were removed before each new attempt.
    assert!(!dir.path().join("trace.metrics.2").exists());
    assert!(dir.path().join("trace.metrics.3").exists());

    // Never valid: stops after max_attempts with a failing status.
    std::fs::remove_file(dir.path().join("count")).unwrap();
    if let Some(r) = s.retry.as_mut()
        && let Validator::FileMinLines { min_lines, .. } = &mut r.validator
    {
        *min_lines = 100;
    }
    let text = plan_to_shell(&plan(vec![s])).unwrap();
    assert!(!sh(&text).status.success());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("count")).unwrap(),
        "5\n"
    );
}

#[test]
fn exit_zero_retry_stops_at_first_success() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("c");
    let c = count.to_str().unwrap();
    let script = format!("echo x >> '{c}'; [ $(wc -l < '{c}') -ge 2 ]");
    let mut s = step(&["sh", "-c", &script]);
    s.retry = Some(RetryPolicy {
        max_attempts: 4,
        validator: Validator::ExitZero,
        clean_prefixes: vec![],
    });
    let text = plan_to_shell(&plan(vec![s])).unwrap();
    assert!(sh(&text).status.success(), "{text}");
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "x\nx\n");
}
