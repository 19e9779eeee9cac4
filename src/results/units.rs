//! Human-readable numbers for tables: times auto-scaled from ns, SI bytes, rates.

/// `850 ns`, `58.78 us`, `1.234 ms`, `2.500 s` (4 significant digits).
pub fn time_ns(ns: f64) -> String {
    let abs = ns.abs();
    let (value, unit) = if abs < 1e3 {
        (ns, "ns")
    } else if abs < 1e6 {
        (ns / 1e3, "us")
    } else if abs < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    format!("{} {unit}", significant(value, 4))
}

/// `189.1 MB` (powers of 1000, like GB/s).
pub fn bytes(value: f64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut scaled = value;
    let mut index = 0;
    while scaled.abs() >= 1000.0 && index + 1 < units.len() {
        scaled /= 1000.0;
        index += 1;
    }
    if index == 0 {
        format!("{value:.0} B")
    } else {
        format!("{} {}", significant(scaled, 4), units[index])
    }
}

/// A rate or count with one decimal (`3216.3`), or 3 significant digits below 10.
pub fn rate(value: f64) -> String {
    if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        significant(value, 3)
    }
}

/// A percentage with one decimal.
pub fn pct(value: f64) -> String {
    format!("{value:.1}")
}

/// `value` with `digits` significant digits, no exponent.
pub fn significant(value: f64, digits: i32) -> String {
    if value == 0.0 {
        // Also turns -0 (a sum of nothing, scaled) into 0.
        return "0".to_string();
    }
    if !value.is_finite() {
        return format!("{value}");
    }
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).max(0) as usize;
    format!("{value:.decimals$}")
}

/// `-` for a missing value.
pub fn or_dash(value: Option<String>) -> String {
    value.unwrap_or_else(|| "-".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(time_ns(850.0), "850.0 ns");
        assert_eq!(time_ns(58_784.0), "58.78 us");
        assert_eq!(time_ns(415_840.0), "415.8 us");
        assert_eq!(time_ns(2.5e9), "2.500 s");
        assert_eq!(bytes(189_068_288.0), "189.1 MB");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(rate(3216.34), "3216.3");
        assert_eq!(rate(0.4567), "0.457");
        assert_eq!(significant(0.0, 3), "0");
    }
}
