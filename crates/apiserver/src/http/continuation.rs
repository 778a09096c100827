//! Continue tokens (W4): where a paginated list stopped, and at which resourceVersion it was cut, in
//! the shape kube-apiserver gives them (base64 of `{"v", "rv", "start"}`; `start` is the key after
//! the last one served). Clients treat them as opaque; the server keeps nothing for them.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde::{Deserialize, Serialize};

use crate::{
    error::{Error, Result},
    store::ListKey,
};

const VERSION: &str = "meta.k8s.io/v1";

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

/// The resourceVersion and the last served key of `token`.
pub fn decode(token: &str) -> Result<(u64, ListKey)> {
    let invalid = || Error::BadRequest(format!("continue key is not valid: {token:?}"));
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| invalid())?;
    let token: Token = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if token.v != VERSION {
        return Err(invalid());
    }
    let start = token.start.strip_suffix('\0').ok_or_else(invalid)?;
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
}
