//! The string form of plans through a real `sh -c`: every argument reaches the program
//! verbatim, shell syntax in arguments is never executed, and the backends' multi-step and
//! retry plans behave as their plans say. Fake `unitrace`/`vtune`/`xcrun` scripts on PATH log
//! the argv they receive, NUL-separated, so it can be compared with the plan.

use polyprof::model::arg::{args, lossy};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use polyprof::pipeline::Profiler;
use polyprof::profilers::{
    self, CommandSpec, EndMarker, Graces, Plan, ProfilerSettings, Step, quote,
};
use proptest::prelude::*;

const NASTY: &[&str] = &[
    "--template_params=(16, 32)",
    "$(touch x)",
    "`touch y`",
    "it's",
    "say \"hi\"",
    "back\\slash\\",
    "line\nbreak",
    "tab\there",
    "ünïcødé ✓ 日本",
    "",
    " ",
    "*",
    "~",
    "#not a comment",
    "a;b&&c||d|e>f<g",
    "$HOME ${PATH}",
    "!event",
    "{a,b}",
    "-n",
    "--",
    "\r\x01\x7f",
];

fn sh_in(dir: &Path, script: &str, path_prefix: Option<&Path>) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script).current_dir(dir);
    if let Some(bin) = path_prefix {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", bin.display()));
    }
    cmd.output().unwrap()
}

fn nul_split(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let mut words: Vec<String> = text.split('\0').map(str::to_string).collect();
    assert_eq!(words.pop().as_deref(), Some(""), "output must end with NUL");
    words
}

fn printf_argv(words: &[String]) -> Vec<String> {
    let mut argv = vec!["printf".to_string(), "%s\\0".to_string()];
    argv.extend(words.iter().cloned());
    argv
}

fn one_step(argv: Vec<String>) -> Plan {
    Plan {
        profiler: "test".into(),
        target: args(argv.clone()),
        steps: vec![Step::new(
            "run",
            CommandSpec::new(args(argv)),
            EndMarker::None,
            Graces::default(),
        )],
        outputs: Default::default(),
        capabilities: Vec::new(),
    }
}

#[test]
fn nasty_arguments_reach_the_program_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let words: Vec<String> = NASTY.iter().map(|s| s.to_string()).collect();
    let script = quote::plan_to_shell(&one_step(printf_argv(&words))).unwrap();
    let out = sh_in(dir.path(), &script, None);
    assert!(out.status.success(), "{script}: {out:?}");
    assert_eq!(nul_split(&out.stdout), words);
    // Command substitution in an argument was passed along, never run.
    assert!(!dir.path().join("x").exists());
    assert!(!dir.path().join("y").exists());
}

#[test]
fn wrap_cmd_round_trips_a_quoted_command_string() {
    // A caller holding a string: the `none` profiler's wrap_cmd splits it with POSIX rules and
    // quotes it again; the program must see the same words as `sh` would have given it.
    let dir = tempfile::tempdir().unwrap();
    let words: Vec<String> = NASTY.iter().map(|s| s.to_string()).collect();
    let command = quote::join(&printf_argv(&words)).unwrap();
    let none = profilers::create("none", dir.path(), &ProfilerSettings::default()).unwrap();
    let script = none.wrap_cmd(&command).unwrap();
    let out = sh_in(dir.path(), &script, None);
    assert_eq!(nul_split(&out.stdout), words);
    assert!(!dir.path().join("x").exists());
    assert!(none.wrap_cmd("echo 'unterminated").is_err());
    assert!(none.wrap_cmd("   ").is_err());
}

#[test]
fn env_values_are_quoted() {
    let dir = tempfile::tempdir().unwrap();
    for value in NASTY {
        let mut plan = one_step(vec![
            "sh".into(),
            "-c".into(),
            "printf '%s\\0' \"$POLYPROF_T\"".into(),
        ]);
        plan.steps[0]
            .command
            .env
            .insert("POLYPROF_T".into(), value.to_string());
        let script = quote::plan_to_shell(&plan).unwrap();
        let out = sh_in(dir.path(), &script, None);
        assert_eq!(nul_split(&out.stdout), vec![value.to_string()], "{script}");
    }
    assert!(!dir.path().join("x").exists());
}

