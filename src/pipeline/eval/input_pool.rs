//! Fresh inputs for the timed calls: how many distinct input sets a block's pool holds, the
//! secret order its calls cycle through them in, which calls are compared (drawn after the block
//! ran), and the compared calls' arrays cut out of the block's answer. Pure helpers of
//! `session`, fed with the orchestrator's own randomness (`/dev/urandom`).

use serde_json::Value;

use crate::pipeline::eval::spec::Device;

/// Host memory the pool may take (bytes), on both workers together: the trusted worker holds
/// three copies of each set's inputs (pristine, handout, the reference's) and its reference
/// outputs, the candidate one copy of the inputs.
pub const POOL_MEMORY_BYTES: u64 = 1 << 30;
/// Fewest sets a pool holds (memory allowing or not): with one, a cache by content hits on
/// every call but the first.
pub const MIN_POOL: u32 = 2;

/// Timed calls compared per candidate block: a fifth of them, at least 3 (all when fewer).
/// A candidate wrong on a share `f` of its calls escapes `k` draws in each of `B` blocks with
/// probability `(1 - f)^(k·B)`: at the defaults (50 calls, 5 blocks, 10 draws each) 0.5 % for
/// f = 0.1, 2e-23 for f = 0.5. 0 on CUDA, whose timing still checks the last call of one trial.
pub fn timed_checks(device: Device, repeat: u32) -> u32 {
    match device {
        Device::Cpu => repeat.min(repeat.div_ceil(5).max(3)),
        Device::Cuda => 0,
    }
}

/// Input sets in one block's pool: one per timed call when memory allows (no set is used
/// twice in a block, so no cache by content or address can hit), else as many as
/// `POOL_MEMORY_BYTES` holds, never fewer than `MIN_POOL`. `set_bytes`: one set's inputs and
/// reference outputs.
pub fn pool_size(repeat: u32, input_bytes: u64, output_bytes: u64) -> u32 {
    let per_set = (4 * input_bytes + output_bytes).max(1);
    let fits = u32::try_from(POOL_MEMORY_BYTES / per_set).unwrap_or(u32::MAX);
    repeat.min(fits).max(MIN_POOL.min(repeat.max(1)))
}

/// A uniform integer below `n` (n > 0) from `random`, without modulo bias.
fn below(n: u64, random: &mut dyn FnMut() -> u64) -> u64 {
    let zone = u64::MAX - u64::MAX % n;
    loop {
        let r = random();
        if r < zone {
            return r % n;
        }
    }
}

fn shuffle<T>(items: &mut [T], random: &mut dyn FnMut() -> u64) {
    for i in (1..items.len()).rev() {
        let j = below(i as u64 + 1, random) as usize;
        items.swap(i, j);
    }
}

/// The pool position each of `repeat` timed calls runs on: every set once per cycle, each cycle
/// in a fresh random order.
pub fn secret_order(pool: u32, repeat: u32, random: &mut dyn FnMut() -> u64) -> Vec<u32> {
    let mut order = Vec::with_capacity(repeat as usize);
    while order.len() < repeat as usize {
        let mut cycle: Vec<u32> = (0..pool.max(1)).collect();
        shuffle(&mut cycle, random);
        order.extend(cycle);
    }
    order.truncate(repeat as usize);
    order
}

/// `count` distinct call positions below `calls`, uniformly at random, in increasing order.
pub fn draw(calls: u32, count: u32, random: &mut dyn FnMut() -> u64) -> Vec<u32> {
    let mut positions: Vec<u32> = (0..calls).collect();
    shuffle(&mut positions, random);
    positions.truncate(count.min(calls) as usize);
    positions.sort_unstable();
    positions
}

