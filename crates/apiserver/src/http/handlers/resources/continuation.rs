//! Continue tokens (W4): where a paginated list stopped, and at which resourceVersion it was cut, in
//! the shape kube-apiserver gives them (base64 of `{"v", "rv", "start"}`; `start` is the key after
//! the last one served). Clients treat them as opaque; the server keeps nothing for them.

use base64::{
    DecodeError, Engine, alphabet,
    engine::{
        DecodePaddingMode,
        general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD},
    },
};
use serde::{Deserialize, Serialize};

use crate::{
    error::{Error, Result},
    store::ListKey,
};

const VERSION: &str = "meta.k8s.io/v1";

/// Go's `base64.RawURLEncoding`, which reads tokens: no padding, and bits left over after the last
/// byte are ignored rather than refused.
const GO_RAW_URL: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: u64,
    start: String,
}

/// The token of a list cut at `resource_version` whose last served object is `last`.
pub fn encode(resource_version: u64, last: &ListKey) -> String {
    let (namespace, name) = last;
    let start = if namespace.is_empty() {
        format!("{name}\0")
    } else {
        format!("{namespace}/{name}\0")
    };
    let token = Token {
        v: VERSION.to_owned(),
        rv: resource_version,
        start,
    };
    // A struct of strings and a number always serializes.
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

/// The resourceVersion and the last served key of `token`. A token the server did not make is refused
/// in kube-apiserver's words, which quote Go's base64 and JSON decoders.
pub fn decode(token: &str) -> Result<(u64, ListKey)> {
    let invalid = |why: &str| {
        let detail = if why.is_empty() {
            String::new()
        } else {
            format!(": {why}")
        };
        Error::BadRequest(format!(
            "invalid continue token: continue key is not valid{detail}"
        ))
    };
    let bytes = GO_RAW_URL.decode(token).map_err(|error| {
        let at = match error {
            DecodeError::InvalidByte(offset, _) | DecodeError::InvalidLastSymbol(offset, _) => offset,
            // A last group of one symbol: Go reports the offset of that symbol.
            DecodeError::InvalidLength(_) | DecodeError::InvalidPadding => token.len().saturating_sub(1),
        };
        invalid(&format!("illegal base64 data at input byte {at}"))
    })?;
    let token: Token = serde_json::from_slice(&bytes)
        .map_err(|_| invalid(&apimachinery::json_syntax::go_syntax_error(&bytes).unwrap_or_default()))?;
    if token.v != VERSION {
        return Err(invalid(&format!(
            "server does not recognize this encoded version {}",
            token.v
        )));
    }
    let start = token.start.strip_suffix('\0').ok_or_else(|| invalid(""))?;
    // Names never hold a '/', so the first one ends the namespace.
    let key = match start.split_once('/') {
        Some((namespace, name)) => (namespace.to_owned(), name.to_owned()),
        None => (String::new(), start.to_owned()),
    };
    Ok((token.rv, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w4_a_token_gives_back_its_resource_version_and_key() {
        for key in [
            ("default".to_owned(), "web".to_owned()),
            (String::new(), "cluster-wide".to_owned()),
        ] {
            assert_eq!(decode(&encode(42, &key)).unwrap(), (42, key));
        }
    }

    #[test]
    fn w4_a_token_the_server_did_not_make_is_a_bad_request() {
        for token in [
            "nonsense",
            "e30",
            &URL_SAFE_NO_PAD.encode(br#"{"v":"x","rv":1,"start":"a\u0000"}"#),
        ] {
            assert!(matches!(decode(token), Err(Error::BadRequest(_))), "{token}");
        }
    }

    #[test]
    fn w4_a_token_that_does_not_decode_is_refused_in_kube_apiservers_words() {
        let message = |token: &str| decode(token).map(|_| ()).unwrap_err().to_string();
        assert_eq!(
            message("garbage"),
            "invalid continue token: continue key is not valid: invalid character '\\u0081' looking for \
             beginning of value"
        );
        assert_eq!(
            message("ab!d"),
            "invalid continue token: continue key is not valid: illegal base64 data at input byte 2"
        );
        assert_eq!(
            message(&URL_SAFE_NO_PAD.encode(br#"{"v":"x","rv":1,"start":"a"}"#)),
            "invalid continue token: continue key is not valid: server does not recognize this encoded \
             version x"
        );
    }
}
