//! The HTTP face of the server, layered as kube-apiserver's: the [`filters`] every request passes
//! (authentication, flow control, authorization, audit) wrapped around the `handlers`. What both
//! read stays here: the request, read once (`request`), what its path names (`path`), the answer
//! (`respond`), the state every request shares ([`Shared`]) and TLS ([`tls`]). One fallback
//! handler parses the Kubernetes URL scheme (C1) because its shape
//! (`namespaces/{ns}/{plural}/{name}/{sub}` next to `namespaces/{name}/status`) does not fit a
//! static route table.

pub mod filters;
pub(crate) mod handlers;
pub(crate) mod path;
pub(crate) mod request;
pub(crate) mod respond;
mod shared;
pub mod tls;

use std::{sync::Arc, time::Instant};

use axum::{Router, body::Body, extract::State, http::Request, response::Response};

use crate::error::Error;
use handlers::{discovery, health, metrics, resources};
use request::Call;
pub use shared::Shared;

/// The server's routes: every request goes through the filters, then to its handler.
pub fn router(shared: Arc<Shared>) -> Router {
    filters::around(Router::new().fallback(dispatch), &shared).with_state(shared)
}

async fn dispatch(State(shared): State<Arc<Shared>>, request: Request<Body>) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let uri = request.uri().clone();
    // Noted before the body is read, so that a request refused for its size is recorded too.
    let audited = shared.audit.as_deref().and_then(|log| log.begin(&request));
    let traffic = shared.audit.as_deref().is_some_and(|log| log.records_traffic());
    let mut sent = None;
    let mut response = match request::read_call(request, shared.max_body_bytes).await {
        Ok(call) => {
            if traffic {
                sent = Some(filters::audit::Exchange {
                    method: method.to_string(),
                    target: uri.path_and_query().map(ToString::to_string).unwrap_or_default(),
                    content_type: call.content_type.clone(),
                    accept: Some(call.accept.clone()).filter(|a| !a.is_empty()),
                    request_body: Some(String::from_utf8_lossy(&call.body).into_owned())
                        .filter(|b| !b.is_empty()),
                    response_body: None,
                });
            }
            handle(&shared, uri.path(), call).await
        }
        Err(error) => respond::error(&error),
    };
    if let Some(audited) = audited {
        let exchange = match sent {
            Some(exchange) => {
                let (recorded, answered) = filters::audit::with_response_body(exchange, response).await;
                response = answered;
                Some(recorded)
            }
            None => None,
        };
        audited.finish(response.status(), exchange);
    }
    tracing::debug!(%method, uri = %uri, status = response.status().as_u16(), elapsed = ?started.elapsed(), "request");
    response
}

async fn handle(shared: &Arc<Shared>, path: &str, call: Call) -> Response {
    use path::Route;
    let route = path::route(path);
    if let Err(error) = check_timeout(&route, &call) {
        return respond::error(&error);
    }
    let result = match route {
        Route::Version => Ok(respond::json(200, &discovery::version())),
        Route::Health { endpoint, check } => Ok(health::answer(&endpoint, check.as_deref(), &call.query)),
        Route::CoreVersions => discovery::core(&shared.store, &call, shared.address),
        Route::GroupList => discovery::groups(&shared.store, &call),
        Route::Group(group) => discovery::group(&shared.store, &call, &group),
        Route::ResourceList { group, version } => {
            discovery::resources(&shared.store, &call, &group, &version)
        }
        Route::Metrics => Ok(metrics::answer(shared)),
        Route::OpenApiV2 => Ok(discovery::openapi_v2(&shared.store, &shared.openapi, &call)),
        Route::OpenApiIndex => Ok(discovery::openapi_index(&shared.store, &shared.openapi)),
        Route::OpenApiDocument { group, version } => {
            discovery::openapi_document(&shared.store, &shared.openapi, &group, &version)
        }
        Route::Resource(target) => resources::handle(shared, target, call).await,
        Route::NotFound => Err(Error::UnknownResource),
    };
    result.unwrap_or_else(|error| respond::error(&error))
}

/// 400 for a `timeout` that is no Go duration, which kube-apiserver checks before routing, for every
/// request but the long-running ones (watches, streams and proxies), which it never times out.
fn check_timeout(route: &path::Route, call: &Call) -> Result<(), Error> {
    let Some(timeout) = call.query.get("timeout").filter(|t| !t.is_empty()) else {
        return Ok(());
    };
    let long_running = match route {
        path::Route::Resource(target) => {
            matches!(call.query.get("watch").map(String::as_str), Some("true" | "1"))
                || target
                    .subresource
                    .as_deref()
                    .is_some_and(|sub| matches!(sub, "attach" | "exec" | "proxy" | "log" | "portforward"))
        }
        _ => false,
    };
    if long_running {
        return Ok(());
    }
    apimachinery::go_duration::parse(timeout)
        .map(|_| ())
        .map_err(|error| match error {
            apimachinery::Error::BadRequest(why) => {
                Error::BadRequest(format!("invalid timeout specified in the request URL - {why}"))
            }
            other => Error::BadRequest(other.to_string()),
        })
}
