//! What the driver hands Slurm: the task script every array task runs, and the `sbatch`
//! argv that submits it as an array. Pure; the driver writes the script and runs the argv.

use std::collections::BTreeSet;
use std::path::Path;

use super::report::compress_indices;
use crate::model::error::{Error, Result};
use crate::profilers::quote::{join, quote};

/// How the array is submitted (the `--slurm` options of `polyprof batch`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubmitOptions {
    pub partition: Option<String>,
    pub account: Option<String>,
    /// Time limit per task, in any form sbatch reads (`10`, `1:00:00`, `2-0`).
    pub time: Option<String>,
    /// `--gpus-per-task N`.
    pub gpus_per_task: Option<u32>,
    /// `--gres SPEC` (`gpu:1`, `gpu:h100:1`).
    pub gres: Option<String>,
    /// At most this many tasks at once (`--array=…%N`).
    pub max_parallel: Option<u32>,
    /// Passed to sbatch after polyprof's own options, so they can override them
    /// (`--requeue` undoes the default `--no-requeue`).
    pub sbatch_args: Vec<String>,
    pub job_name: Option<String>,
}

/// The task script: one line that runs this job file's task `$SLURM_ARRAY_TASK_ID` with
/// `polyprof` as the nodes see it. `task_argv` is `[polyprof, batch, JOBS, --output-dir,
/// ROOT, …]` with absolute paths; every word is single-quoted, so nothing in it is expanded.
pub fn task_script(task_argv: &[String]) -> Result<String> {
    if task_argv.is_empty() {
        return Err(Error::invalid("task command", "the command is empty"));
    }
    Ok(format!(
        "#!/bin/sh\n\
         # Written by `polyprof batch --slurm`: array task N runs job N (0-based) of the job file.\n\
         # polyprof writes the job's run directory and its entry.json itself; this script's\n\
         # output goes to the %A_%a.out file beside it.\n\
         exec {} --task-index \"$SLURM_ARRAY_TASK_ID\"\n",
        join(task_argv)?
    ))
}

/// `sbatch --parsable --array=<indices>[%max] … SCRIPT`. Output files go to `log_dir`
/// (`%A_%a.out`, stdout and stderr together).
pub fn sbatch_argv(
    options: &SubmitOptions,
    indices: &BTreeSet<u32>,
    script: &Path,
    log_dir: &Path,
) -> Result<Vec<String>> {
    if indices.is_empty() {
        return Err(Error::invalid("job array", "no task to submit"));
    }
    if options.gpus_per_task.is_some() && options.gres.is_some() {
        return Err(Error::invalid(
            "Slurm options",
            "give --gpus-per-task or --gres, not both",
        ));
    }
    let text = |p: &Path| {
        p.to_str()
            .map(str::to_string)
            .ok_or_else(|| Error::invalid("path", format!("`{}` is not valid UTF-8", p.display())))
    };
    let mut argv = vec![
        "--parsable".to_string(),
        format!(
            "--array={}",
            compress_indices(indices, options.max_parallel)
        ),
        format!(
            "--job-name={}",
            options.job_name.as_deref().unwrap_or("polyprof-batch")
        ),
        // sbatch expands `%` in the file name pattern: the folder's own `%` are doubled.
        format!("--output={}/%A_%a.out", text(log_dir)?.replace('%', "%%")),
        // A task that dies with its node is reported `lost` (and rerun by --resume) rather than
        // requeued, which Slurm delays by about two minutes; `--sbatch-arg=--requeue` restores it.
        "--no-requeue".to_string(),
    ];
    if let Some(p) = &options.partition {
        argv.push(format!("--partition={p}"));
    }
    if let Some(a) = &options.account {
        argv.push(format!("--account={a}"));
    }
    if let Some(t) = &options.time {
        argv.push(format!("--time={t}"));
    }
    if let Some(n) = options.gpus_per_task {
        // --gpus-per-task needs a task count in sbatch; one task per array element.
        argv.push("--ntasks=1".to_string());
        argv.push(format!("--gpus-per-task={n}"));
    }
    if let Some(g) = &options.gres {
        argv.push(format!("--gres={g}"));
    }
    argv.extend(options.sbatch_args.iter().cloned());
    argv.push(text(script)?);
    Ok(argv)
}

