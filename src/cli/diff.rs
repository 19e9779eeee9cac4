//! `polyprof diff` (to be written).

/// Arguments of `polyprof diff`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn execute(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`polyprof diff` is not written yet")
}
