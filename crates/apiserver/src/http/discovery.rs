//! `/version`, discovery (D2-D6) and OpenAPI v2 and v3 (D7) endpoints: thin wrappers over apimachinery's
//! documents computed from the registry of the moment.

use apimachinery::discovery as docs;
use serde_json::{Value, json};

use super::{
    Call,
    openapi_cache::{self, Document, OpenApiCache},
    respond::{self, AGGREGATED_DISCOVERY, Representation},
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

pub fn core(store: &Store, call: &Call, address: std::net::SocketAddr) -> axum::response::Response {
    if respond::negotiate(&call.accept) == Representation::AggregatedDiscovery {
        return respond::json_with_type(
            &docs::aggregated_discovery(&store.registry().all(), true),
            AGGREGATED_DISCOVERY,
        );
    }
    respond::json(200, &docs::core_api_versions(&address.to_string()))
}

pub fn groups(store: &Store, call: &Call) -> axum::response::Response {
    let all = store.registry().all();
    if respond::negotiate(&call.accept) == Representation::AggregatedDiscovery {
        return respond::json_with_type(&docs::aggregated_discovery(&all, false), AGGREGATED_DISCOVERY);
    }
    respond::json(200, &docs::api_group_list(&all))
}

pub fn resources(store: &Store, group: &str, version: &str) -> Result<axum::response::Response, Error> {
    docs::api_resource_list(&store.registry().all(), group, version)
        .map(|list| respond::json(200, &list))
        .ok_or(Error::UnknownResource)
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
