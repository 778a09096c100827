//! Bindings: kube-apiserver serves the legacy `bindings` resource with the pods' `binding`
//! subresource, so creating one binds the pod it names to a node; nothing is stored.

use super::Kind;

/// Bindings: a create binds a pod.
pub(super) struct Bindings;

impl Kind for Bindings {
    fn binds_pods(&self) -> bool {
        true
    }
}
