//! `polyprof parse` (to be written).

/// Arguments of `polyprof parse`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn execute(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`polyprof parse` is not written yet")
}
