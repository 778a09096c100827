//! Events, served by the core API and by `events.k8s.io` over one storage (as core Events): a body
//! of either API's Event is taken at either path, and what a client wrote to `events.k8s.io` is
//! known only at its create, where the managedFields entry must name the fields of the version it
//! was sent in.

use apimachinery::{meta, patch};
use serde_json::Value;

use super::Kind;

/// Events of both APIs.
pub(super) struct Events;

impl Kind for Events {
    fn takes_either_api_version(&self) -> bool {
        true
    }
}

/// Records the create of an events.k8s.io Event, stored as a core Event, by the fields of the
/// events.k8s.io Event the client sent.
pub(crate) fn record_create_v1(sent: Value, stored: &mut Value, manager: &str) {
    const API_VERSION: &str = "events.k8s.io/v1";
    let mut sent = apimachinery::protobuf::go_shaped(&sent, API_VERSION, "Event").unwrap_or(sent);
    let now = meta::now_rfc3339();
    let write = patch::UpdateWrite {
        manager,
        subresource: None,
        schema: patch::ObjectSchema::BuiltIn {
            api_version: API_VERSION,
            kind: "Event",
        },
        status_subresource: false,
        now: &now,
    };
    patch::record_update(None, &mut sent, &write);
    if let Some(entries) = sent.pointer("/metadata/managedFields").cloned() {
        meta::metadata_mut(stored).insert("managedFields".into(), entries);
    }
}
