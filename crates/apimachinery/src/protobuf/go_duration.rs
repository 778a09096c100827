//! Go's `time.Duration` text (`1h0m0s`, `1.5s`, `300ms`), the JSON form of `metav1.Duration`. Written
//! here because no maintained crate prints and parses exactly Go's form.

use crate::{Error, Result};

const SECOND: u64 = 1_000_000_000;

/// Go's `Duration.String()` of `nanos`.
pub fn format(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < SECOND {
        let (scaled, unit) = match n {
            0..1_000 => return format!("{sign}{n}ns"),
            1_000..1_000_000 => (fraction(n, 3), "µs"),
            _ => (fraction(n, 6), "ms"),
        };
        return format!("{sign}{scaled}{unit}");
    }
    let seconds = fraction(n % (60 * SECOND), 9);
    let minutes = n / (60 * SECOND);
    match (minutes / 60, minutes % 60) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

/// `value` with `digits` decimals, trailing zeros (and a bare point) dropped: 1500, 3 → `1.5`.
fn fraction(value: u64, digits: u32) -> String {
    let scale = 10u64.pow(digits);
    let whole = value / scale;
    let part = value % scale;
    if part == 0 {
        return whole.to_string();
    }
    let decimals = format!("{part:0width$}", width = digits as usize);
    format!("{whole}.{}", decimals.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`: a sequence of decimal numbers with units ns, us (µs), ms, s, m, h.
pub fn parse(text: &str) -> Result<i64> {
    let invalid = || Error::BadRequest(format!("time: invalid duration {text:?}"));
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let number: f64 = rest[..number_end].parse().map_err(|_| invalid())?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(invalid()),
        };
        rest = &rest[unit_end..];
        total += number * unit;
    }
    if total > i64::MAX as f64 {
        return Err(invalid());
    }
    let nanos = total.round() as i64;
    Ok(if negative { -nanos } else { nanos })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_and_reads_go_durations() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (300_000_000, "300ms"),
            (1_500_000_000, "1.5s"),
            (90 * 1_000_000_000, "1m30s"),
            (3600 * 1_000_000_000, "1h0m0s"),
            (-(5 * 60 * 1_000_000_000), "-5m0s"),
        ] {
            assert_eq!(format(nanos), text);
            assert_eq!(parse(text).unwrap(), nanos, "{text}");
        }
        assert!(parse("ten minutes").is_err());
        assert!(parse("").is_err());
    }
}
