//! Numbers and units as ncu prints them, normalized to base units.
//!
//! Live `--csv` runs print base units (`ns`, `byte`, `hz`) with thousands separators; `--import`
//! of a report and older versions auto-scale (`us`, `usecond`, `Mbyte`, `Kbyte/block`, `Gbyte/s`,
//! `Ghz`, `Tbyte/s`). Every value is brought back to the base unit here, so `"6.75" us` and
//! `"6,750" ns` compare equal. Byte prefixes are decimal (1 Kbyte = 1000 byte), as in ncu's SI
//! scaling.

use std::borrow::Cow;

/// A number as ncu prints it: `"59,744"`, `"3,196,392,967.19"`, `"-1.5e+03"`. Thousands
/// separators are dropped; `n/a`, empty cells and text give `None`.
pub fn parse_number(text: &str) -> Option<f64> {
    parse_number_bytes(text.as_bytes())
}

/// [`parse_number`] on raw cell bytes: the common shapes never need a UTF-8 check or a copy.
pub fn parse_number_bytes(bytes: &[u8]) -> Option<f64> {
    let bytes = bytes.trim_ascii();
    if bytes.is_empty() || bytes.len() > 64 {
        return None;
    }
    // Fast reject of words (`n/a`, `PolicySpread`, `(256, 1, 1)`): a number starts with a digit,
    // a sign or a dot.
    let first = bytes[0];
    if !(first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.') {
        return None;
    }
    if let Some(value) = fast_decimal(bytes) {
        return Some(value);
    }
    general_number(std::str::from_utf8(bytes).ok()?)
}

