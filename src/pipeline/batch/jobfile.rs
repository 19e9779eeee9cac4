//! Reading a job file: JSON Lines (one job object per line; blank lines and lines starting with
//! `#` are skipped) or TOML (`[[job]]` tables, for a `.toml` file). Every error names the file
//! and the line, and all of a file's problems are checked before anything runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::problem::ProblemSpec;
use super::spec::JobSpec;

/// A job file that cannot be used; the message names `file:line` and what to fix.
#[derive(Debug, thiserror::Error)]
pub enum JobFileError {
    #[error("cannot read job file `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("job file `{}` holds no jobs; give one JSON object per line or `[[job]]` tables", path.display())]
    Empty { path: PathBuf },
}

/// A job and the line of the job file it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedJob {
    pub spec: JobSpec,
    pub line: usize,
}

/// Read and check the job file at `path`, keeping the file's order.
pub fn load(path: &Path) -> Result<Vec<JobSpec>, JobFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| JobFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &text).map(|jobs| jobs.into_iter().map(|j| j.spec).collect())
}

/// Parse job file text; `path` decides the format (`.toml`: TOML) and names the file in errors.
pub fn parse(path: &Path, text: &str) -> Result<Vec<LoadedJob>, JobFileError> {
    // Editors on Windows start UTF-8 files with a byte-order mark; it is not part of the text.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let invalid = |line: usize, message: String| JobFileError::Invalid {
        path: path.to_path_buf(),
        line,
        message,
    };
    let is_toml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let jobs = if is_toml {
        parse_toml(text).map_err(|(line, message)| invalid(line, message))?
    } else {
        parse_json_lines(text).map_err(|(line, message)| invalid(line, message))?
    };
    if jobs.is_empty() {
        return Err(JobFileError::Empty {
            path: path.to_path_buf(),
        });
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for job in &jobs {
        job.spec
            .validate()
            .map_err(|message| invalid(job.line, message))?;
        if let Some(first) = seen.insert(&job.spec.id, job.line) {
            return Err(invalid(
                job.line,
                format!(
                    "duplicate job id `{}` (first on line {first}); ids name run directories and must be unique",
                    job.spec.id
                ),
            ));
        }
    }
    Ok(jobs)
}

fn parse_json_lines(text: &str) -> Result<Vec<LoadedJob>, (usize, String)> {
    let mut jobs = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if is_problem_line(trimmed) {
            let problem: ProblemLine = serde_json::from_str(trimmed).map_err(|e| {
                (
                    line,
                    format!("not a valid problem (`{{\"problem\": {{\"id\": …, \"reference\": …, \"candidates\": […], \"stages\": […]}}}}`): {e}"),
                )
            })?;
            for spec in problem.problem.expand().map_err(|e| (line, e))? {
                jobs.push(LoadedJob { spec, line });
            }
            continue;
        }
        let spec: JobSpec = serde_json::from_str(trimmed).map_err(|e| {
            (
                line,
                super::spec::with_valid_keys(format!(
                    "not a valid job (one JSON object per line): {e}"
                )),
            )
        })?;
        jobs.push(LoadedJob { spec, line });
    }
    Ok(jobs)
}

/// A JSON Lines `problem` line: `{"problem": {...}}`, the shape of a TOML `[[problem]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProblemLine {
    problem: ProblemSpec,
}

/// Whether a JSON line is a `problem` (an object whose only key is `problem`).
fn is_problem_line(line: &str) -> bool {
    #[derive(Deserialize)]
    struct Keys {
        problem: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Keys>(line).is_ok_and(|k| k.problem.is_some())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlFile {
    #[serde(default)]
    job: Vec<toml::Spanned<JobSpec>>,
    #[serde(default)]
    problem: Vec<toml::Spanned<ProblemSpec>>,
}

fn parse_toml(text: &str) -> Result<Vec<LoadedJob>, (usize, String)> {
    let file: TomlFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        (
            line,
            super::spec::with_valid_keys(format!("not a valid TOML job file: {}", e.message())),
        )
    })?;
    let mut jobs: Vec<((usize, usize), LoadedJob)> = file
        .job
        .into_iter()
        .map(|spanned| {
            let start = spanned.span().start;
            let job = LoadedJob {
                line: line_of(text, start),
                spec: spanned.into_inner(),
            };
            ((start, 0), job)
        })
        .collect();
    for spanned in file.problem {
        let start = spanned.span().start;
        let line = line_of(text, start);
        for (n, spec) in spanned
            .into_inner()
            .expand()
            .map_err(|e| (line, e))?
            .into_iter()
            .enumerate()
        {
            jobs.push(((start, n), LoadedJob { spec, line }));
        }
    }
    // The file's order, jobs and problems as they come.
    jobs.sort_by_key(|(start, _)| *start);
    Ok(jobs.into_iter().map(|(_, job)| job).collect())
}

