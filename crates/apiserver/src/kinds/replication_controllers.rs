//! ReplicationControllers: their spec's changes counted in `metadata.generation`, and, as
//! kube-apiserver's registry does at v1 for clients from before garbage collection, their dependents
//! orphaned by a delete that names no propagation.

use super::Kind;

/// ReplicationControllers.
pub(super) struct ReplicationControllers;

impl Kind for ReplicationControllers {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn orphans_dependents_by_default(&self) -> bool {
        true
    }
}
