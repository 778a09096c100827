//! `/version`, discovery (D2-D6) and OpenAPI v2 and v3 (D7) endpoints: thin wrappers over apimachinery's
//! documents computed from the registry of the moment.

use apimachinery::discovery as docs;
use axum::response::Response;
use serde_json::{Value, json};

use super::openapi_cache::{self, Document, OpenApiCache};
use crate::http::{
    request::Call,
    respond::{self, AGGREGATED_DISCOVERY, DiscoveryForm, Endpoint},
};
use crate::{error::Error, store::Store};

pub fn version() -> Value {
    // The minor decides which kubectl the /usr/bin/kubectl dispatcher runs (D2). The release is the
    // one the real control plane of the tests is built from (testenv/control-plane/go.mod), so that
    // kubectl and client-go pick the same behaviour on both; a test keeps the two in step.
    json!({
        "major": "1", "minor": "33", "gitVersion": "v1.33.13", "gitCommit": "embedded", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64",
    })
}

pub fn core(store: &Store, call: &Call, address: std::net::SocketAddr) -> Result<Response, Error> {
    // `/api` is a route of kube-apiserver's REST framework, which first checks the media types.
    respond::check_acceptable(
        &call.accept,
        Endpoint::BuiltIn {
            collection_read: false,
        },
    )?;
    let all = store.registry().all();
    answer(
        &call.accept,
        true,
        || docs::core_api_versions(&address.to_string()),
        || docs::aggregated_discovery(&all, true),
    )
}

pub fn groups(store: &Store, call: &Call) -> Result<Response, Error> {
    let all = store.registry().all();
    answer(
        &call.accept,
        true,
        || docs::api_group_list(&all),
        || docs::aggregated_discovery(&all, false),
    )
}

/// `GET /apis/<group>`; a group nothing serves is no route at all, as on kube-apiserver.
pub fn group(store: &Store, call: &Call, group: &str) -> Result<Response, Error> {
    let document = docs::api_group(&store.registry().all(), group).ok_or(Error::PageNotFound)?;
    answer(&call.accept, false, || document, || Value::Null)
}

pub fn resources(store: &Store, call: &Call, group: &str, version: &str) -> Result<Response, Error> {
    let all = store.registry().all();
    if !group.is_empty() && docs::api_group(&all, group).is_none() {
        return Err(Error::PageNotFound);
    }
    let list = docs::api_resource_list(&all, group, version).ok_or(Error::UnknownResource)?;
    respond::check_acceptable(
        &call.accept,
        Endpoint::BuiltIn {
            collection_read: false,
        },
    )?;
    answer(&call.accept, false, || list, || Value::Null)
}

/// A discovery document in the form `accept` asks for: `document` as JSON or protobuf, or
/// `aggregated` where the endpoint serves aggregated discovery.
fn answer(
    accept: &str,
    serves_aggregated: bool,
    document: impl FnOnce() -> Value,
    aggregated: impl FnOnce() -> Value,
) -> Result<Response, Error> {
    match respond::negotiate_discovery(accept, serves_aggregated) {
        Some(DiscoveryForm::Aggregated) => Ok(respond::json_with_type(&aggregated(), AGGREGATED_DISCOVERY)),
        Some(DiscoveryForm::Protobuf) => {
            let document = document();
            Ok(match apimachinery::protobuf::encode(&document) {
                Ok(body) => respond::bytes(body, apimachinery::protobuf::MEDIA_TYPE),
                Err(_) => respond::json(200, &document),
            })
        }
        Some(DiscoveryForm::Json) => Ok(respond::json(200, &document())),
        None => Err(respond::negotiation_failed()),
    }
}

/// The Swagger 2.0 document, as protobuf when asked for it (kubectl up to 1.29 reads nothing else).
pub fn openapi_v2(store: &Store, cache: &OpenApiCache, call: &Call) -> axum::response::Response {
    let registry = store.registry();
    let protobuf = respond::wants_openapi_protobuf(&call.accept);
    let which = if protobuf {
        Document::V2Protobuf
    } else {
        Document::V2Json
    };
    let body = cache.get(&registry, which, |registry| {
        let document = apimachinery::openapi::v2::document(&registry.all());
        Some(if protobuf {
            apimachinery::openapi::protobuf::encode(&document)
        } else {
            serde_json::to_vec(&document).unwrap_or_default()
        })
    });
    let content_type = if protobuf {
        respond::OPENAPI_V2_PROTOBUF
    } else {
        "application/json"
    };
    openapi_cache::response(body.unwrap_or_default(), content_type)
}

pub fn openapi_index(store: &Store, cache: &OpenApiCache) -> axum::response::Response {
    let body = cache.get(&store.registry(), Document::V3Index, |registry| {
        serde_json::to_vec(&apimachinery::openapi::v3::index(&registry.all())).ok()
    });
    // kube-apiserver's index handler writes no Content-Type, so Go's sniffing names the JSON
    // body text/plain; clients read the body as JSON whatever it says.
    openapi_cache::response(body.unwrap_or_default(), "text/plain; charset=utf-8")
}

pub fn openapi_document(
    store: &Store,
    cache: &OpenApiCache,
    group: &str,
    version: &str,
) -> Result<axum::response::Response, Error> {
    let which = Document::V3 {
        group: group.to_owned(),
        version: version.to_owned(),
    };
    cache
        .get(&store.registry(), which, |registry| {
            apimachinery::openapi::v3::document(&registry.all(), group, version)
                .and_then(|document| serde_json::to_vec(&document).ok())
        })
        .map(|body| openapi_cache::response(body, "application/json"))
        .ok_or(Error::UnknownResource)
}
