//! Endpoints: deprecated since v1.33 in favour of EndpointSlices.

use super::Kind;

/// Endpoints: deprecated.
pub(super) struct Endpoints;

impl Kind for Endpoints {
    fn deprecation(&self, version: &str) -> Option<&'static str> {
        (version == "v1")
            .then_some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
    }
}
