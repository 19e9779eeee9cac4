//! `polyprof wrap` (to be written).

/// Arguments of `polyprof wrap`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn execute(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`polyprof wrap` is not written yet")
}
