//! `polyprof man`: the manual page (clap_mangen), from the same definitions as `--help`; on
//! stdout, or with `--output-dir DIR` one page per command (`polyprof.1`, `polyprof-run.1`, …).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::CommandFactory;

/// Arguments of `polyprof man`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write `polyprof.1` and one page per subcommand into DIR instead of printing `polyprof.1`.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
}

/// The roff text of `command`'s page.
fn render(command: clap::Command) -> anyhow::Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut page)
        .context("cannot render the manual page")?;
    Ok(page)
}

/// Every visible command's page into `dir`, the subcommands named `polyprof-<sub>.1`; their paths.
fn write_pages(command: &clap::Command, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        written.extend(write_pages(sub, dir)?);
    }
    let man = clap_mangen::Man::new(command.clone());
    let path = dir.join(man.get_filename());
    polyprof::model::atomic_file::write_atomic(&path, &render(command.clone())?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    written.push(path);
    Ok(written)
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    // Built once, so each subcommand's display name is `polyprof-<sub>` (its page's name).
    let mut command = super::Cli::command().disable_help_subcommand(true);
    command.build();
    match &args.output_dir {
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            out.write_all(&render(command)?)
                .context("cannot print the manual page")?;
        }
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let pages = write_pages(&command, dir)?;
            eprintln!(
                "polyprof man: wrote {} pages into {}",
                pages.len(),
                dir.display()
            );
        }
    }
    Ok(0)
}
