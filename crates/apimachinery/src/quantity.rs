//! Resource quantities (`500m`, `252Mi`, `1e3`): parsed exactly, added and compared, and printed in
//! the canonical form kube-apiserver prints them in. Hand-written: the crates that parse Kubernetes
//! quantities read them into floats, which neither add exactly (`100m` three times is not `300m` in
//! binary floating point) nor print back as Go's `resource.Quantity` does.
//!
//! A value is held in billionths (Go's smallest scale, nano): a finer fraction rounds up, as Go's does
//! when it drops precision.

use std::cmp::Ordering;
use std::fmt;

/// How a quantity was written, which is how it prints: Go keeps the form of the first operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `Ki`, `Mi`, ... (powers of 1024).
    BinarySI,
    /// `n`, `u`, `m`, `k`, `M`, ... (powers of 1000), or no suffix.
    DecimalSI,
    /// `e3`, `E6`.
    DecimalExponent,
}

/// A resource quantity (`500m`, `252Mi`): an exact amount in billionths, and the form it prints in.
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

const NANO: i128 = 1_000_000_000;
const BINARY: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
/// Decimal suffixes by exponent of ten, from nano to exa.
const DECIMAL: [(i32, &str); 10] = [
    (18, "E"),
    (15, "P"),
    (12, "T"),
    (9, "G"),
    (6, "M"),
    (3, "k"),
    (0, ""),
    (-3, "m"),
    (-6, "u"),
    (-9, "n"),
];

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Quantity {
    /// Zero, as Go's zero quantity of a resource list prints: `0`.
    pub fn zero() -> Quantity {
        Quantity {
            nanos: 0,
            format: Format::DecimalSI,
        }
    }

    /// A whole number (an object count).
    pub fn count(n: i64) -> Quantity {
        Quantity {
            nanos: i128::from(n) * NANO,
            format: Format::DecimalSI,
        }
    }

    /// Parses a quantity as Go's `resource.ParseQuantity` does; `None` for what it refuses.
    pub fn parse(text: &str) -> Option<Quantity> {
        let text = text.trim();
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return None;
        }
        let digits = format!("{whole}{fraction}");
        let mantissa: i128 = digits
            .trim_start_matches('0')
            .parse()
            .or_else(|_| {
                if digits.chars().all(|c| c == '0') {
                    Ok(0)
                } else {
                    Err(())
                }
            })
            .ok()?;
        let fraction_digits = u32::try_from(fraction.len()).ok()?;
        let (format, nanos) = if let Some(power) = BINARY.iter().position(|s| *s == suffix && !s.is_empty()) {
            let multiplier = 1024_i128
                .checked_pow(u32::try_from(power).ok()?)?
                .checked_mul(NANO)?;
            (Format::BinarySI, scale(mantissa, multiplier, fraction_digits)?)
        } else if let Some((exponent, _)) = DECIMAL.iter().find(|(_, s)| *s == suffix) {
            (
                Format::DecimalSI,
                scale_by_ten(mantissa, *exponent, fraction_digits)?,
            )
        } else if let Some(exponent) = suffix.strip_prefix(['e', 'E']) {
            let exponent: i32 = exponent.parse().ok()?;
            (
                Format::DecimalExponent,
                scale_by_ten(mantissa, exponent, fraction_digits)?,
            )
        } else {
            return None;
        };
        Some(Quantity {
            nanos: if negative { -nanos } else { nanos },
            format,
        })
    }

    /// Whether the amount is zero, whatever its form.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Whether the amount is below zero.
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// The sum, in the form of `self` unless `self` is zero (Go's `Quantity.Add`).
    pub fn add(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(other.nanos),
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// The difference, in the form of `self` unless `self` is zero.
    pub fn sub(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_sub(other.nanos),
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// Rounded up to a whole number, as a storage request is counted in whole bytes.
    pub fn round_up_to_whole(&self) -> Quantity {
        let remainder = self.nanos.rem_euclid(NANO);
        let nanos = if remainder == 0 {
            self.nanos
        } else {
            self.nanos - remainder + NANO
        };
        Quantity { nanos, ..*self }
    }
}

/// `mantissa / 10^fraction_digits * multiplier` (a multiplier in nanos), rounded up.
fn scale(mantissa: i128, multiplier: i128, fraction_digits: u32) -> Option<i128> {
    let divisor = 10_i128.checked_pow(fraction_digits)?;
    let product = mantissa.checked_mul(multiplier)?;
    Some(ceil_div(product, divisor))
}

/// `mantissa / 10^fraction_digits * 10^exponent` in nanos, rounded up.
fn scale_by_ten(mantissa: i128, exponent: i32, fraction_digits: u32) -> Option<i128> {
    let shift = exponent + 9 - i32::try_from(fraction_digits).ok()?;
    if shift >= 0 {
        mantissa.checked_mul(10_i128.checked_pow(u32::try_from(shift).ok()?)?)
    } else {
        let divisor = 10_i128.checked_pow(u32::try_from(-shift).ok()?);
        // Finer than a nano: anything left rounds up to one nano, as Go rounds.
        Some(divisor.map_or(i128::from(mantissa > 0), |d| ceil_div(mantissa, d)))
    }
}

fn ceil_div(value: i128, divisor: i128) -> i128 {
    let quotient = value / divisor;
    if value % divisor > 0 {
        quotient + 1
    } else {
        quotient
    }
}

impl fmt::Display for Quantity {
    /// Go's canonical form: binary suffixes for a whole multiple of 1024 written in them, otherwise
    /// the largest decimal suffix (or exponent) that leaves a whole mantissa.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        if self.format == Format::BinarySI && self.nanos % NANO == 0 && self.nanos.abs() >= 1024 * NANO {
            let mut value = self.nanos / NANO;
            let mut power = 0;
            while power + 1 < BINARY.len() && value % 1024 == 0 {
                value /= 1024;
                power += 1;
            }
            return write!(f, "{value}{}", BINARY[power]);
        }
        for (exponent, suffix) in DECIMAL {
            let unit = 10_i128.pow(u32::try_from(exponent + 9).unwrap_or(0));
            if self.nanos % unit == 0 {
                let mantissa = self.nanos / unit;
                return match self.format {
                    Format::DecimalExponent if exponent != 0 => write!(f, "{mantissa}e{exponent}"),
                    Format::DecimalExponent => write!(f, "{mantissa}"),
                    _ => write!(f, "{mantissa}{suffix}"),
                };
            }
        }
        write!(f, "{}n", self.nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).unwrap_or_else(|| panic!("{text} parses"))
    }

    #[test]
    fn quantities_print_in_canonical_form() {
        for (written, printed) in [
            ("500m", "500m"),
            ("252Mi", "252Mi"),
            ("1000m", "1"),
            ("0.5Gi", "512Mi"),
            ("1536", "1536"),
            ("1.5", "1500m"),
            ("30Gi", "30Gi"),
            ("1e3", "1e3"),
            ("2000", "2k"),
            ("0", "0"),
            ("100Ki", "100Ki"),
            ("1023Ki", "1023Ki"),
            ("10", "10"),
            ("0.1m", "100u"),
            ("-5", "-5"),
        ] {
            assert_eq!(q(written).to_string(), printed, "{written}");
        }
    }

    #[test]
    fn sums_keep_the_form_of_the_first_non_zero_operand() {
        let memory = Quantity::zero().add(&q("252Mi"));
        assert_eq!(memory.to_string(), "252Mi");
        assert_eq!(q("100m").add(&q("100m")).add(&q("100m")).to_string(), "300m");
        assert_eq!(q("1").sub(&q("500m")).to_string(), "500m");
        assert!(q("1").add(&q("1m")) > q("1"));
        assert_eq!(q("1Gi"), q("1073741824"));
    }

    #[test]
    fn what_go_refuses_does_not_parse() {
        for text in ["", "abc", "1.2.3", "5Xi", "--1", "."] {
            assert!(Quantity::parse(text).is_none(), "{text}");
        }
    }

    #[test]
    fn a_fraction_of_a_byte_rounds_up_to_a_whole_one() {
        assert_eq!(q("1500m").round_up_to_whole().to_string(), "2");
        assert_eq!(q("2").round_up_to_whole().to_string(), "2");
    }
}
