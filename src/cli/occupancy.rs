//! `polyprof occupancy` (to be written).

/// Arguments of `polyprof occupancy`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn execute(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`polyprof occupancy` is not written yet")
}
