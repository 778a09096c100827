//! `/version`, discovery (D2-D6) and OpenAPI v2 and v3 (D7) endpoints: thin wrappers over apimachinery's
//! documents computed from the registry of the moment.

use apimachinery::discovery as docs;
use serde_json::{Value, json};

use super::{
    Call,
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

pub fn core(store: &Store, call: &Call) -> axum::response::Response {
    if respond::negotiate(&call.accept) == Representation::AggregatedDiscovery {
        return respond::json_with_type(
            &docs::aggregated_discovery(&store.registry().all(), true),
            AGGREGATED_DISCOVERY,
        );
    }
    respond::json(200, &docs::core_api_versions())
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
pub fn openapi_v2(store: &Store, call: &Call) -> axum::response::Response {
    let document = apimachinery::openapi::v2::document(&store.registry().all());
    if respond::wants_openapi_protobuf(&call.accept) {
        return respond::bytes(
            apimachinery::openapi::protobuf::encode(&document),
            respond::OPENAPI_V2_PROTOBUF,
        );
    }
    respond::json(200, &document)
}

pub fn openapi_index(store: &Store) -> axum::response::Response {
    respond::json(200, &apimachinery::openapi::v3::index(&store.registry().all()))
}

pub fn openapi_document(
    store: &Store,
    group: &str,
    version: &str,
) -> Result<axum::response::Response, Error> {
    apimachinery::openapi::v3::document(&store.registry().all(), group, version)
        .map(|doc| respond::json(200, &doc))
        .ok_or(Error::UnknownResource)
}
