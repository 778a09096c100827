//! PriorityClasses: `metadata.generation` is 1 on a create and stays 1, as kube-apiserver's registry
//! sets it on a create and counts no change of an update (a class's value and preemption policy
//! cannot change; its description and whether it is the default may, uncounted).

use serde_json::Value;

use super::Kind;

/// PriorityClasses.
pub(super) struct PriorityClasses;

impl Kind for PriorityClasses {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn counts_generation(&self, _old: &Value, _new: &Value) -> bool {
        false
    }
}
