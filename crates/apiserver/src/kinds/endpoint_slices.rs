//! EndpointSlices: `metadata.generation` is 1 on a create and counts every change but the metadata's,
//! and a change of the labels too: kube-apiserver's registry compares the slice without its metadata
//! (its address type, endpoints and ports), then the labels, which say the Service and the
//! controller the slice is for.

use apimachinery::meta;
use serde_json::Value;

use super::{Kind, metadata_maps::metadata_map};

/// EndpointSlices.
pub(super) struct EndpointSlices;

impl Kind for EndpointSlices {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn counts_generation(&self, old: &Value, new: &Value) -> bool {
        meta::spec_part(old) != meta::spec_part(new)
            || metadata_map(old, "labels") != metadata_map(new, "labels")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn slice(labels: Value, annotations: Value, port: u16) -> Value {
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web", "labels": labels, "annotations": annotations},
            "addressType": "IPv4", "endpoints": [], "ports": [{"port": port}]})
    }

    #[test]
    fn ports_and_labels_count_and_annotations_do_not() {
        let old = slice(json!({"a": "1"}), json!({}), 80);
        let count = |new: Value| EndpointSlices.counts_generation(&old, &new);
        assert!(count(slice(json!({"a": "1"}), json!({}), 81)));
        assert!(count(slice(json!({"a": "2"}), json!({}), 80)));
        assert!(!count(slice(json!({"a": "1"}), json!({"note": "x"}), 80)));
    }
}
