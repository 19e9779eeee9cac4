//! Property tests: number/unit parsing and "the parser never panics on arbitrary bytes".

use polyprof::profilers::ncu::units::{normalize_unit, parse_number, to_base};
use polyprof::profilers::ncu::{ParseOptions, parse};
use proptest::prelude::*;

/// `1234567.25` → `1,234,567.25`, as ncu prints it.
fn with_separators(value: u64, frac: Option<u32>) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if let Some(frac) = frac {
        out.push_str(&format!(".{frac:02}"));
    }
    out
}

proptest! {
    #[test]
    fn grouped_numbers_round_trip(value in 0u64..10_000_000_000_000, frac in proptest::option::of(0u32..100)) {
        let text = with_separators(value, frac);
        let expected = value as f64 + frac.map_or(0.0, |f| f64::from(f) / 100.0);
        let parsed = parse_number(&text).unwrap();
        prop_assert!((parsed - expected).abs() <= expected.abs() * 1e-12 + 1e-9, "{text}");
    }

    #[test]
    fn number_parsing_never_panics(text in ".{0,80}") {
        let _ = parse_number(&text);
        let _ = normalize_unit(&text);
        let _ = to_base(1.0, &text);
    }

    #[test]
    fn scaled_units_agree_with_base_units(value in 0.0f64..1e6) {
        let (ns, unit) = to_base(value, "usecond");
        prop_assert_eq!(unit, "ns");
        prop_assert!((ns - value * 1e3).abs() <= 1e-6 * ns.max(1.0));
        let (bytes, unit) = to_base(value, "Gbyte/s");
        prop_assert_eq!(unit, "byte/s");
        prop_assert!((bytes - value * 1e9).abs() <= 1e-6 * bytes.max(1.0));
    }

    #[test]
    fn parser_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse(&bytes, &ParseOptions::default());
    }

    #[test]
    fn parser_never_panics_on_mangled_real_output(cut in 0usize..46_000, noise in proptest::collection::vec(any::<u8>(), 0..64), at in 0usize..46_000) {
        let mut bytes = include_bytes!("../fixtures/ncu-h200/raw_page.stdout").to_vec();
        let at = at.min(bytes.len());
        bytes.splice(at..at, noise);
        bytes.truncate(cut.min(bytes.len()));
        let parsed = parse(&bytes, &ParseOptions::default());
        // Whatever survived carries the profiler's name.
        prop_assert!(parsed.kernels.iter().all(|k| k.profiler == "ncu"));
    }
}
