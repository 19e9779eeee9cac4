//! The memory levels of a hierarchical roofline (DRAM, L2, L1), as ncu's own
//! `SpeedOfLight_Hierarchical*RooflineChart` sections measure them: the traffic of each level and
//! its roof, both from the capture itself. L2 is the L2→L1 read traffic
//! (`l1tex__m_xbar2l1tex_read_bytes`) against its peak per cycle at the L2 clock
//! (`lts__cycles_elapsed.avg.per_second`); L1 is the global/local writeback traffic
//! (`l1tex__lsu_writeback_active_mem_lg` cycles × 128 bytes) against its peak at the L1 clock.
//! A record has a level only when the capture holds its bytes (`--metrics` with these names, or
//! ncu's `roofline` section set); DRAM's roof is the device table's.

use crate::model::record::KernelRecord;

/// A memory level of the hierarchical roofline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Dram,
    L2,
    L1,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Dram, Level::L2, Level::L1];

    pub fn label(&self) -> &'static str {
        match self {
            Level::Dram => "DRAM",
            Level::L2 => "L2",
            Level::L1 => "L1",
        }
    }

    pub fn id(&self) -> &'static str {
        match self {
            Level::Dram => "dram",
            Level::L2 => "l2",
            Level::L1 => "l1",
        }
    }
}

/// How ncu names one level's traffic: bytes (or the cycles a 128-byte writeback takes), its
/// peak per cycle, and the clock of the unit.
struct LevelMetrics {
    level: Level,
    base: &'static str,
    bytes_per_unit: f64,
    clock: &'static str,
}

const LEVELS: [LevelMetrics; 2] = [
    LevelMetrics {
        level: Level::L2,
        base: "l1tex__m_xbar2l1tex_read_bytes.sum",
        bytes_per_unit: 1.0,
        clock: "lts__cycles_elapsed.avg.per_second",
    },
    LevelMetrics {
        level: Level::L1,
        base: "l1tex__lsu_writeback_active_mem_lg.sum",
        bytes_per_unit: 128.0,
        clock: "l1tex__cycles_elapsed.avg.per_second",
    },
];

/// One level's traffic in a launch: bytes, and its roof in GB/s when the capture has the peak.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelTraffic {
    pub level: Level,
    pub bytes: f64,
    pub peak_gbs: Option<f64>,
}

/// The cache levels (L2, L1) a record has the bytes of, with their roofs.
pub fn cache_levels(record: &KernelRecord) -> Vec<LevelTraffic> {
    LEVELS
        .iter()
        .filter_map(|m| {
            let per = |suffix: &str| record.metric(&format!("{}{suffix}", m.base));
            let bytes = per("")
                .or_else(|| {
                    let per_second = per(".per_second")?;
                    Some(per_second * record.duration_ns? / 1e9)
                })?
                .max(0.0)
                * m.bytes_per_unit;
            let peak_gbs = match (per(".peak_sustained"), record.metric(m.clock)) {
                (Some(per_cycle), Some(hz)) if per_cycle > 0.0 && hz > 0.0 => {
                    Some(per_cycle * m.bytes_per_unit * hz / 1e9)
                }
                _ => None,
            };
            Some(LevelTraffic {
                level: m.level,
                bytes,
                peak_gbs,
            })
        })
        .collect()
}

/// A level's share of its roof, %: bytes per ns (GB/s) over the roof.
pub fn share_pct(traffic: &LevelTraffic, gpu_time_ns: Option<f64>) -> Option<f64> {
    let time = gpu_time_ns.filter(|t| *t > 0.0)?;
    let peak = traffic.peak_gbs?;
    Some(100.0 * traffic.bytes / time / peak)
}

/// How a level's roof is made from the capture, in ncu's metric names (`… .peak_sustained ×
/// clock`), for the charts' notes; `None` for DRAM, whose roof is the device table's.
pub fn peak_metrics(level: Level) -> Option<String> {
    let m = LEVELS.iter().find(|m| m.level == level)?;
    let per_unit = match m.bytes_per_unit > 1.0 {
        true => format!(" × {} bytes", m.bytes_per_unit),
        false => String::new(),
    };
    Some(format!("{}.peak_sustained{per_unit} × {}", m.base, m.clock))
}

/// Every metric name a capture needs for the cache levels (for `--metrics`).
pub fn metric_names() -> Vec<String> {
    LEVELS
        .iter()
        .flat_map(|m| {
            [
                m.base.to_string(),
                format!("{}.peak_sustained", m.base),
                m.clock.to_string(),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::{Metric, MetricValue};

    #[test]
    fn levels_come_from_the_capture_bytes_and_roofs() {
        let mut record = KernelRecord {
            duration_ns: Some(1000.0),
            ..Default::default()
        };
        let mut put = |name: &str, value: f64| {
            record.metrics.insert(
                name.into(),
                Metric {
                    value: MetricValue::Number(value),
                    unit: "".into(),
                },
            );
        };
        put("l1tex__m_xbar2l1tex_read_bytes.sum", 2.0e6);
        put("l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained", 5120.0);
        put("lts__cycles_elapsed.avg.per_second", 1.0e9);
        put("l1tex__lsu_writeback_active_mem_lg.sum.per_second", 1.0e10);
        let levels = cache_levels(&record);
        assert_eq!(levels.len(), 2);
        assert_eq!(levels[0].level, Level::L2);
        assert_eq!(levels[0].peak_gbs, Some(5120.0));
        let share = share_pct(&levels[0], Some(1000.0)).unwrap();
        assert!((share - 2000.0 / 5120.0 * 100.0).abs() < 1e-9, "{share}");
        // L1 from its rate × duration, 128 bytes a writeback cycle, no roof captured.
        assert_eq!(levels[1].level, Level::L1);
        assert!((levels[1].bytes - 1.0e10 * 1e-6 * 128.0).abs() < 1e-3);
        assert_eq!(share_pct(&levels[1], Some(1000.0)), None);
    }
}
