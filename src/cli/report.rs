//! `polyprof report` (to be written).

/// Arguments of `polyprof report`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn execute(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`polyprof report` is not written yet")
}
