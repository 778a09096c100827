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

/// Go's `time.ParseDuration`: a sequence of decimal numbers with units ns, us (µs), ms, s, m, h, with
/// Go's error messages (`time: missing unit in duration "5"`), which kube-apiserver quotes.
pub fn parse(text: &str) -> Result<i64> {
    parse_nanos(text).map_err(Error::BadRequest)
}

fn parse_nanos(text: &str) -> std::result::Result<i64, String> {
    const LIMIT: u128 = 1 << 63;
    let invalid = || format!("time: invalid duration {}", quote(text));
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        if !rest.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let whole_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let whole: u128 = match &rest[..whole_end] {
            "" => 0,
            digits => digits.parse().ok().filter(|v| *v < LIMIT).ok_or_else(invalid)?,
        };
        rest = &rest[whole_end..];
        // The digits after a point, as a fraction of 10^n (Go keeps at most what fits in 63 bits).
        let mut fraction = (0u128, 1u128);
        let mut has_fraction = false;
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len());
            for digit in after[..end].bytes() {
                if fraction.1 < LIMIT / 10 {
                    fraction = (fraction.0 * 10 + u128::from(digit - b'0'), fraction.1 * 10);
                }
            }
            has_fraction = end > 0;
            rest = &after[end..];
        }
        if whole_end == 0 && !has_fraction {
            return Err(invalid());
        }
        let unit_end = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let nanos_per_unit: u128 = match unit {
            "" => return Err(format!("time: missing unit in duration {}", quote(text))),
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            other => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    quote(other),
                    quote(text)
                ));
            }
        };
        let mut value = whole * nanos_per_unit;
        if value > LIMIT {
            return Err(invalid());
        }
        value += fraction.0 * nanos_per_unit / fraction.1;
        total += value;
        if total > LIMIT {
            return Err(invalid());
        }
    }
    match (negative, i64::try_from(total)) {
        (false, Ok(nanos)) => Ok(nanos),
        (true, Ok(nanos)) => Ok(-nanos),
        (true, Err(_)) if total == LIMIT => Ok(i64::MIN),
        _ => Err(invalid()),
    }
}

/// Go's `time.quote`: in double quotes, `"` and `\` escaped, and each byte of a character below
/// space or beyond ASCII as `\xhh`.
fn quote(text: &str) -> String {
    let mut quoted = String::from("\"");
    for c in text.chars() {
        if c < ' ' || !c.is_ascii() {
            let mut bytes = [0; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                quoted.push_str(&format!("\\x{byte:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                quoted.push('\\');
            }
            quoted.push(c);
        }
    }
    quoted.push('"');
    quoted
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
        assert_eq!(parse("1.5h30m").unwrap(), 7200 * 1_000_000_000);
        assert_eq!(parse(".5s").unwrap(), 500_000_000);
        assert_eq!(parse("-0").unwrap(), 0);
        let error = |text: &str| parse_nanos(text).unwrap_err();
        assert_eq!(error("invalid"), r#"time: invalid duration "invalid""#);
        assert_eq!(error(""), r#"time: invalid duration """#);
        assert_eq!(error("5"), r#"time: missing unit in duration "5""#);
        assert_eq!(error("1e3s"), r#"time: unknown unit "e" in duration "1e3s""#);
        assert_eq!(error(".s"), r#"time: invalid duration ".s""#);
        assert_eq!(
            error("9999999999999h"),
            r#"time: invalid duration "9999999999999h""#
        );
        assert_eq!(
            error("1\u{e9}"),
            r#"time: unknown unit "\xc3\xa9" in duration "1\xc3\xa9""#
        );
    }
}
