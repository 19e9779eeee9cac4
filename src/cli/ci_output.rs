//! `--junit FILE` and `--markdown FILE` of `diff`, `batch` and `eval`: the result as JUnit XML
//! and as a Markdown summary, for a CI system to show (docs/ci.md).

use std::path::PathBuf;

use anyhow::Context;
use polyprof::results::ci::CiSuite;
use polyprof::results::export::{CiExporter, junit::JunitExporter, markdown::MarkdownExporter};

/// The CI output flags, shared by the commands that judge.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CiArgs {
    /// Also write the result as JUnit XML to FILE: one test case per kernel, job or candidate,
    /// failures with their reason.
    #[arg(long, value_name = "FILE", help_heading = "CI output")]
    pub junit: Option<PathBuf>,
    /// Also write a Markdown summary to FILE (a pull-request comment, `$GITHUB_STEP_SUMMARY`).
    #[arg(long, value_name = "FILE", help_heading = "CI output")]
    pub markdown: Option<PathBuf>,
}

impl CiArgs {
    /// Whether any CI output was asked for (so the caller builds the suite only then).
    pub fn wanted(&self) -> bool {
        self.junit.is_some() || self.markdown.is_some()
    }

    /// Write each output asked for, atomically (a failed write never leaves half a file).
    pub fn write(&self, suite: &CiSuite) -> anyhow::Result<()> {
        let outputs: [(&Option<PathBuf>, &dyn CiExporter, &str); 2] = [
            (&self.junit, &JunitExporter, "JUnit XML"),
            (&self.markdown, &MarkdownExporter, "Markdown summary"),
        ];
        for (path, exporter, what) in outputs {
            let Some(path) = path else { continue };
            let mut bytes = Vec::new();
            exporter.export(suite, &mut bytes)?;
            polyprof::model::atomic_file::write_atomic(path, &bytes)
                .with_context(|| format!("write the {what} to {}", path.display()))?;
        }
        Ok(())
    }
}