/// The job id in `sbatch --parsable` output: `123` or `123;cluster`.
pub fn parse_parsable(stdout: &str) -> Result<String> {
    let line = stdout.lines().map(str::trim).find(|l| !l.is_empty());
    let id = line.and_then(|l| l.split(';').next()).unwrap_or("");
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(Error::Parse {
            context: "sbatch --parsable output".into(),
            message: format!("expected a job id, got {:?}", stdout.trim()),
        });
    }
    Ok(id.to_string())
}

/// Quote one path for messages that show a shell command.
pub fn shown_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    quote(&text).unwrap_or_else(|_| text.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn parsable_output() {
        let text = std::fs::read_to_string(format!(
            "{}/tests/fixtures/slurm/sbatch-parsable.txt",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        assert_eq!(parse_parsable(&text).unwrap(), "12");
        assert_eq!(parse_parsable("77;cluster2\n").unwrap(), "77");
        let refused = std::fs::read_to_string(format!(
            "{}/tests/fixtures/slurm/sbatch-gres-refused.txt",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let err = parse_parsable(&refused).unwrap_err().to_string();
        assert!(err.contains("Requested node configuration"), "{err}");
    }

    #[test]
    fn argv_has_the_array_and_options_in_order() {
        let options = SubmitOptions {
            partition: Some("gpu".into()),
            gpus_per_task: Some(1),
            max_parallel: Some(4),
            sbatch_args: vec!["--requeue".into()],
            ..Default::default()
        };
        let indices: BTreeSet<u32> = [0, 1, 2, 5].into_iter().collect();
        let argv = sbatch_argv(
            &options,
            &indices,
            &PathBuf::from("/r/slurm/task.sh"),
            &PathBuf::from("/r/slurm"),
        )
        .unwrap();
        assert_eq!(argv[1], "--array=0-2,5%4");
        assert!(argv.contains(&"--gpus-per-task=1".to_string()));
        assert!(argv.contains(&"--output=/r/slurm/%A_%a.out".to_string()));
        let no = argv.iter().position(|a| a == "--no-requeue").unwrap();
        let yes = argv.iter().position(|a| a == "--requeue").unwrap();
        assert!(no < yes, "user arguments come last so they win");
        assert_eq!(argv.last().unwrap(), "/r/slurm/task.sh");
        let both = SubmitOptions {
            gpus_per_task: Some(1),
            gres: Some("gpu:1".into()),
            ..Default::default()
        };
        assert!(sbatch_argv(&both, &indices, Path::new("s"), Path::new("l")).is_err());
    }

    /// The script's command line read back by a real `sh` is the argv it was made from.
    #[test]
    fn task_script_round_trips_through_sh() {
        let dir = tempfile::tempdir().unwrap();
        let argv: Vec<String> = [
            "printf",
            "[%s]\\n",
            "it's",
            "$HOME",
            "a b",
            "`id`",
            "--x=(16, 32)",
            "\"q\"",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let script = task_script(&argv).unwrap();
        let path = dir.path().join("task.sh");
        std::fs::write(&path, &script).unwrap();
        let out = std::process::Command::new("sh")
            .arg(&path)
            .env("SLURM_ARRAY_TASK_ID", "7")
            .output()
            .unwrap();
        let got = String::from_utf8(out.stdout).unwrap();
        let want: String = argv[2..]
            .iter()
            .chain(["--task-index".to_string(), "7".to_string()].iter())
            .map(|w| format!("[{w}]\n"))
            .collect();
        assert_eq!(got, want);
    }
}
