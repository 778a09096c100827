//! HorizontalPodAutoscalers: what they scale, their metrics against their targets, their bounds.

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, Doc, NAME, column, fields};

const SPEC: &str = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec";

pub static HORIZONTAL_POD_AUTOSCALER: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Reference", Doc::Field(SPEC, "scaleTargetRef")),
        // Documented from the older v2beta1 type, which says nothing of a default metric.
        column(
            "Targets",
            Doc::Text(
                "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond.",
            ),
        ),
        column("MinPods", Doc::Field(SPEC, "minReplicas")),
        column("MaxPods", Doc::Field(SPEC, "maxReplicas")),
        column(
            "Replicas",
            Doc::Field(
                "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
                "currentReplicas",
            ),
        ),
        AGE,
    ],
    cells: horizontal_pod_autoscaler,
};

fn horizontal_pod_autoscaler(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    // Printed as the stored (v2) object, whichever version it is read as. v1 cannot say where the
    // CPU target stood among the metrics (conversion appends it); it is put first, where it usually
    // stands, so that the targets line up with the current metrics, which keep their order.
    let v2;
    let o = if fields::text(o, "/apiVersion") == "autoscaling/v1" {
        let had_cpu_target = o.pointer("/spec/targetCPUUtilizationPercentage").is_some();
        let mut converted = crate::conversion::horizontal_pod_autoscaler_to_v2(o.clone());
        if had_cpu_target
            && let Some(metrics) = converted
                .pointer_mut("/spec/metrics")
                .and_then(Value::as_array_mut)
        {
            metrics.rotate_right(1);
        }
        v2 = converted;
        &v2
    } else {
        o
    };
    let reference = format!(
        "{}/{}",
        fields::text(o, "/spec/scaleTargetRef/kind"),
        fields::text(o, "/spec/scaleTargetRef/name")
    );
    let min_pods = match o.pointer("/spec/minReplicas").and_then(Value::as_i64) {
        Some(min) => min.to_string(),
        None => "<unset>".into(),
    };
    vec![
        fields::name(o),
        json!(reference),
        json!(metrics(
            fields::items(o, "/spec/metrics"),
            fields::items(o, "/status/currentMetrics")
        )),
        json!(min_pods),
        json!(fields::int(o, "/spec/maxReplicas")),
        json!(fields::int(o, "/status/currentReplicas")),
        fields::age(o, now),
    ]
}

/// A quantity the way the printer shows it, where an absent one is Go's zero quantity.
fn quantity(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(number)) => number.to_string(),
        _ => "0".into(),
    }
}

/// `current/target` of each metric (two at most, then how many more), `<unknown>` for a current
/// value the status does not have yet.
fn metrics(specs: &[Value], statuses: &[Value]) -> String {
    const SHOWN: usize = 2;
    if specs.is_empty() {
        return "<none>".into();
    }
    let mut listed: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| metric(spec, statuses.get(i)))
        .collect();
    let count = listed.len();
    if count > SHOWN {
        listed.truncate(SHOWN);
        return format!("{} + {} more...", listed.join(", "), count - SHOWN);
    }
    listed.join(", ")
}

fn metric(spec: &Value, status: Option<&Value>) -> String {
    let unknown = || "<unknown>".to_owned();
    // The status of the same source as the spec, when the status at that position has one.
    let current = |source: &str| status.and_then(|s| s.get(source)).filter(|s| s.is_object());
    match fields::text(spec, "/type") {
        kind @ ("External" | "Object") => {
            let source = if kind == "External" { "external" } else { "object" };
            let target = spec.pointer(&format!("/{source}/target"));
            match target
                .and_then(|t| t.get("averageValue"))
                .filter(|v| !v.is_null())
            {
                Some(average) => {
                    let now = current(source)
                        .and_then(|s| s.pointer("/current/averageValue"))
                        .filter(|v| !v.is_null())
                        .map_or_else(unknown, |v| quantity(Some(v)));
                    format!("{now}/{} (avg)", quantity(Some(average)))
                }
                None => {
                    let now = current(source).map_or_else(unknown, |s| quantity(s.pointer("/current/value")));
                    format!("{now}/{}", quantity(target.and_then(|t| t.get("value"))))
                }
            }
        }
        "Pods" => {
            let now = current("pods").map_or_else(unknown, |s| quantity(s.pointer("/current/averageValue")));
            format!("{now}/{}", quantity(spec.pointer("/pods/target/averageValue")))
        }
        kind @ ("Resource" | "ContainerResource") => {
            let source = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let name = fields::text(spec, &format!("/{source}/name"));
            let target = spec.pointer(&format!("/{source}/target"));
            match target
                .and_then(|t| t.get("averageValue"))
                .filter(|v| !v.is_null())
            {
                Some(average) => {
                    let now = current(source)
                        .map_or_else(unknown, |s| quantity(s.pointer("/current/averageValue")));
                    format!("{name}: {now}/{}", quantity(Some(average)))
                }
                None => {
                    let now = current(source)
                        .and_then(|s| s.pointer("/current/averageUtilization"))
                        .and_then(Value::as_i64)
                        .map_or_else(unknown, |u| format!("{u}%"));
                    let wanted = target
                        .and_then(|t| t.get("averageUtilization"))
                        .and_then(Value::as_i64)
                        .map_or_else(|| "<auto>".to_owned(), |u| format!("{u}%"));
                    format!("{name}: {now}/{wanted}")
                }
            }
        }
        _ => "<unknown type>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_autoscaler_cells_show_reference_targets_and_bounds() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let hpa = json!({"apiVersion": "autoscaling/v2", "metadata": {"name": "web"}, "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
                {"type": "Pods", "pods": {"target": {"averageValue": "1k"}}},
                {"type": "External", "external": {"target": {"value": "5"}}}]},
            "status": {"currentReplicas": 3, "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}]}});
        assert_eq!(
            (HORIZONTAL_POD_AUTOSCALER.cells)(&hpa, now),
            [
                json!("web"),
                json!("Deployment/web"),
                json!("cpu: 40%/80%, <unknown>/1k + 1 more..."),
                json!("2"),
                json!(10),
                json!(3),
                json!("<unknown>")
            ]
        );
        let v1 = json!({"apiVersion": "autoscaling/v1", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3,
                "targetCPUUtilizationPercentage": 50}});
        assert_eq!(
            (HORIZONTAL_POD_AUTOSCALER.cells)(&v1, now)[2..4],
            [json!("cpu: <unknown>/50%"), json!("<unset>")]
        );
    }

    #[test]
    fn t1_autoscaler_metrics_of_every_source() {
        let object = json!({"type": "Object", "object": {"target": {"averageValue": "2"}}});
        let status = json!({"object": {"current": {"averageValue": "1"}}});
        assert_eq!(metric(&object, Some(&status)), "1/2 (avg)");
        let memory = json!({"type": "ContainerResource",
            "containerResource": {"name": "memory", "container": "app", "target": {"averageValue": "1Gi"}}});
        assert_eq!(metric(&memory, None), "memory: <unknown>/1Gi");
        let auto =
            json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}});
        assert_eq!(metric(&auto, None), "cpu: <unknown>/<auto>");
        assert_eq!(metric(&json!({"type": "Other"}), None), "<unknown type>");
        assert_eq!(metrics(&[], &[]), "<none>");
    }
}