// ---- real backends' plans against fake profiler binaries -------------------------------------

/// A fake profiler: appends its name, argv and selected env vars (NUL-separated, one record
/// per line of `RECORD_END`) to `$FAKE_LOG`, then runs `$FAKE_<NAME>_SCRIPT` if set.
fn fake_bin(dir: &Path, name: &str) {
    let body = format!(
        "#!/bin/sh\n\
         {{ printf '%s\\0' {name} \"$@\"; printf 'ENV=%s\\0' \"${{PTI_ENABLE_COLLECTION-unset}}\"; \
         printf 'RECORD_END\\n'; }} >> \"$FAKE_LOG\"\n\
         if [ -n \"$FAKE_SCRIPT\" ]; then . \"$FAKE_SCRIPT\"; fi\n"
    );
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

struct Fakes {
    root: tempfile::TempDir,
}

impl Fakes {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("bin")).unwrap();
        for name in ["unitrace", "vtune", "xcrun"] {
            fake_bin(&root.path().join("bin"), name);
        }
        Fakes { root }
    }
    fn bin(&self) -> PathBuf {
        self.root.path().join("bin")
    }
    fn out(&self) -> PathBuf {
        self.root.path().join("out")
    }
    fn log(&self) -> PathBuf {
        self.root.path().join("log")
    }
    /// Run `script` with the fakes first on PATH; `behaviour` is sourced by every fake.
    fn run(&self, script: &str, behaviour: &str) -> Output {
        let hook = self.root.path().join("hook.sh");
        std::fs::write(&hook, behaviour).unwrap();
        std::fs::create_dir_all(self.out()).unwrap();
        let path = std::env::var("PATH").unwrap_or_default();
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(self.root.path())
            .env("PATH", format!("{}:{path}", self.bin().display()))
            .env("FAKE_LOG", self.log())
            .env("FAKE_SCRIPT", &hook)
            .output()
            .unwrap()
    }
    /// Each invocation: (argv, PTI_ENABLE_COLLECTION as seen).
    fn calls(&self) -> Vec<(Vec<String>, String)> {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        text.split("RECORD_END\n")
            .filter(|r| !r.is_empty())
            .map(|record| {
                let mut words = nul_split(record.as_bytes());
                let env = words.pop().unwrap();
                (words, env.trim_start_matches("ENV=").to_string())
            })
            .collect()
    }
}

fn nasty_target() -> Vec<String> {
    let mut t = vec!["python".to_string(), "bench.py".to_string()];
    t.extend(NASTY.iter().map(|s| s.to_string()));
    t
}

#[test]
fn unitrace_plan_string_runs_the_planned_argv() {
    let f = Fakes::new();
    let u = profilers::create("unitrace", &f.out(), &ProfilerSettings::default()).unwrap();
    let plan = u.wrap(&args(nasty_target())).unwrap();
    let script = quote::plan_to_shell(&plan).unwrap();
    let out = f.run(&script, "");
    assert!(out.status.success(), "{out:?}");
    let calls = f.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, plan.steps[0].command.argv);
    assert!(!f.root.path().join("x").exists());
}

#[test]
fn vtune_report_runs_after_a_failed_collect_and_the_failure_is_kept() {
    let f = Fakes::new();
    let v = profilers::create("vtune", &f.out(), &ProfilerSettings::default()).unwrap();
    let plan = v.wrap(&args(nasty_target())).unwrap();
    let script = quote::plan_to_shell(&plan).unwrap();
    // collect fails with 5; report prints a table on stdout.
    let behaviour = "case \"$1\" in -collect) exit 5;; -report) printf 'Computing Task\\tTime\\n'; exit 0;; esac\n";
    let out = f.run(&script, behaviour);
    assert_eq!(out.status.code(), Some(5), "{script}\n{out:?}");
    let calls = f.calls();
    let argvs: Vec<Vec<String>> = calls.into_iter().map(|c| c.0).collect();
    assert_eq!(
        argvs,
        vec![
            plan.steps[0].command.argv.clone(),
            plan.steps[1].command.argv.clone()
        ]
    );
    let tsv = std::fs::read_to_string(f.out().join("vtune_hotspots.tsv")).unwrap();
    assert_eq!(tsv, "Computing Task\tTime\n");
}

