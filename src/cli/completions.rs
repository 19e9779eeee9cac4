//! `polyprof completions SHELL`: the shell's completion script for polyprof (clap_complete), on
//! stdout; docs/install.md says where each shell looks for it.

use clap::CommandFactory;

/// Arguments of `polyprof completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let mut command = super::Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut command, "polyprof", &mut out);
    Ok(0)
}
