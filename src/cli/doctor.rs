//! `polyprof doctor` (to be written).

/// Arguments of `polyprof doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn execute(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`polyprof doctor` is not written yet")
}