/// Exponents, long mantissas and the like: the standard library decides.
fn general_number(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    if !text.contains(',') {
        return text.parse::<f64>().ok().filter(|v| v.is_finite());
    }
    // Thousands separators: only between digits, so `1,2,3` style garbage is still rejected when
    // the groups are not three digits long.
    if !valid_grouping(text) {
        return None;
    }
    let mut buffer = [0u8; 64];
    let mut len = 0;
    for &b in bytes {
        if b != b',' {
            buffer[len] = b;
            len += 1;
        }
    }
    std::str::from_utf8(&buffer[..len])
        .ok()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

/// Exact powers of ten up to 10^22 (all representable in f64).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The common shape `-?d{1,3}(,ddd)*(.d+)?` or plain digits, parsed without allocation. Exact:
/// when the digits fit 2^53 and there are at most 22 decimals, one IEEE division of two exact
/// values is the correctly rounded result (Clinger's fast path). Anything else → `None`, and the
/// general path decides.
fn fast_decimal(bytes: &[u8]) -> Option<f64> {
    let (negative, digits) = match bytes[0] {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let mut mantissa: u64 = 0;
    let mut count = 0usize; // digits in the current thousands group
    let mut grouped = false;
    let mut integer_digits = 0usize;
    let mut i = 0;
    while i < digits.len() {
        match digits[i] {
            b @ b'0'..=b'9' => {
                mantissa = mantissa.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                count += 1;
                integer_digits += 1;
            }
            b',' => {
                // First group 1–3 digits, later groups exactly 3.
                if count == 0 || count > 3 || (grouped && count != 3) {
                    return None;
                }
                grouped = true;
                count = 0;
            }
            b'.' => break,
            _ => return None,
        }
        i += 1;
    }
    if integer_digits == 0 || (grouped && count != 3) {
        return None;
    }
    let mut decimals = 0usize;
    if i < digits.len() {
        // digits[i] == b'.'
        i += 1;
        if i == digits.len() {
            return None;
        }
        while i < digits.len() {
            let b = digits[i];
            if !b.is_ascii_digit() {
                return None;
            }
            mantissa = mantissa.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            decimals += 1;
            i += 1;
        }
    }
    if mantissa > (1u64 << 53) || decimals >= POW10.len() {
        return None;
    }
    let value = mantissa as f64 / POW10[decimals];
    Some(if negative { -value } else { value })
}

/// `1,234,567.5` is grouped correctly; `12,34` is not (a European decimal comma, say).
fn valid_grouping(text: &str) -> bool {
    let unsigned = text.trim_start_matches(['-', '+']);
    let integer = unsigned.split(['.', 'e', 'E']).next().unwrap_or("");
    if integer.contains(',') != unsigned.contains(',') {
        return false; // a comma after the decimal point
    }
    let mut groups = integer.split(',');
    let head = groups.next().unwrap_or("");
    if head.is_empty() || head.len() > 3 {
        return false;
    }
    groups.all(|g| g.len() == 3 && g.bytes().all(|b| b.is_ascii_digit()))
}

/// A unit normalized to its base: multiply the value by `factor` to express it in `unit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BaseUnit {
    pub unit: &'static str,
    pub factor: f64,
}

/// Normalize ncu's unit spelling. Unknown units come back unchanged with factor 1 (as `None`
/// here; the caller keeps the original text).
pub fn normalize_unit(unit: &str) -> Option<BaseUnit> {
    let unit = unit.trim();
    if unit.is_empty() {
        return None;
    }
    if let Some(found) = time_unit(unit) {
        return Some(found);
    }
    if let Some((numerator, denominator)) = unit.split_once('/') {
        // `Gbyte/s`, `Kbyte/block`, `inst/cycle`, `cycle/usecond`, `%/byte`.
        let num = scaled_base(numerator)?;
        if let Some(per_time) = time_unit(denominator) {
            // per ns → per second: value / (seconds per denominator unit).
            let seconds = per_time.factor * 1e-9;
            return Some(BaseUnit {
                unit: per_second_name(num.unit)?,
                factor: num.factor / seconds,
            });
        }
        let den = scaled_base(denominator)?;
        let name = compound_name(num.unit, den.unit)?;
        return Some(BaseUnit {
            unit: name,
            factor: num.factor / den.factor,
        });
    }
    scaled_base(unit)
}

/// Apply [`normalize_unit`]: the value in base units and the unit text to store. Units polyprof
/// does not know are kept verbatim with the value untouched.
pub fn to_base(value: f64, unit: &str) -> (f64, Cow<'static, str>) {
    match normalize_unit(unit) {
        Some(base) => (value * base.factor, Cow::Borrowed(base.unit)),
        None => (value, Cow::Owned(unit.trim().to_string())),
    }
}

/// Time units, normalized to nanoseconds.
fn time_unit(unit: &str) -> Option<BaseUnit> {
    let factor = match unit {
        "ns" | "nsecond" | "nsec" | "nanosecond" => 1.0,
        "us" | "usecond" | "usec" | "microsecond" | "µs" => 1e3,
        "ms" | "msecond" | "msec" | "millisecond" => 1e6,
        "s" | "second" | "sec" => 1e9,
        _ => return None,
    };
    Some(BaseUnit { unit: "ns", factor })
}

/// Base units ncu scales with SI prefixes, and other units it prints as is.
const BASES: &[&str] = &[
    "byte",
    "hz",
    "cycle",
    "inst",
    "warp",
    "sector",
    "request",
    "block",
    "thread",
    "register",
    "wavefront",
    "transaction",
    "pass",
    "branches",
    "cluster",
    "SM",
    "%",
];

/// `Mbyte` → byte × 1e6; `Ghz` → hz × 1e9; `cycle` → cycle × 1.
fn scaled_base(unit: &str) -> Option<BaseUnit> {
    let unit = unit.trim();
    // Exact base first, so `SM` is not read as a prefixed `M`.
    if let Some(base) = BASES.iter().find(|b| b.eq_ignore_ascii_case(unit)) {
        return Some(BaseUnit {
            unit: base,
            factor: 1.0,
        });
    }
    let mut chars = unit.chars();
    let prefix = chars.next()?;
    let rest = chars.as_str();
    let factor = match prefix {
        'k' | 'K' => 1e3,
        'M' => 1e6,
        'G' | 'g' => 1e9,
        'T' | 't' => 1e12,
        'P' => 1e15,
        _ => return None,
    };
    let base = BASES
        .iter()
        .find(|b| b.eq_ignore_ascii_case(rest) && **b != "%" && **b != "SM")?;
    Some(BaseUnit { unit: base, factor })
}

fn per_second_name(numerator: &str) -> Option<&'static str> {
    Some(match numerator {
        "byte" => "byte/s",
        "cycle" => "cycle/s",
        "inst" => "inst/s",
        "sector" => "sector/s",
        "request" => "request/s",
        "warp" => "warp/s",
        _ => return None,
    })
}

