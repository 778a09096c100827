//! Waiting for a custom resource to show in aggregated discovery, which both control planes need
//! before kubectl can use it: kube-apiserver adds a CRD's resource to the document a moment after the
//! CRD is established, and a kubectl run in between answers "no matches for kind" or "the server
//! doesn't have a resource type".

use std::time::Duration;

use serde_json::Value;

/// How long a CRD's resource may take to appear: far beyond the moment kube-apiserver needs.
const PATIENCE: Duration = Duration::from_secs(30);

/// Waits until aggregated discovery lists `plural` in `group`/`version`; panics, naming it, when it
/// does not within [`PATIENCE`] (a test helper: the panic is the test's failure).
pub async fn discovered(client: &kube::Client, group: &str, version: &str, plural: &str) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !lists(client, group, version, plural).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{plural}.{group}/{version} not in aggregated discovery within {PATIENCE:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether the aggregated discovery document lists `plural` in `group`/`version` now.
async fn lists(client: &kube::Client, group: &str, version: &str, plural: &str) -> bool {
    let Ok(request) = http::Request::get("/apis")
        .header(
            "Accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )
        .body(Vec::new())
    else {
        return false;
    };
    let Ok(document) = client.request::<Value>(request).await else {
        return false;
    };
    let named = |items: &Value, key: &str, wanted: &str| -> Vec<Value> {
        items
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| item.pointer(key).and_then(Value::as_str) == Some(wanted))
            .cloned()
            .collect()
    };
    named(&document["items"], "/metadata/name", group)
        .iter()
        .flat_map(|g| named(&g["versions"], "/version", version))
        .any(|v| !named(&v["resources"], "/resource", plural).is_empty())
}
