//! `polyprof run` (to be written).

/// Arguments of `polyprof run`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn execute(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`polyprof run` is not written yet")
}
