//! The one table of the kernel record's normalized numbers: name, base unit and how to read
//! each. The record's merge ([`KernelRecord::fill_missing`]), the call-path attributes, the CSV
//! columns, `polyprof parse`'s table and the field list in docs/reports.md all read it, so a
//! new normalized field is one line here (and one field of [`KernelRecord`]).

use crate::model::record::KernelRecord;

/// One normalized number of a [`KernelRecord`].
#[derive(Clone, Copy)]
pub struct NormalizedField {
    /// The record's field: also its JSON key, its CSV column and its call-path attribute.
    pub name: &'static str,
    /// Base unit: `ns`, `byte`, `%`, or empty for a count.
    pub unit: &'static str,
    /// How to read it (docs/reports.md shows this text).
    pub meaning: &'static str,
    /// Short column title of `polyprof parse`'s table.
    pub label: &'static str,
    /// A whole number (a count, bytes of a launch resource), shown without decimals.
    pub integer: bool,
    /// Carried as an attribute of the kernel's call-path event. `start_ns`, `duration_ns` and
    /// `dram_bytes` are not: the event holds them as its own start, GPU time and bytes.
    pub attribute: bool,
    /// The value as reports read it (`dram_bytes`: read + write when no total was reported).
    pub get: fn(&KernelRecord) -> Option<f64>,
    /// Take `other`'s value when `record` has none (two pages or files of one launch).
    pub fill: fn(&mut KernelRecord, &KernelRecord),
}

impl std::fmt::Debug for NormalizedField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NormalizedField")
            .field("name", &self.name)
            .field("unit", &self.unit)
            .finish_non_exhaustive()
    }
}

macro_rules! field {
    ($name:ident, $unit:literal, $label:literal, integer: $integer:literal, attribute: $attribute:literal, $meaning:literal) => {
        field!($name, $unit, $label, integer: $integer, attribute: $attribute, $meaning,
            |r: &KernelRecord| r.$name.map(|v| v as f64))
    };
    ($name:ident, $unit:literal, $label:literal, integer: $integer:literal, attribute: $attribute:literal, $meaning:literal, $get:expr) => {
        NormalizedField {
            name: stringify!($name),
            unit: $unit,
            meaning: $meaning,
            label: $label,
            integer: $integer,
            attribute: $attribute,
            get: $get,
            fill: |record: &mut KernelRecord, other: &KernelRecord| {
                if record.$name.is_none() {
                    record.$name = other.$name;
                }
            },
        }
    };
}

/// Every normalized number of a record, in the record's order.
pub const NORMALIZED_FIELDS: &[NormalizedField] = &[
    field!(start_ns, "ns", "start ns", integer: false, attribute: false,
        "start on the profiler's clock, when it records one"),
    field!(duration_ns, "ns", "time ns", integer: false, attribute: false,
        "GPU time of all `calls` launches"),
    field!(dram_bytes_read, "byte", "DRAM read B", integer: false, attribute: true,
        "bytes read from DRAM (device memory)"),
    field!(dram_bytes_write, "byte", "DRAM write B", integer: false, attribute: true,
        "bytes written to DRAM"),
    field!(dram_bytes, "byte", "DRAM B", integer: false, attribute: false,
        "total DRAM traffic; read + write when the profiler reports only those",
        KernelRecord::total_dram_bytes),
    field!(achieved_occupancy_pct, "%", "occ %", integer: false, attribute: true,
        "active warps per SM (or XVE threads) over the maximum, as measured"),
    field!(theoretical_occupancy_pct, "%", "theo %", integer: false, attribute: true,
        "the occupancy the launch's resources allow"),
    field!(sm_throughput_pct, "%", "SM %", integer: false, attribute: true,
        "compute (SM) speed of light, % of peak (ncu minimal preset: the busiest pipe load)"),
    field!(memory_throughput_pct, "%", "mem %", integer: false, attribute: true,
        "memory speed of light, % of peak (ncu: compute-memory, else DRAM)"),
    field!(registers_per_thread, "", "regs", integer: true, attribute: true,
        "registers per thread of the launch"),
    field!(shared_mem_per_block, "byte", "smem B", integer: true, attribute: true,
        "static + dynamic shared memory per block"),
];

/// The field named `name`.
pub fn normalized_field(name: &str) -> Option<&'static NormalizedField> {
    NORMALIZED_FIELDS.iter().find(|f| f.name == name)
}

impl KernelRecord {
    /// Take from `other` (the same launch, seen on another page or file) every identity fact,
    /// normalized number and FLOP count `self` lacks; what `self` has wins. Names, metrics and
    /// rules are the caller's to fold (they differ per profiler).
    pub fn fill_missing(&mut self, other: &KernelRecord) {
        macro_rules! fill {
            ($($f:ident),*) => { $( if self.$f.is_none() { self.$f = other.$f.clone(); } )* };
        }
        fill!(process_name, device, stream, grid, block);
        for field in NORMALIZED_FIELDS {
            (field.fill)(self, other);
        }
        self.flops.fill_missing(&other.flops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_reads_and_fills_its_own_slot() {
        // Distinct values per field, so a getter or filler wired to the wrong slot shows.
        let mut full = KernelRecord::default();
        for (i, field) in NORMALIZED_FIELDS.iter().enumerate() {
            let mut one = KernelRecord::default();
            let mut probe = KernelRecord::default();
            set(&mut probe, field.name, (i + 1) as f64);
            (field.fill)(&mut one, &probe);
            assert_eq!((field.get)(&one), Some((i + 1) as f64), "{}", field.name);
            (field.fill)(&mut full, &probe);
        }
        // Each value landed in its own slot: the JSON keys carry the numbers by name.
        let json = serde_json::to_value(&full).unwrap();
        for (i, field) in NORMALIZED_FIELDS.iter().enumerate() {
            assert_eq!(json[field.name], (i + 1) as f64, "{}", field.name);
        }
        // What the record has wins.
        let mut kept = full.clone();
        kept.fill_missing(&KernelRecord {
            duration_ns: Some(1e9),
            device: Some("other".into()),
            ..Default::default()
        });
        let mut expected = full;
        expected.device = Some("other".into());
        assert_eq!(kept, expected);
    }

    #[test]
    fn dram_bytes_reads_as_read_plus_write_without_a_total() {
        let record = KernelRecord {
            dram_bytes_read: Some(3.0),
            dram_bytes_write: Some(4.0),
            ..Default::default()
        };
        assert_eq!(
            (normalized_field("dram_bytes").unwrap().get)(&record),
            Some(7.0)
        );
        assert!(normalized_field("name").is_none());
    }

    fn set(record: &mut KernelRecord, name: &str, value: f64) {
        let mut json = serde_json::to_value(&*record).unwrap();
        json[name] = serde_json::json!(value as u64);
        *record = serde_json::from_value(json).unwrap();
    }
}
