//! `polyprof demo` (to be written).

/// Arguments of `polyprof demo`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn execute(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`polyprof demo` is not written yet")
}
