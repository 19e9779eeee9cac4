//! `polyprof select` (to be written).

/// Arguments of `polyprof select`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn execute(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`polyprof select` is not written yet")
}
