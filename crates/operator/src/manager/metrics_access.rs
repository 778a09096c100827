//! Who may read `/metrics` when it is served securely: as controller-runtime's
//! `filters.WithAuthenticationAndAuthorization`, the bearer token is authenticated by the API server
//! (a TokenReview) and its user authorized for `get` on the non-resource URL `/metrics` (a
//! SubjectAccessReview), so that the cluster's RBAC decides (the `metrics-reader` ClusterRole of
//! config/rbac grants it). Missing or unknown token: 401; known but not allowed: 403.
//!
//! The answers are kept for a while, with controller-runtime's times (a token's identity one minute,
//! an authorization five, a refusal 30 seconds), so that a scrape every few seconds costs the API
//! server two requests now and then, not two per scrape. Tokens are kept only as their SHA-256 digest.

use std::{
    collections::HashMap,
    hash::Hash,
    sync::Mutex,
    time::{Duration, Instant},
};

use axum::{
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use k8s_openapi::api::{
    authentication::v1::{TokenReview, TokenReviewSpec, UserInfo},
    authorization::v1::{NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec},
};
use kube::{Api, api::PostParams};
use sha2::{Digest, Sha256};

/// How long an answer is kept: controller-runtime's (`DelegatingAuthenticatorConfig.CacheTTL`,
/// `DelegatingAuthorizerConfig.AllowCacheTTL` and `DenyCacheTTL`).
const IDENTITY_TTL: Duration = Duration::from_secs(60);
const ALLOWED_TTL: Duration = Duration::from_secs(5 * 60);
const DENIED_TTL: Duration = Duration::from_secs(30);
/// At most this many answers of each kind are kept: scrapers are few; a flood of made-up tokens must
/// not grow the process.
const MAX_KEPT: usize = 1024;

/// The reviews and what they answered lately.
pub struct MetricsAccess {
    client: kube::Client,
    /// SHA-256 of a token -> whose it is (`None`: the API server did not know it).
    identities: Expiring<[u8; 32], Option<UserInfo>>,
    /// The SubjectAccessReview's spec, as JSON -> allowed.
    decisions: Expiring<String, bool>,
}

/// Why a request is refused.
#[derive(Debug, PartialEq)]
enum Refusal {
    /// No bearer token, or one the API server does not authenticate.
    Unauthenticated,
    /// Authenticated, and not allowed to `get` the path.
    Forbidden(String),
    /// The API server could not be asked whether the user may.
    ReviewFailed,
}

impl MetricsAccess {
    pub fn new(client: kube::Client) -> Self {
        MetricsAccess {
            client,
            identities: Expiring::default(),
            decisions: Expiring::default(),
        }
    }

    /// Whether the bearer of `authorization` may `verb` `path`.
    async fn check(&self, authorization: Option<&str>, verb: &str, path: &str) -> Result<(), Refusal> {
        let token = authorization
            .and_then(bearer_token)
            .ok_or(Refusal::Unauthenticated)?;
        let user = self.identify(token).await?.ok_or(Refusal::Unauthenticated)?;
        let spec = SubjectAccessReviewSpec {
            user: user.username.clone(),
            groups: user.groups.clone(),
            uid: user.uid.clone(),
            extra: user.extra.clone(),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.to_owned()),
                verb: Some(verb.to_owned()),
            }),
            resource_attributes: None,
        };
        if self.authorize(spec).await? {
            Ok(())
        } else {
            let who = user.username.unwrap_or_default();
            Err(Refusal::Forbidden(format!(
                "Forbidden (user={who}, verb={verb}, resource=, subresource=)"
            )))
        }
    }

    async fn identify(&self, token: &str) -> Result<Option<UserInfo>, Refusal> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(known) = self.identities.get(&digest) {
            return Ok(known);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: None,
            },
            ..Default::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|error| {
                // The error only: the request it failed on holds the token. Unauthorized, as
                // controller-runtime answers when it cannot authenticate.
                tracing::warn!(%error, "could not review a metrics client's token (TokenReview)");
                Refusal::Unauthenticated
            })?;
        let user = reviewed
            .status
            .filter(|s| s.authenticated == Some(true))
            .and_then(|s| s.user);
        self.identities.insert(digest, user.clone(), IDENTITY_TTL);
        Ok(user)
    }

    async fn authorize(&self, spec: SubjectAccessReviewSpec) -> Result<bool, Refusal> {
        let key = serde_json::to_string(&spec).map_err(|_| Refusal::ReviewFailed)?;
        if let Some(allowed) = self.decisions.get(&key) {
            return Ok(allowed);
        }
        let review = SubjectAccessReview {
            spec,
            ..Default::default()
        };
        let reviewed = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|error| {
                tracing::warn!(%error, "could not authorize a metrics client (SubjectAccessReview)");
                Refusal::ReviewFailed
            })?;
        let allowed = reviewed.status.is_some_and(|s| s.allowed);
        let ttl = if allowed { ALLOWED_TTL } else { DENIED_TTL };
        self.decisions.insert(key, allowed, ttl);
        Ok(allowed)
    }
}

/// Middleware: passes the request on when its bearer may `get` its path, else answers as
/// controller-runtime's filter does.
pub async fn require_access(
    State(access): State<std::sync::Arc<MetricsAccess>>,
    request: Request,
    next: Next,
) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let verb = request.method().as_str().to_ascii_lowercase();
    match access.check(authorization, &verb, request.uri().path()).await {
        Ok(()) => next.run(request).await,
        Err(Refusal::Unauthenticated) => (StatusCode::UNAUTHORIZED, "Unauthorized\n").into_response(),
        Err(Refusal::Forbidden(message)) => (StatusCode::FORBIDDEN, format!("{message}\n")).into_response(),
        Err(Refusal::ReviewFailed) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the API server could not review the request\n",
        )
            .into_response(),
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A map whose entries expire, bounded by [`MAX_KEPT`]. Hand-written: a dozen lines, where a caching
/// crate would bring its own runtime and far more than this needs.
struct Expiring<K, V>(Mutex<HashMap<K, (Instant, V)>>);

impl<K, V> Default for Expiring<K, V> {
    fn default() -> Self {
        Expiring(Mutex::new(HashMap::new()))
    }
}

impl<K: Eq + Hash, V: Clone> Expiring<K, V> {
    fn get(&self, key: &K) -> Option<V> {
        let entries = self.0.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(key)
            .filter(|(expires, _)| Instant::now() < *expires)
            .map(|(_, value)| value.clone())
    }

    fn insert(&self, key: K, value: V, ttl: Duration) {
        let mut entries = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if entries.len() >= MAX_KEPT {
            entries.retain(|_, (expires, _)| now < *expires);
        }
        if entries.len() >= MAX_KEPT {
            entries.clear();
        }
        entries.insert(key, (now + ttl, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_token_is_read_as_the_api_server_reads_it() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("abc"), None);
    }

    #[test]
    fn answers_expire_and_their_number_is_bounded() {
        let kept: Expiring<u32, bool> = Expiring::default();
        kept.insert(1, true, Duration::from_secs(60));
        kept.insert(2, false, Duration::ZERO);
        assert_eq!(kept.get(&1), Some(true));
        assert_eq!(kept.get(&2), None, "expired");
        for key in 0..(MAX_KEPT as u32 * 3) {
            kept.insert(key, true, Duration::from_secs(60));
        }
        let size = kept.0.lock().unwrap().len();
        assert!(size <= MAX_KEPT, "{size}");
    }
}
