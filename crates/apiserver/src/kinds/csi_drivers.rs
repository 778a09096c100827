//! CSIDrivers: a create sets no `metadata.generation`, yet an update that changes the spec counts
//! one more (the first such update makes it 1), as kube-apiserver's registry keeps it; and a DELETE
//! answers with the deleted driver.

use apimachinery::meta;
use serde_json::Value;

use super::Kind;

/// CSIDrivers.
pub(super) struct CsiDrivers;

impl Kind for CsiDrivers {
    fn counts_generation(&self, old: &Value, new: &Value) -> bool {
        meta::spec_part(old) != meta::spec_part(new)
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}
