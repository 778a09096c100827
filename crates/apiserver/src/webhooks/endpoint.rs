//! Where a webhook's `clientConfig` points: a `url`, or a `service` reference.
//!
//! The embedded server has no cluster network, so a Service reference is called at the name a real
//! cluster would use (`https://<name>.<namespace>.svc:<port><path>`, which the serving certificate
//! must name) but dialled where the services' module says a Service is reached: its Endpoints' first
//! address, on the Service port's target port. A process on the host (`operator dev`) is reachable by giving its Service an
//! Endpoints object that points at 127.0.0.1.

use serde_json::Value;

use super::client::{CallError, Endpoint};
use crate::{
    kinds::services::{self, dial::Unreachable},
    store::Store,
};

/// The endpoint of `client_config` (a CRD's `spec.conversion.webhook.clientConfig` or a webhook's
/// `clientConfig`), or why it cannot be called.
pub fn resolve(store: &Store, client_config: &Value) -> Result<Endpoint, CallError> {
    let ca_bundle = client_config
        .get("caBundle")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if let Some(url) = client_config.get("url").and_then(Value::as_str) {
        return Ok(Endpoint {
            url: url.to_owned(),
            dial: None,
            ca_bundle,
        });
    }
    let service = client_config.get("service").cloned().unwrap_or(Value::Null);
    let text = |key: &str| service.get(key).and_then(Value::as_str).unwrap_or_default();
    let (namespace, name, path) = (text("namespace"), text("name"), text("path"));
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
    let url = format!("https://{name}.{namespace}.svc:{port}{path}");
    let failed = |what: String| CallError(format!("Post \"{url}\": {what}"));
    let dial = services::dial::address(store, namespace, name, port).map_err(|why| {
        failed(match why {
            Unreachable::ServiceNotFound => format!("service \"{name}\" not found"),
            Unreachable::PortNotDeclared => format!("no service port {port} found for service \"{name}\""),
            Unreachable::NoEndpointAddress => format!("no endpoints available for service \"{name}\""),
        })
    })?;
    Ok(Endpoint {
        url,
        dial: Some(dial),
        ca_bundle,
    })
}