/// 1-based line number of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jsonl(text: &str) -> Result<Vec<LoadedJob>, String> {
        parse(Path::new("jobs.jsonl"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn json_lines_keep_order_and_lines() {
        let jobs = jsonl(
            "# kernels of the night\n{\"id\": \"b\", \"target\": [\"true\"]}\n\n{\"id\": \"a\", \"target\": [\"echo\", \"(16, 32)\"]}\n",
        )
        .unwrap();
        let ids: Vec<_> = jobs.iter().map(|j| (j.spec.id.as_str(), j.line)).collect();
        assert_eq!(ids, [("b", 2), ("a", 4)]);
        assert_eq!(jobs[1].spec.target[1], "(16, 32)");
    }

    #[test]
    fn a_bad_line_is_named() {
        let err = jsonl("{\"id\": \"a\", \"target\": [\"true\"]}\n{\"id\": \"b\", \"target\": [\n")
            .unwrap_err();
        assert!(err.starts_with("jobs.jsonl:2: "), "{err}");
        let err = jsonl("{\"id\": \"a\", \"target\": [\"true\"], \"retry\": 2}\n").unwrap_err();
        assert!(
            err.starts_with("jobs.jsonl:1: ") && err.contains("retry"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_ids_name_both_lines() {
        let err = jsonl(
            "{\"id\": \"a\", \"target\": [\"true\"]}\n{\"id\": \"a\", \"target\": [\"false\"]}\n",
        )
        .unwrap_err();
        assert!(
            err.starts_with("jobs.jsonl:2: duplicate job id `a` (first on line 1)"),
            "{err}"
        );
    }

    #[test]
    fn an_unsafe_id_is_refused_with_its_line() {
        let err = jsonl("\n{\"id\": \"a/x\", \"target\": [\"true\"]}\n").unwrap_err();
        assert!(
            err.starts_with("jobs.jsonl:2: ") && err.contains("names a directory"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_file_is_an_error() {
        let err = jsonl("# nothing\n\n").unwrap_err();
        assert!(err.contains("no jobs"), "{err}");
    }

    #[test]
    fn toml_jobs_with_lines() {
        let text = "[[job]]\nid = \"a\"\ntarget = [\"true\"]\nlabels = { kernel = \"k1\" }\n\n[[job]]\nid = \"b\"\ntarget = [\"sleep\", \"1\"]\ntimeout_s = 0.5\nretries = 1\n";
        let jobs = parse(Path::new("jobs.toml"), text).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].spec.labels["kernel"], "k1");
        assert_eq!(jobs[1].spec.timeout_s, Some(0.5));
        assert_eq!(jobs[1].spec.retries, Some(1));
        assert!(jobs[1].line >= 6, "{}", jobs[1].line);
        let err = parse(
            Path::new("jobs.toml"),
            "[[job]]\nid = \"a\"\ntarget = [\"true\"]\nbogus = 1\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("jobs.toml:") && err.contains("bogus"),
            "{err}"
        );
    }

    #[test]
    fn problems_expand_in_the_files_order_in_both_formats() {
        let jobs = jsonl(concat!(
            "{\"id\": \"first\", \"target\": [\"true\"]}\n",
            "{\"problem\": {\"id\": \"mm\", \"reference\": \"r.py\", \"candidates\": [\"c/a.py\", \"c/b.py\"], \"stages\": [\"check\", \"time\"]}}\n",
            "{\"id\": \"last\", \"target\": [\"true\"]}\n",
        ))
        .unwrap();
        let ids: Vec<(&str, usize)> = jobs.iter().map(|j| (j.spec.id.as_str(), j.line)).collect();
        assert_eq!(
            ids,
            [
                ("first", 1),
                ("mm.a.check", 2),
                ("mm.a.time", 2),
                ("mm.b.check", 2),
                ("mm.b.time", 2),
                ("last", 3)
            ]
        );
        let toml = concat!(
            "[[problem]]\nid = \"mm\"\nreference = \"r.py\"\ncandidates = [\"c/a.py\"]\n",
            "stages = [\"time\", \"profile\"]\nprofile = { top_k = 1 }\n",
            "eval = { device = \"cpu\", trials = 2 }\n\n",
            "[[job]]\nid = \"after\"\ntarget = [\"true\"]\n",
        );
        let jobs = parse(Path::new("jobs.toml"), toml).unwrap();
        let ids: Vec<&str> = jobs.iter().map(|j| j.spec.id.as_str()).collect();
        assert_eq!(ids, ["mm.a.time", "mm.a.profile", "after"]);
        assert_eq!(jobs[0].spec.eval.as_ref().unwrap().trials, Some(2));
        // A problem's mistake is named with its line.
        let err = jsonl("\n{\"problem\": {\"id\": \"mm\", \"reference\": \"r.py\", \"candidates\": [], \"stages\": [\"check\"]}}\n")
            .unwrap_err();
        assert!(
            err.starts_with("jobs.jsonl:2: ") && err.contains("`candidates` is empty"),
            "{err}"
        );
        let err = jsonl("{\"problem\": {\"id\": \"mm\", \"refrence\": \"r.py\"}}\n").unwrap_err();
        assert!(err.contains("refrence"), "{err}");
        // A job id a problem's expansion takes is a duplicate like any other.
        let err = jsonl(concat!(
            "{\"id\": \"mm.a.time\", \"target\": [\"true\"]}\n",
            "{\"problem\": {\"id\": \"mm\", \"reference\": \"r.py\", \"candidates\": [\"a.py\"], \"stages\": [\"time\"]}}\n",
        ))
        .unwrap_err();
        assert!(err.contains("duplicate job id `mm.a.time`"), "{err}");
    }
}