#[test]
fn ocl_unitrace_retries_until_the_metrics_file_is_long_enough() {
    let f = Fakes::new();
    let p = profilers::create("ocl-unitrace", &f.out(), &ProfilerSettings::default()).unwrap();
    let plan = p.wrap(&args(["./gemm", "a b"])).unwrap();
    let script = quote::plan_to_shell(&plan).unwrap();
    // Attempts 1 and 2 write a 3-line metrics file, attempt 3 a 12-line one.
    let behaviour = format!(
        "n=$(grep -c RECORD_END \"$FAKE_LOG\"); out='{}'; \
         if [ \"$n\" -ge 3 ]; then lines=12; else lines=3; fi; \
         i=0; while [ $i -lt $lines ]; do echo row; i=$((i+1)); done > \"$out/trace.metrics.$n\"; \
         echo text > \"$out/trace.$n\"\n",
        f.out().display()
    );
    let out = f.run(&script, &behaviour);
    assert!(out.status.success(), "{script}\n{out:?}");
    let calls = f.calls();
    assert_eq!(calls.len(), 3);
    for (argv, env) in &calls {
        assert_eq!(argv, &plan.steps[0].command.argv);
        assert_eq!(env, "0", "PTI_ENABLE_COLLECTION must reach unitrace");
    }
    // Earlier attempts' files were cleaned before each retry.
    let mut names: Vec<String> = std::fs::read_dir(f.out())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["trace.3", "trace.metrics.3"]);
}

#[test]
fn ocl_unitrace_gives_up_after_twenty_attempts_with_failure() {
    let f = Fakes::new();
    let p = profilers::create("ocl-unitrace", &f.out(), &ProfilerSettings::default()).unwrap();
    let script = quote::plan_to_shell(&p.wrap(&args(["./gemm"])).unwrap()).unwrap();
    let out = f.run(&script, "");
    assert!(!out.status.success());
    assert_eq!(f.calls().len(), 20);
}

#[test]
fn metal_plan_string_records_then_exports_even_after_failure() {
    let f = Fakes::new();
    let m = profilers::create("metal", &f.out(), &ProfilerSettings::default()).unwrap();
    let plan = m.wrap(&args(nasty_target())).unwrap();
    let script = quote::plan_to_shell(&plan).unwrap();
    let out = f.run(&script, "[ \"$2\" = record ] && exit 7; exit 0\n");
    assert_eq!(out.status.code(), Some(7));
    let argvs: Vec<Vec<String>> = f.calls().into_iter().map(|c| c.0).collect();
    let planned: Vec<Vec<String>> = plan.steps.iter().map(|s| lossy(&s.command.argv)).collect();
    assert_eq!(argvs, planned);
}

// ---- arbitrary strings -----------------------------------------------------------------------

fn no_nul() -> impl Strategy<Value = String> {
    any::<String>().prop_map(|s| s.replace('\0', ""))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn arbitrary_arguments_and_env_round_trip(
        words in proptest::collection::vec(no_nul(), 0..6),
        value in no_nul(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut plan = one_step(vec![
            "sh".into(),
            "-c".into(),
            "printf '%s\\0' \"$POLYPROF_T\" \"$@\"".into(),
            "argv0".into(),
        ]);
        plan.steps[0].command.argv.extend(words.iter().map(polyprof::model::Arg::from));
        plan.steps[0].command.env = BTreeMap::from([("POLYPROF_T".to_string(), value.clone())]);
        let script = quote::plan_to_shell(&plan).unwrap();
        let out = sh_in(dir.path(), &script, None);
        prop_assert!(out.status.success(), "{:?}", out);
        let mut expected = vec![value];
        expected.extend(words);
        prop_assert_eq!(nul_split(&out.stdout), expected);
        prop_assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn split_inverts_join(words in proptest::collection::vec(no_nul(), 1..6)) {
        prop_assert_eq!(quote::split(&quote::join(&words).unwrap()).unwrap(), words);
    }
}
