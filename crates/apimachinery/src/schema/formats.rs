//! `format` checks for the formats CRD schemas support (kube-openapi's strfmt registry). Formats we
//! do not know are accepted, as kube-apiserver strips unsupported formats from CRD schemas.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use base64::Engine as _;
use regex::Regex;
use serde_json::Number;

// The `expect`s below compile constant patterns; every one is exercised by the tests of this module.

static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?([0-9a-f])[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
        .expect("static regex")
});
static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^[A-Za-z0-9]([-A-Za-z0-9_]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9_]{0,61}[A-Za-z0-9])?)*\.?$",
    )
    .expect("static regex")
});
static MAC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^([0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(([:-][0-9A-Fa-f]{2}){4}|([:-][0-9A-Fa-f]{2}){6}|([:-][0-9A-Fa-f]{2}){18})|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}(\.[0-9A-Fa-f]{4}){0,7})$",
    )
    .expect("static regex")
});
static DURATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[-+]?((\d+(\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|m|h|d|w)\s*)+$").expect("static regex")
});
static HEX_COLOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$").expect("static regex"));
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\)$").expect("static regex")
});
static URI_SCHEME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$").expect("static regex"));

/// Whether string `s` has `format`. Names are normalised as strfmt does (`date-time` = `datetime`).
pub(crate) fn string_matches(format: &str, s: &str) -> bool {
    let normalised: String = format
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .collect::<String>()
        .to_lowercase();
    match normalised.as_str() {
        "datetime" => is_date_time(s),
        "date" => s.len() == 10 && s.parse::<jiff::civil::Date>().is_ok(),
        "byte" => is_base64(s),
        "uuid" => UUID.is_match(s),
        "uuid3" => uuid_version(s) == Some('3'),
        "uuid4" => uuid_version(s) == Some('4'),
        "uuid5" => uuid_version(s) == Some('5'),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(s),
        "mac" => MAC.is_match(s),
        "hostname" => s.len() <= 255 && HOSTNAME.is_match(s),
        "email" => is_email(s),
        "duration" => DURATION.is_match(s),
        "hexcolor" => HEX_COLOR.is_match(s),
        "rgbcolor" => RGB_COLOR.is_match(s),
        "uri" => s.starts_with('/') && !s.contains(char::is_whitespace) || URI_SCHEME.is_match(s),
        _ => true,
    }
}

/// Whether a number fits `format` (`int32`, `int64`, `float`, `double`); other formats pass.
pub(crate) fn number_in_range(format: &str, n: &Number) -> bool {
    match format {
        "int32" => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i32::try_from(i).is_ok(),
            (None, Some(f)) => f.fract() == 0.0 && f >= f64::from(i32::MIN) && f <= f64::from(i32::MAX),
            _ => false,
        },
        "int64" => n.is_i64() || n.as_f64().is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.3e18),
        "float" => n.as_f64().is_some_and(|f| f.abs() <= f64::from(f32::MAX)),
        _ => true,
    }
}

fn is_date_time(s: &str) -> bool {
    // strfmt accepts RFC 3339 with an offset, and the same layouts without one.
    s.parse::<jiff::Timestamp>().is_ok() || (s.contains('T') && s.parse::<jiff::civil::DateTime>().is_ok())
}

fn is_base64(s: &str) -> bool {
    base64::engine::general_purpose::STANDARD.decode(s).is_ok()
}

fn uuid_version(s: &str) -> Option<char> {
    UUID.captures(s)
        .and_then(|c| c.get(1))
        .and_then(|m| m.as_str().chars().next())
}

fn is_cidr(s: &str) -> bool {
    let Some((addr, prefix)) = s.split_once('/') else {
        return false;
    };
    let Ok(prefix) = prefix.parse::<u8>() else {
        return false;
    };
    match addr.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => prefix <= 32,
        Ok(IpAddr::V6(_)) => prefix <= 128,
        Err(_) => false,
    }
}

fn is_email(s: &str) -> bool {
    let address = match (s.find('<'), s.rfind('>')) {
        (Some(open), Some(close)) if open < close => &s[open + 1..close],
        _ => s,
    };
    match address.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty() && !domain.is_empty() && !domain.contains(char::is_whitespace)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_string_formats_accept_good_and_reject_bad_values() {
        let cases = [
            ("date-time", "2026-11-22T10:00:00Z", "yesterday"),
            ("date", "2026-11-22", "2026-11-22T10:00:00Z"),
            ("byte", "aGVsbG8=", "not base64!"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
            (
                "uuid4",
                "123e4567-e89b-42d3-a456-426614174000",
                "123e4567-e89b-12d3-a456-426614174000",
            ),
            ("ipv4", "10.0.0.1", "10.0.0.256"),
            ("ipv6", "fe80::1", "10.0.0.1"),
            ("cidr", "10.96.0.0/12", "10.96.0.0/33"),
            ("mac", "00:1a:2b:3c:4d:5e", "00:1a:2b"),
            ("hostname", "db.example.com", "-bad-.com"),
            ("email", "a@b.c", "nobody"),
            ("duration", "1h30m", "soon"),
            ("hexcolor", "#ff0000", "red"),
            ("rgbcolor", "rgb(255, 0, 0)", "rgb(red)"),
            ("uri", "https://example.com/x", "not a uri"),
        ];
        for (format, good, bad) in cases {
            assert!(string_matches(format, good), "{format} should accept {good}");
            assert!(!string_matches(format, bad), "{format} should reject {bad}");
        }
    }

    #[test]
    fn unknown_formats_are_accepted() {
        assert!(string_matches("k8s-short-name", "anything"));
    }

    #[test]
    fn int32_format_bounds_integers() {
        assert!(number_in_range("int32", &Number::from(2147483647)));
        assert!(!number_in_range("int32", &Number::from(2147483648_i64)));
    }
}
