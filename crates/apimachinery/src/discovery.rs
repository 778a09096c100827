//! Discovery and OpenAPI documents (D3-D8), computed from the served resource types.

use serde_json::Value;

use crate::resource::ResourceType;

/// `GET /api`: `APIVersions`.
pub fn core_api_versions() -> Value {
    todo!("D3")
}

/// `GET /apis`: `APIGroupList` of every non-core group.
pub fn api_group_list(resources: &[ResourceType]) -> Value {
    let _ = resources;
    todo!("D3")
}

/// `GET /api/v1` or `GET /apis/<group>/<version>`: `APIResourceList`, or `None` if nothing is served there.
pub fn api_resource_list(resources: &[ResourceType], group: &str, version: &str) -> Option<Value> {
    let _ = (resources, group, version);
    todo!("D4")
}

/// Aggregated discovery v2 (D6): `APIGroupDiscoveryList` for `/api` (core = true) or `/apis`.
pub fn aggregated_discovery(resources: &[ResourceType], core: bool) -> Value {
    let _ = (resources, core);
    todo!("D6")
}

/// `GET /openapi/v3`: the paths index (D7). The hash of each entry changes whenever that group
/// version's documents change.
pub fn openapi_v3_index(resources: &[ResourceType]) -> Value {
    let _ = resources;
    todo!("D7")
}

/// `GET /openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>` (D7, D8), or `None` if unknown.
pub fn openapi_v3_document(resources: &[ResourceType], group: &str, version: &str) -> Option<Value> {
    let _ = (resources, group, version);
    todo!("D7")
}
