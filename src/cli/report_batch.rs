//! `polyprof report BATCH_ROOT --format html`: the batch page, and each job's own run page
//! (`report.html` beside each pass's run.json) for it to link to.

use std::path::{Path, PathBuf};

use anyhow::Context;
use polyprof::model::batch::{BATCH_FILE, BatchIndex};
use polyprof::model::under_root;
use polyprof::results::ProfileRun;
use polyprof::results::export::html_batch::{self, JobLinks};
use polyprof::results::export::{self, Format, Report};

use super::report::{Args, device_table, peaks_for};

/// The file name of each job's own page.
pub const JOB_REPORT: &str = "report.html";

/// Whether `dir` is a batch root (it holds the batch index).
pub fn is_batch_root(dir: &Path) -> bool {
    dir.join(BATCH_FILE).is_file()
}

pub fn execute(args: &Args) -> anyhow::Result<u8> {
    anyhow::ensure!(
        args.format == Format::Html,
        "{} is a batch root: it reports as --format html (one page of every job); for one \
         job's run pass its run directory ({}/runs/<id>), for the table `polyprof batch` prints \
         use `polyprof batch --resume` or read batch.json",
        args.run_dir.display(),
        args.run_dir.display()
    );
    let root = args.run_dir.as_path();
    let index = BatchIndex::read(root)?;
    let table = device_table(args.devices.as_deref())?;
    // Links are relative paths from the page's folder (never `file://` or any scheme).
    let page_dir = match &args.output {
        Some(path) => path.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => PathBuf::from("."),
    };
    let mut links = JobLinks::new();
    for entry in index.jobs.values() {
        let passes = match entry.passes.is_empty() {
            true => vec![entry.run_dir.clone()],
            false => entry.passes.clone(),
        };
        let mut job_links = Vec::new();
        for pass in &passes {
            // A crafted index cannot make the page write a report.html outside the root.
            let dir = under_root::resolve(root, pass, &format!("{BATCH_FILE} (job {})", entry.id))?;
            let href = |file: &str| relative_href(&page_dir, &dir.join(file));
            let label = Path::new(pass)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| pass.clone());
            if dir.join("run.json").is_file() {
                match write_job_report(args, &table, &dir) {
                    Ok(()) => {
                        if let Some(href) = href(JOB_REPORT) {
                            // The Job column names the job; several passes name theirs.
                            let text = match passes.len() {
                                1 => "report".to_string(),
                                _ => format!("{label} report"),
                            };
                            job_links.push((text, href));
                        }
                    }
                    Err(error) => {
                        tracing::warn!(job = %entry.id, "no report for {}: {error:#}", dir.display())
                    }
                }
            }
            if dir.join("verdict.json").is_file()
                && let Some(href) = href("verdict.json")
            {
                job_links.push(("verdict.json".to_string(), href));
            }
        }
        links.insert(entry.id.clone(), job_links);
    }
    let root_text = root.display().to_string();
    let tails = super::batch_summary::stderr_tails(&index, &root_text);
    let html = html_batch::render_with_tails(&index, &root_text, &links, &tails);
    super::report::write_output(args.output.as_deref(), html.as_bytes(), Format::Html)?;
    Ok(0)
}

fn write_job_report(
    args: &Args,
    table: &polyprof::results::devices::DeviceTable,
    dir: &Path,
) -> anyhow::Result<()> {
    let run = ProfileRun::read(dir)?;
    let peaks = peaks_for(table, &run, args.device.as_deref())?;
    let report = Report::from_run(run, peaks);
    export::write_file(&report, Format::Html, &dir.join(JOB_REPORT))
        .with_context(|| format!("write {}", dir.join(JOB_REPORT).display()))
}

/// `target` as a path relative to `page_dir` (`../b/j1/report.html`), by their real
/// locations; `None` when either cannot be resolved (no link then).
fn relative_href(page_dir: &Path, target: &Path) -> Option<String> {
    let page_dir = match page_dir.as_os_str().is_empty() {
        true => Path::new("."),
        false => page_dir,
    };
    let from = page_dir.canonicalize().ok()?;
    let to = target.canonicalize().ok()?;
    let common = from
        .components()
        .zip(to.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<String> = from
        .components()
        .skip(common)
        .map(|_| "..".into())
        .collect();
    parts.extend(
        to.components()
            .skip(common)
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    Some(parts.join("/"))
}
