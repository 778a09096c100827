//! Where a Service is reached from the server: the embedded server has no cluster network, so a
//! Service is dialled at its Endpoints: their first address, on the Service port's target port.

use serde_json::Value;

use crate::store::Store;

/// Why a Service cannot be dialled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unreachable {
    /// There is no such Service.
    ServiceNotFound,
    /// The Service declares no such port.
    PortNotDeclared,
    /// Its Endpoints have no address.
    NoEndpointAddress,
}

/// The address (`ip:port`, `[ip]:port` for IPv6) to dial for `port` of the Service
/// `namespace/name`.
pub(crate) fn address(store: &Store, namespace: &str, name: &str, port: i64) -> Result<String, Unreachable> {
    let get = |plural: &str| store.find("", "v1", plural, namespace, name);
    let service = get("services").ok_or(Unreachable::ServiceNotFound)?;
    let target_port = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .and_then(|ports| {
            ports
                .iter()
                .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
        })
        .map(|p| p.get("targetPort").and_then(Value::as_i64).unwrap_or(port))
        .ok_or(Unreachable::PortNotDeclared)?;
    let address = get("endpoints")
        .and_then(|endpoints| {
            endpoints
                .pointer("/subsets/0/addresses/0/ip")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .ok_or(Unreachable::NoEndpointAddress)?;
    Ok(if address.contains(':') {
        format!("[{address}]:{target_port}")
    } else {
        format!("{address}:{target_port}")
    })
}
