//! A Pod's quality-of-service class, which the simulated kubelet reports and a resize keeps.

use serde_json::Value;

/// Guaranteed when every container limits CPU and memory and requests what it limits (or nothing),
/// BestEffort when none requests or limits anything, Burstable otherwise.
pub(crate) fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["/spec/initContainers", "/spec/containers"]
        .iter()
        .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
        .flatten()
        .collect();
    let amounts = |c: &Value, which: &str| {
        c.pointer(&format!("/resources/{which}"))
            .and_then(Value::as_object)
            .cloned()
    };
    let any = containers.iter().any(|c| {
        amounts(c, "requests").is_some_and(|m| !m.is_empty())
            || amounts(c, "limits").is_some_and(|m| !m.is_empty())
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = amounts(c, "limits").unwrap_or_default();
        let requests = amounts(c, "requests").unwrap_or_default();
        ["cpu", "memory"].iter().all(|r| {
            limits.contains_key(*r)
                && requests
                    .get(*r)
                    .is_none_or(|wanted| Some(wanted) == limits.get(*r))
        })
    });
    if guaranteed { "Guaranteed" } else { "Burstable" }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_quality_of_service_follows_requests_and_limits() {
        let limited = |requests: Value| {
            json!({"spec": {"containers": [{"name": "a",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": requests}}]}})
        };
        assert_eq!(qos_class(&limited(json!({}))), "Guaranteed");
        assert_eq!(qos_class(&limited(json!({"cpu": "1"}))), "Guaranteed");
        assert_eq!(qos_class(&limited(json!({"cpu": "500m"}))), "Burstable");
    }
}
