//! Secret seeds, drawn from the operating system's random source. They reach the trusted
//! worker only inside a request on its socket, never in any process's argv or environment,
//! and are revealed in `evidence.json` once the candidate's process is gone.

use std::collections::BTreeSet;
use std::io::Read;

/// Seeds are 32-bit: numpy's global seeding (`numpy.random.seed`) takes no more.
const SEED_MASK: u64 = 0xFFFF_FFFF;

/// Draws seeds from `/dev/urandom`, never the same one twice in an eval.
#[derive(Debug)]
pub struct SeedSource {
    random: std::fs::File,
    given: BTreeSet<u64>,
}

impl SeedSource {
    pub fn open() -> std::io::Result<Self> {
        Ok(SeedSource {
            random: std::fs::File::open("/dev/urandom")?,
            given: BTreeSet::new(),
        })
    }

    /// 64 random bits (for the secret order of timed calls and the draw of compared ones).
    pub fn random_u64(&mut self) -> std::io::Result<u64> {
        let mut bytes = [0u8; 8];
        self.random.read_exact(&mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    /// A fresh seed, distinct from every seed this source gave before.
    pub fn next_seed(&mut self) -> std::io::Result<u64> {
        loop {
            let mut bytes = [0u8; 8];
            self.random.read_exact(&mut bytes)?;
            let seed = u64::from_le_bytes(bytes) & SEED_MASK;
            if self.given.insert(seed) {
                return Ok(seed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_distinct_and_fit_numpy() {
        let mut source = SeedSource::open().unwrap();
        let seeds: Vec<u64> = (0..64).map(|_| source.next_seed().unwrap()).collect();
        let distinct: BTreeSet<u64> = seeds.iter().copied().collect();
        assert_eq!(distinct.len(), seeds.len());
        assert!(seeds.iter().all(|&s| s <= SEED_MASK));
    }
}