fn compound_name(numerator: &str, denominator: &str) -> Option<&'static str> {
    Some(match (numerator, denominator) {
        ("byte", "block") => "byte/block",
        ("byte", "cycle") => "byte/cycle",
        ("byte", "SM") => "byte/SM",
        ("byte", "request") => "byte/request",
        ("byte", "sector") => "byte/sector",
        ("inst", "cycle") => "inst/cycle",
        ("inst", "warp") => "inst/warp",
        ("warp", "cycle") => "warp/cycle",
        ("sector", "request") => "sector/request",
        ("register", "thread") => "register/thread",
        ("cycle", "inst") => "cycle/inst",
        ("%", "byte") => "%/byte",
        ("%", "register") => "%/register",
        ("%", "block") => "%/block",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approx(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn numbers_with_separators_and_words() {
        assert_eq!(parse_number("59,744"), Some(59_744.0));
        assert_eq!(parse_number("3,196,392,967.19"), Some(3_196_392_967.19));
        assert_eq!(parse_number("58.752000"), Some(58.752));
        assert_eq!(parse_number("-1.5e+03"), Some(-1500.0));
        assert_eq!(parse_number("0"), Some(0.0));
        for word in [
            "n/a",
            "",
            "PolicySpread",
            "(256, 1, 1)",
            "12,34",
            "1,2345",
            "1.5,000",
        ] {
            assert_eq!(parse_number(word), None, "{word}");
        }
        assert_eq!(parse_number("inf"), None);
        // Fast path and general path agree on the shapes the fast path takes.
        for text in [
            "0.1",
            "1,234.5",
            "123,456,789.123",
            "9007199254740993",
            "1.000000000000000000001",
        ] {
            let general: f64 = text.replace(',', "").parse().unwrap();
            assert_eq!(parse_number(text), Some(general), "{text}");
        }
        assert_eq!(parse_number("1e999"), None);
    }

    #[test]
    fn units_seen_in_fixtures_normalize_to_base() {
        let cases = [
            ("ns", 1.0, "ns"),
            ("us", 1e3, "ns"),
            ("usecond", 1e3, "ns"),
            ("msecond", 1e6, "ns"),
            ("ms", 1e6, "ns"),
            ("byte", 1.0, "byte"),
            ("Kbyte", 1e3, "byte"),
            ("Mbyte", 1e6, "byte"),
            ("Kbyte/block", 1e3, "byte/block"),
            ("byte/s", 1.0, "byte/s"),
            ("Gbyte/s", 1e9, "byte/s"),
            ("Tbyte/s", 1e12, "byte/s"),
            ("hz", 1.0, "hz"),
            ("Ghz", 1e9, "hz"),
            ("Mhz", 1e6, "hz"),
            ("%", 1.0, "%"),
            ("cycle", 1.0, "cycle"),
            ("Kcycle", 1e3, "cycle"),
            ("inst/cycle", 1.0, "inst/cycle"),
            ("register/thread", 1.0, "register/thread"),
            ("SM", 1.0, "SM"),
            ("cycle/usecond", 1e6, "cycle/s"),
            ("byte/cycle", 1.0, "byte/cycle"),
            ("%/byte", 1.0, "%/byte"),
        ];
        for (unit, factor, base) in cases {
            let got = normalize_unit(unit).unwrap_or_else(|| panic!("{unit}"));
            assert!(approx(got.factor, factor), "{unit}: {got:?}");
            assert_eq!(got.unit, base, "{unit}");
        }
        assert_eq!(normalize_unit(""), None);
        assert_eq!(normalize_unit("furlong"), None);
        assert_eq!(to_base(2.0, "furlong"), (2.0, "furlong".into()));
        let (value, unit) = to_base(6.75, "us");
        assert!(approx(value, 6750.0));
        assert_eq!(unit, "ns");
    }
}
