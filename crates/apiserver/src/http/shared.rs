//! What every request handler shares: the store, the server's settings, and the state kept between
//! requests.

use std::sync::Arc;

use super::{
    filters::{
        audit,
        authentication::{self, issued_tokens, static_users},
        authorization::mode,
    },
    handlers::openapi_cache,
};
use crate::store::Store;

/// What every request handler shares.
pub struct Shared {
    /// The objects served.
    pub store: Arc<Store>,
    /// Larger request bodies are refused with 413 ([`crate::Config::max_body_bytes`]).
    pub max_body_bytes: usize,
    /// The bearer token every request must carry; `None` serves anyone (`--insecure-no-auth`).
    pub token: Option<secrecy::SecretString>,
    /// Where requests are recorded; `None` (the default) records nothing.
    pub audit: Option<Arc<audit::AuditLog>>,
    /// The OpenAPI documents built so far, for the served types of the moment.
    pub openapi: openapi_cache::OpenApiCache,
    /// When the server started (RFC 3339): the creation time of what it registers at start-up.
    pub started: String,
    /// Where the server listens, which `/api` publishes as its address.
    pub address: std::net::SocketAddr,
    /// Whether streaming lists are served (the `WatchList` feature gate).
    pub watch_list: bool,
    /// The tokens issued for service accounts, which authenticate as them.
    pub service_account_tokens: Arc<issued_tokens::ServiceAccountTokens>,
    /// How requests are classified by the FlowSchemas (API Priority and Fairness).
    pub flow_control: crate::flowcontrol::Classifier,
    /// The emulated controllers the store runs with.
    pub controllers: Arc<crate::emulated::Controllers>,
    /// The users added with their own tokens ([`crate::ApiServer::add_user`]).
    pub users: Arc<static_users::StaticUsers>,
    /// Whether requests are authorized by RBAC, or all allowed.
    pub authorization: mode::Authorization,
    /// Whether the OwnerReferencesPermissionEnforcement admission plugin checks who sets owner
    /// references ([`crate::Config::owner_reference_permissions`]).
    pub owner_reference_permissions: bool,
}

impl Shared {
    /// What a presented token is checked against; `None` when authentication is off.
    pub(crate) fn credentials(&self) -> Option<authentication::Credentials> {
        self.token.clone().map(|token| authentication::Credentials {
            token,
            service_accounts: self.service_account_tokens.clone(),
            users: self.users.clone(),
            store: self.store.clone(),
        })
    }
}
