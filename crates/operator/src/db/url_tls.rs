//! The TLS settings a connection string carries (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`),
//! taken out before tokio-postgres parses the rest: it knows neither `verify-ca`/`verify-full` nor the
//! certificate files, and refuses a string that names them. Both of libpq's forms are read: the URL
//! (`postgres://...?sslmode=verify-full&sslrootcert=/ca.crt`) and keyword/value pairs (`host=db
//! sslmode=verify-full`). Hand-written: no maintained crate splits a libpq connection string and
//! gives the rest back as written.

use std::path::PathBuf;

use super::tls::SslMode;
use crate::{Error, Result};

/// What a connection string says about TLS; `None` where it says nothing.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct UrlTls {
    pub mode: Option<SslMode>,
    /// A file, or the word `system` (told apart later, as the flag's value is).
    pub root_cert: Option<PathBuf>,
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
}

impl UrlTls {
    /// Records `key`'s value when it is a TLS setting; false for any other key.
    fn take(&mut self, key: &str, value: String) -> Result<bool> {
        match key {
            "sslmode" => self.mode = Some(value.parse()?),
            "sslrootcert" => self.root_cert = Some(value.into()),
            "sslcert" => self.client_cert = Some(value.into()),
            "sslkey" => self.client_key = Some(value.into()),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The connection string without its TLS settings, and those settings.
pub fn split_tls(connection_string: &str) -> Result<(String, UrlTls)> {
    if connection_string.starts_with("postgres://") || connection_string.starts_with("postgresql://") {
        split_url(connection_string)
    } else {
        split_keywords(connection_string)
    }
}

fn invalid(why: impl std::fmt::Display) -> Error {
    Error::Config(format!("DATABASE_URL is not a valid connection string: {why}"))
}

fn split_url(url: &str) -> Result<(String, UrlTls)> {
    let mut tls = UrlTls::default();
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), tls));
    };
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8()
            .map(|decoded| decoded.into_owned())
            .map_err(invalid)
    };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !tls.take(&decode(key)?, decode(value)?)? {
            kept.push(pair);
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, tls))
}

/// libpq's keyword/value form: `key = value` pairs separated by spaces, a value in single quotes when
/// it holds spaces, `\` escaping a quote or itself. Pairs that are not TLS settings are given back as
/// written.
fn split_keywords(text: &str) -> Result<(String, UrlTls)> {
    let mut tls = UrlTls::default();
    let mut kept = Vec::new();
    let mut chars = text.char_indices().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, _)) = chars.peek() else {
            break;
        };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next_if(|(_, c)| *c == '=').is_none() {
            return Err(invalid(format!("{key:?} has no value")));
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        let quoted = chars.next_if(|(_, c)| *c == '\'').is_some();
        let mut closed = !quoted;
        while let Some((_, c)) = chars.next_if(|(_, c)| quoted || !c.is_whitespace()) {
            match c {
                '\\' => value.extend(chars.next().map(|(_, escaped)| escaped)),
                '\'' if quoted => {
                    closed = true;
                    break;
                }
                other => value.push(other),
            }
        }
        if !closed {
            return Err(invalid(format!("the value of {key:?} has no closing quote")));
        }
        let end = chars.peek().map_or(text.len(), |(at, _)| *at);
        if !tls.take(&key, value)? {
            kept.push(&text[start..end]);
        }
    }
    Ok((kept.join(" "), tls))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_gives_up_its_tls_settings_and_keeps_the_rest_as_written() {
        let (rest, tls) = split_tls(
            "postgres://u:p%40ss@db:5432/app?sslmode=verify-full&options=-c%20x%3D1&sslrootcert=/etc/ca%20dir/ca.crt&sslcert=c.crt&sslkey=c.key",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u:p%40ss@db:5432/app?options=-c%20x%3D1");
        assert_eq!(
            tls,
            UrlTls {
                mode: Some(SslMode::VerifyFull),
                root_cert: Some("/etc/ca dir/ca.crt".into()),
                client_cert: Some("c.crt".into()),
                client_key: Some("c.key".into()),
            }
        );
        let (rest, tls) = split_tls("postgresql://db/app?sslmode=verify-ca").unwrap();
        assert_eq!(
            (rest.as_str(), tls.mode),
            ("postgresql://db/app", Some(SslMode::VerifyCa))
        );
        let (rest, tls) = split_tls("postgres://db/app").unwrap();
        assert_eq!((rest.as_str(), tls), ("postgres://db/app", UrlTls::default()));
    }

    #[test]
    fn keyword_pairs_give_up_their_tls_settings_quoted_or_not() {
        let (rest, tls) = split_tls(
            "host=db sslmode = verify-full password='it\\'s a secret' sslrootcert='/etc/my ca/ca.crt' dbname=app",
        )
        .unwrap();
        assert_eq!(rest, "host=db password='it\\'s a secret' dbname=app");
        assert_eq!(tls.mode, Some(SslMode::VerifyFull));
        assert_eq!(tls.root_cert, Some("/etc/my ca/ca.crt".into()));
        let parsed: tokio_postgres::Config = rest.parse().unwrap();
        assert_eq!(parsed.get_password(), Some(&b"it's a secret"[..]));
    }

    #[test]
    fn a_bad_sslmode_or_an_unclosed_quote_is_a_clear_configuration_error() {
        assert!(matches!(
            split_tls("postgres://db/app?sslmode=verify"),
            Err(Error::Config(m)) if m.contains("verify-full")
        ));
        assert!(matches!(
            split_tls("host=db sslrootcert='/ca.crt"),
            Err(Error::Config(m)) if m.contains("closing quote")
        ));
        assert!(matches!(split_tls("host"), Err(Error::Config(m)) if m.contains("no value")));
    }
}
