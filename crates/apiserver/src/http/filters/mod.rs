//! The filters every request passes before a handler sees it, assembled here around the handlers.
//!
//! In the order a request meets them: [`authentication`] (the bearer token, then `impersonation`
//! in the same step), `flow_control` (API Priority and Fairness' classification), [`authorization`]
//! (RBAC, with the escalation and owner-reference checks that read a write's body), then the handler,
//! which [`audit`] records (in `super::dispatch`, around reading the request and answering it).
//! kube-apiserver audits right after authentication, so its log also holds what impersonation and
//! authorization refuse; this one records only the requests that reach a handler.

pub mod audit;
pub mod authentication;
pub mod authorization;
mod flow_control;
mod impersonation;

use std::sync::Arc;

use axum::{Router, middleware::from_fn_with_state};

use super::Shared;

/// `handlers` wrapped in the filters. Layers run outside in, the last added first: authentication,
/// then classification, then authorization, as kube-apiserver's filters run.
pub(super) fn around(handlers: Router<Arc<Shared>>, shared: &Arc<Shared>) -> Router<Arc<Shared>> {
    let router = handlers
        .layer(from_fn_with_state(shared.clone(), authorization::authorize))
        .layer(from_fn_with_state(shared.clone(), flow_control::classify));
    // A layer runs before the fallback, so an unauthenticated request never reaches a handler.
    match shared.credentials() {
        Some(credentials) => router.layer(from_fn_with_state(
            credentials,
            authentication::require_bearer_token,
        )),
        None => router,
    }
}
