//! Occupancy from register use, with Mesa's G13 table (`agx_performance.c` @ 11f797d).
//!
//! The table is indexed in 16-bit half registers and is only known for G13 (M1); every report
//! that uses it says so.

use serde::Serialize;

/// The label attached to every occupancy figure from this table.
pub const G13_MODEL_LABEL: &str = "G13 model (Mesa agx_occupancy table @ 11f797d)";

/// (maximum half registers, maximum threads), in Mesa's order.
pub const G13_OCCUPANCY: [(u32, u32); 10] = [
    (104, 1024),
    (112, 896),
    (128, 832),
    (136, 768),
    (144, 704),
    (160, 640),
    (184, 576),
    (208, 512),
    (232, 448),
    (256, 384),
];

/// Maximum threads per core for a register count, as Mesa's
/// `agx_occupancy_for_register_count`: the first row whose limit is ≥ the count.
/// `None` above 256 half registers (the register file holds no more).
pub fn g13_max_threads(half_regs: u32) -> Option<u32> {
    G13_OCCUPANCY
        .iter()
        .find(|(limit, _)| half_regs <= *limit)
        .map(|&(_, threads)| threads)
}

/// Occupancy of a listing under the G13 model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Occupancy {
    pub model: &'static str,
    /// Register high-water mark in half registers.
    pub half_regs: u32,
    /// Maximum threads per core; `None` when the count exceeds the table.
    pub max_threads: Option<u32>,
    /// `max_threads / 1024`, in percent.
    pub percent: Option<f64>,
}

impl Occupancy {
    pub fn g13(half_regs: u32) -> Occupancy {
        let max_threads = g13_max_threads(half_regs);
        Occupancy {
            model: G13_MODEL_LABEL,
            half_regs,
            max_threads,
            percent: max_threads.map(|t| t as f64 / 1024.0 * 100.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_boundaries() {
        assert_eq!(g13_max_threads(0), Some(1024));
        assert_eq!(g13_max_threads(104), Some(1024));
        assert_eq!(g13_max_threads(105), Some(896));
        assert_eq!(g13_max_threads(134), Some(768));
        assert_eq!(g13_max_threads(256), Some(384));
        assert_eq!(g13_max_threads(257), None);
        assert_eq!(Occupancy::g13(134).percent, Some(75.0));
    }
}
