//! The one duration syntax of every flag: `30s`, `1m`, `500us`, `1h30m`, `1d12h`, `0.5us`
//! (humantime's units, plus a decimal number before a single unit), or a bare number in the
//! flag's own unit, which its help states (seconds for limits, µs for `diff`'s floors).

use std::time::Duration;

/// The longest duration a flag takes: a week, far beyond any run, and safe to add to an instant.
pub const MAX: Duration = Duration::from_secs(7 * 24 * 3600);

/// The unit of a bare number, as each flag's help states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bare {
    Seconds,
    Micros,
}

impl Bare {
    fn factor_s(self) -> f64 {
        match self {
            Bare::Seconds => 1.0,
            Bare::Micros => 1e-6,
        }
    }
}

/// `text` as a duration from 0 to [`MAX`], a bare number read in `bare` units.
pub fn parse(text: &str, bare: Bare) -> Result<Duration, String> {
    parse_up_to(text, bare, MAX, "7d (a week)")
}

/// An age (`cache expire --older-than`): a bare number is seconds, up to ten years.
pub fn age(text: &str) -> Result<Duration, String> {
    parse_up_to(
        text,
        Bare::Seconds,
        Duration::from_secs(3_650 * 86_400),
        "3650d (ten years)",
    )
}

fn parse_up_to(text: &str, bare: Bare, max: Duration, max_text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    let bad = || {
        format!(
            "`{text}` is not a duration: write a number with a unit (`30s`, `1m`, `500us`, `1h30m`)"
        )
    };
    if trimmed.is_empty() {
        return Err(bad());
    }
    let secs = if let Ok(number) = trimmed.parse::<f64>() {
        number * bare.factor_s()
    } else if let Ok(d) = humantime::parse_duration(&trimmed.replace('µ', "u")) {
        d.as_secs_f64()
    } else {
        // A decimal before one unit (`0.5us`, `1.5h`), which humantime reads only whole.
        let split = trimmed
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (number, unit) = trimmed.split_at(split);
        let number: f64 = number.parse().map_err(|_| bad())?;
        let unit = humantime::parse_duration(&format!("1{}", unit.trim().replace('µ', "u")))
            .map_err(|_| bad())?;
        number * unit.as_secs_f64()
    };
    if !(0.0..=max.as_secs_f64()).contains(&secs) {
        return Err(format!("`{text}` is out of range: give 0 to {max_text}"));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("`{text}`: {e}"))
}

/// A duration whose bare number is seconds (every limit, grace and poll interval).
pub fn seconds(text: &str) -> Result<Duration, String> {
    parse(text, Bare::Seconds)
}

/// A duration whose bare number is microseconds (`diff --min-change`, `--min-duration`).
pub fn micros(text: &str) -> Result<Duration, String> {
    parse(text, Bare::Micros)
}

/// `batch --time`: Slurm's own spellings pass as they are (a bare number is minutes, as sbatch
/// reads it; `MM:SS`, `HH:MM:SS`, `D-HH[:MM[:SS]]`); a duration (`90s`, `1h30m`) becomes
/// `D-HH:MM:SS`, rounded up to a whole second. Both Slurm and Ray read the result.
pub fn slurm_time(text: &str) -> Result<String, String> {
    let trimmed = text.trim();
    let slurm_form = !trimmed.is_empty()
        && trimmed
            .chars()
            .all(|c| c.is_ascii_digit() || c == ':' || c == '-');
    if slurm_form {
        return Ok(trimmed.to_string());
    }
    let limit = parse(trimmed, Bare::Seconds)?;
    let mut secs = limit.as_secs();
    if limit.subsec_nanos() > 0 {
        secs += 1;
    }
    if secs == 0 {
        return Err("a time limit of 0 would stop every job as it starts".into());
    }
    let (d, h, m, s) = (
        secs / 86_400,
        secs % 86_400 / 3_600,
        secs % 3_600 / 60,
        secs % 60,
    );
    Ok(format!("{d}-{h:02}:{m:02}:{s:02}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_syntax_with_each_flags_bare_unit() {
        for bare in [Bare::Seconds, Bare::Micros] {
            assert_eq!(parse("30s", bare), Ok(Duration::from_secs(30)));
            assert_eq!(parse("1m", bare), Ok(Duration::from_secs(60)));
            assert_eq!(parse("500us", bare), Ok(Duration::from_micros(500)));
            assert_eq!(parse("500µs", bare), Ok(Duration::from_micros(500)));
            assert_eq!(parse("1h30m", bare), Ok(Duration::from_secs(5_400)));
            assert_eq!(parse("1d12h", bare), Ok(Duration::from_secs(129_600)));
            assert_eq!(parse("0.5us", bare), Ok(Duration::from_nanos(500)));
            assert_eq!(parse("1.5s", bare), Ok(Duration::from_millis(1_500)));
        }
        assert_eq!(seconds("30"), Ok(Duration::from_secs(30)));
        assert_eq!(seconds("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(micros("2"), Ok(Duration::from_micros(2)));
    }

    #[test]
    fn refuses_what_is_no_duration_or_out_of_range() {
        for bad in ["", "abc", "5 parsecs", "-1s", "-1", "s", "8d", "1e9", "nan"] {
            let err = seconds(bad).unwrap_err();
            assert!(err.contains(bad.trim()), "{bad}: {err}");
        }
    }

    #[test]
    fn slurm_time_keeps_slurm_forms_and_converts_durations() {
        assert_eq!(slurm_time("30").as_deref(), Ok("30"));
        assert_eq!(slurm_time("1:00:00").as_deref(), Ok("1:00:00"));
        assert_eq!(slurm_time("2-12").as_deref(), Ok("2-12"));
        assert_eq!(slurm_time("30s").as_deref(), Ok("0-00:00:30"));
        assert_eq!(slurm_time("1m").as_deref(), Ok("0-00:01:00"));
        assert_eq!(slurm_time("1h30m").as_deref(), Ok("0-01:30:00"));
        assert_eq!(slurm_time("500us").as_deref(), Ok("0-00:00:01"));
        assert!(slurm_time("0s").is_err());
        assert!(slurm_time("soon").is_err());
    }
}