/// `wires` (arrays of a worker's answer, `bytes` ones pointing into `payload`) copied into
/// `into` as a payload of their own: each `bytes` array's bytes appended and its offset
/// rewritten; other arrays unchanged. `None` when an array's bytes run past the payload.
pub fn cut_arrays(wires: &Value, payload: &[u8], into: &mut Vec<u8>) -> Option<Value> {
    let Value::Array(items) = wires else {
        return Some(wires.clone());
    };
    let mut cut = Vec::with_capacity(items.len());
    for wire in items {
        let mut wire = wire.clone();
        if wire.get("transport").and_then(Value::as_str) == Some("bytes") {
            let offset = usize::try_from(wire.get("offset")?.as_u64()?).ok()?;
            let size = usize::try_from(wire.get("nbytes")?.as_u64()?).ok()?;
            let bytes = payload.get(offset..offset.checked_add(size)?)?;
            wire["offset"] = Value::from(into.len());
            into.extend_from_slice(bytes);
        }
        cut.push(wire);
    }
    Some(Value::Array(cut))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A deterministic stand-in for `/dev/urandom` (splitmix64).
    fn counter(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed;
        move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
    }

    #[test]
    fn checks_per_block_are_a_fifth_at_least_three() {
        assert_eq!(timed_checks(Device::Cpu, 50), 10);
        assert_eq!(timed_checks(Device::Cpu, 3), 3);
        assert_eq!(timed_checks(Device::Cpu, 2), 2);
        assert_eq!(timed_checks(Device::Cpu, 12), 3);
        assert_eq!(timed_checks(Device::Cuda, 50), 0);
    }

    #[test]
    fn the_pool_holds_one_set_per_call_unless_memory_runs_out() {
        assert_eq!(pool_size(50, 8192, 8192), 50);
        // 64 MiB of inputs a set: four copies fit four times in the budget.
        assert_eq!(pool_size(50, 64 << 20, 64 << 20), 3);
        // Never fewer than two, whatever the size.
        assert_eq!(pool_size(50, 1 << 40, 0), 2);
        assert_eq!(pool_size(1, 1 << 40, 0), 1);
    }

    #[test]
    fn every_set_is_used_once_per_cycle() {
        let mut random = counter(7);
        let order = secret_order(4, 10, &mut random);
        assert_eq!(order.len(), 10);
        for cycle in order.chunks(4).take(2) {
            let mut sorted = cycle.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3]);
        }
        // Another draw gives another order.
        assert_ne!(secret_order(4, 10, &mut random), order);
    }

    #[test]
    fn draws_are_distinct_positions_spread_over_the_block() {
        let mut random = counter(1);
        let mut seen = vec![0u32; 20];
        for _ in 0..2000 {
            let drawn = draw(20, 4, &mut random);
            assert_eq!(drawn.len(), 4);
            assert!(drawn.windows(2).all(|w| w[0] < w[1]));
            for p in drawn {
                seen[p as usize] += 1;
            }
        }
        // Each position drawn about 2000·4/20 = 400 times, the last no more than the others.
        assert!(seen.iter().all(|&n| (300..500).contains(&n)), "{seen:?}");
        assert_eq!(draw(3, 10, &mut random), [0, 1, 2]);
    }

    #[test]
    fn arrays_are_cut_out_with_their_offsets_rewritten() {
        let payload: Vec<u8> = (0..16).collect();
        let wires = json!([
            {"transport": "bytes", "offset": 8, "nbytes": 4},
            {"transport": "value", "value": 3},
            {"transport": "bytes", "offset": 2, "nbytes": 2},
        ]);
        let mut into = vec![99];
        let cut = cut_arrays(&wires, &payload, &mut into).unwrap();
        assert_eq!(into, [99, 8, 9, 10, 11, 2, 3]);
        assert_eq!(cut[0]["offset"], 1);
        assert_eq!(cut[1]["value"], 3);
        assert_eq!(cut[2]["offset"], 5);
        let past = json!([{"transport": "bytes", "offset": 14, "nbytes": 4}]);
        assert!(cut_arrays(&past, &payload, &mut into).is_none());
    }
}
