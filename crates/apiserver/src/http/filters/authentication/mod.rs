//! Bearer-token authentication, the first filter. By default the server generates a random token at
//! start-up, writes it into the kubeconfig it hands out, and answers every request that does not carry
//! `Authorization: Bearer <token>` with a 401 `Status`, as kube-apiserver does with anonymous
//! authentication disabled. `Auth::None` (the bin's `--insecure-no-auth`) turns the check off.
//!
//! The token is held as a [`SecretString`] so that no `Debug` or log line ever prints it.

pub mod identity;
pub mod issued_tokens;
pub(crate) mod random_token;
pub mod static_users;

use axum::{
    extract::{Request, State},
    http::header,
    middleware::Next,
    response::Response,
};
use secrecy::{ExposeSecret, SecretString};
use subtle::ConstantTimeEq;

use crate::{error::Error, http::respond, store::Store};
use identity::Identity;
use issued_tokens::{ServiceAccountTokens, Verdict};
use random_token::generate_token;
use static_users::StaticUsers;

/// Who may talk to the server.
#[derive(Clone, Default)]
pub enum Auth {
    /// A fresh random token per start (the default); read it with `ApiServer::token()`.
    #[default]
    GeneratedToken,
    /// A token chosen by the caller (the bin's `--token-file`), e.g. to keep a kubeconfig across restarts.
    Token(String),
    /// No authentication at all: anyone who reaches the port may read and write everything.
    None,
}

// Hand-written so that `Config`'s derived Debug never prints a caller-chosen token.
impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::GeneratedToken => f.write_str("GeneratedToken"),
            Auth::Token(_) => f.write_str("Token([REDACTED])"),
            Auth::None => f.write_str("None"),
        }
    }
}

impl Auth {
    /// The token requests must present, or `None` when authentication is off.
    pub fn into_token(self) -> Option<SecretString> {
        match self {
            Auth::GeneratedToken => Some(SecretString::from(generate_token())),
            Auth::Token(token) => Some(SecretString::from(token)),
            Auth::None => None,
        }
    }
}

/// The token of an `Authorization` header, parsed as kube-apiserver does: the scheme is
/// case-insensitive and the token is the next space-separated word.
fn presented_token(value: &str) -> Option<&str> {
    let mut parts = value.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Whether `presented` is the expected token. Constant time in the token's content so that response
/// timing does not reveal how many leading characters were right.
fn token_matches(presented: &str, expected: &SecretString) -> bool {
    presented
        .as_bytes()
        .ct_eq(expected.expose_secret().as_bytes())
        .into()
}

/// What a presented token is checked against.
#[derive(Clone)]
pub(crate) struct Credentials {
    pub token: SecretString,
    pub service_accounts: std::sync::Arc<ServiceAccountTokens>,
    pub users: std::sync::Arc<StaticUsers>,
    pub store: std::sync::Arc<Store>,
}

impl Credentials {
    /// Whose `token` is: the server's own, a user's, or one issued to a service account that still
    /// exists.
    pub fn identify(&self, token: &str) -> Option<Identity> {
        if token_matches(token, &self.token) {
            return Some(Identity::Administrator);
        }
        self.users
            .identify(token)
            .or_else(|| self.service_accounts.authenticate(&self.store, token))
    }

    /// Whose `token` is when presented for `audiences` (a TokenReview's), and which of them it is
    /// good for: a service account's token for those it names, the server's and the users' tokens
    /// (which name none) for all of them, as kube-apiserver's audience-agnostic authenticators answer.
    pub fn identify_for(&self, token: &str, audiences: &[String]) -> Verdict {
        if token_matches(token, &self.token) {
            return Verdict::Authenticated(Identity::Administrator, audiences.to_vec());
        }
        match self.users.identify(token) {
            Some(user) => Verdict::Authenticated(user, audiences.to_vec()),
            None => self
                .service_accounts
                .authenticate_for(&self.store, token, audiences),
        }
    }
}

/// Middleware: passes the request on when it carries the server's token or a service account's,
/// noting whose, otherwise answers 401 Unauthorized without reading the body.
pub(crate) async fn require_bearer_token(
    State(credentials): State<Credentials>,
    mut request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(presented_token);
    let identity = presented.and_then(|token| credentials.identify(token));
    if let Some(identity) = identity {
        let identity = match super::impersonation::act_as(&credentials.store, identity, request.headers()) {
            Ok(identity) => identity,
            Err(error) => return respond::error(&error),
        };
        request.extensions_mut().insert(identity);
        return next.run(request).await;
    }
    // The method and path only: the header itself may hold a near-miss of the real token.
    tracing::debug!(method = %request.method(), path = request.uri().path(), "unauthorized request");
    respond::error(&Error::Unauthorized)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive_and_other_schemes_are_ignored() {
        assert_eq!(presented_token("Bearer abc"), Some("abc"));
        assert_eq!(presented_token("bearer abc"), Some("abc"));
        assert_eq!(presented_token("  BEARER abc  "), Some("abc"));
        assert_eq!(presented_token("Basic abc"), None);
        assert_eq!(presented_token("Bearer"), None);
        assert_eq!(presented_token("Bearer "), None);
        assert_eq!(presented_token("abc"), None);
    }

    #[test]
    fn only_the_exact_token_matches() {
        let expected = SecretString::from("s3cret-token");
        assert!(token_matches("s3cret-token", &expected));
        for wrong in ["", "s3cret-toke", "s3cret-tokenX", "S3cret-token", "x3cret-token"] {
            assert!(!token_matches(wrong, &expected), "{wrong}");
        }
    }

    #[test]
    fn debug_output_never_shows_a_chosen_token() {
        let shown = format!("{:?}", Auth::Token("s3cret-token".into()));
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
