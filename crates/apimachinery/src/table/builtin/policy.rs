//! Policies: resource quotas, disruption budgets, priority and runtime classes, validating admission
//! policies and their bindings.

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, Column, Doc, NAME, column, fields};

const fn typed(name: &'static str, column_type: &'static str, doc: Doc) -> Column {
    Column {
        column_type,
        ..column(name, doc)
    }
}

pub static RESOURCE_QUOTA: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Request",
            Doc::Text("Request represents a minimum amount of cpu/memory that a container may consume."),
        ),
        column(
            "Limit",
            Doc::Text(
                "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
            ),
        ),
        AGE,
    ],
    cells: resource_quota,
};

/// `used/hard` of every resource the status names, by name; `limits.*` in the second column.
fn resource_quota(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let mut names: Vec<&String> = o
        .pointer("/status/hard")
        .and_then(Value::as_object)
        .map(|hard| hard.keys().collect())
        .unwrap_or_default();
    names.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for name in names {
        let key = name.replace('~', "~0").replace('/', "~1");
        let entry = format!(
            "{name}: {}/{}",
            fields::quantity(o, &format!("/status/used/{key}")),
            fields::quantity(o, &format!("/status/hard/{key}"))
        );
        match name.split_once('.') {
            Some(("limits", _)) => limits.push(entry),
            _ => requests.push(entry),
        }
    }
    vec![
        fields::name(o),
        json!(requests.join(", ")),
        json!(limits.join(", ")),
        fields::age(o, now),
    ]
}

pub static POD_DISRUPTION_BUDGET: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Min Available",
            Doc::Text("The minimum number of pods that must be available."),
        ),
        column(
            "Max Unavailable",
            Doc::Text("The maximum number of pods that may be unavailable."),
        ),
        typed(
            "Allowed Disruptions",
            "integer",
            Doc::Text("Calculated number of pods that may be disrupted at this time."),
        ),
        AGE,
    ],
    cells: pod_disruption_budget,
};

/// An int-or-string as Go prints it; `N/A` when unset.
fn int_or_string(o: &Value, pointer: &str) -> String {
    match o.pointer(pointer) {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".into(),
    }
}

fn pod_disruption_budget(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![
        fields::name(o),
        json!(int_or_string(o, "/spec/minAvailable")),
        json!(int_or_string(o, "/spec/maxUnavailable")),
        json!(fields::int(o, "/status/disruptionsAllowed")),
        fields::age(o, now),
    ]
}

const PRIORITY_CLASS: &str = "io.k8s.api.scheduling.v1.PriorityClass";

pub static PRIORITY_CLASS_TABLE: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        typed("Value", "integer", Doc::Field(PRIORITY_CLASS, "value")),
        typed(
            "Global-Default",
            "boolean",
            Doc::Field(PRIORITY_CLASS, "globalDefault"),
        ),
        AGE,
        column("PreemptionPolicy", Doc::Field(PRIORITY_CLASS, "preemptionPolicy")),
    ],
    cells: priority_class,
};

fn priority_class(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![
        fields::name(o),
        json!(fields::int(o, "/value")),
        json!(fields::flag(o, "/globalDefault", false)),
        fields::age(o, now),
        json!(fields::text(o, "/preemptionPolicy")),
    ]
}

pub static RUNTIME_CLASS: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        // Go documents this column by an ObjectMeta field that does not exist: no description.
        column("Handler", Doc::Text("")),
        AGE,
    ],
    cells: runtime_class,
};

fn runtime_class(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![
        fields::name(o),
        json!(fields::text(o, "/handler")),
        fields::age(o, now),
    ]
}

pub static VALIDATING_ADMISSION_POLICY: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        typed(
            "Validations",
            "integer",
            Doc::Text("Validations indicates the number of validation rules defined in this configuration"),
        ),
        column(
            "ParamKind",
            Doc::Text("ParamKind specifies the kind of resources used to parameterize this policy"),
        ),
        AGE,
    ],
    cells: validating_admission_policy,
};

fn validating_admission_policy(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let param_kind = match o.pointer("/spec/paramKind") {
        Some(kind) if kind.is_object() => format!(
            "{}/{}",
            fields::text(kind, "/apiVersion"),
            fields::text(kind, "/kind")
        ),
        _ => "<unset>".into(),
    };
    vec![
        fields::name(o),
        json!(fields::count(o, "/spec/validations")),
        json!(param_kind),
        fields::age(o, now),
    ]
}

pub static VALIDATING_ADMISSION_POLICY_BINDING: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "PolicyName",
            Doc::Text("PolicyName indicates the policy definition which the policy binding binded to"),
        ),
        column(
            "ParamRef",
            Doc::Text("ParamRef indicates the param resource which sets the configration param"),
        ),
        AGE,
    ],
    cells: validating_admission_policy_binding,
};

/// Go's generated `String()` of a `LabelSelector`, which the binding's printer shows as it is.
fn go_selector_dump(selector: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = fields::items(selector, "/matchExpressions")
        .iter()
        .map(|e| {
            let values: Vec<&str> = fields::items(e, "/values")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                fields::text(e, "/key"),
                fields::text(e, "/operator"),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

fn validating_admission_policy_binding(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let param = match o.pointer("/spec/paramRef") {
        Some(reference) if reference.is_object() => {
            let name = fields::text(reference, "/name");
            let namespace = fields::text(reference, "/namespace");
            match reference.get("selector") {
                _ if !name.is_empty() && !namespace.is_empty() => format!("{namespace}/{name}"),
                // Whether the parameter is cluster-scoped is not known here: any namespace.
                _ if !name.is_empty() => format!("*/{name}"),
                Some(selector) if selector.is_object() => go_selector_dump(selector),
                _ => "<unset>".into(),
            }
        }
        _ => "<unset>".into(),
    };
    vec![
        fields::name(o),
        json!(fields::text(o, "/spec/policyName")),
        json!(param),
        fields::age(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_quota_cells_split_requests_from_limits() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let quota = json!({"metadata": {"name": "q"}, "status": {
            "hard": {"pods": "10", "limits.cpu": "2", "requests.cpu": "1", "count/deployments.apps": "5"},
            "used": {"pods": "3", "limits.cpu": "500m"}}});
        assert_eq!(
            (RESOURCE_QUOTA.cells)(&quota, now),
            [
                json!("q"),
                json!("count/deployments.apps: 0/5, pods: 3/10, requests.cpu: 0/1"),
                json!("limits.cpu: 500m/2"),
                json!("<unknown>")
            ]
        );
    }

    #[test]
    fn t1_budget_priority_and_runtime_class_cells() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let budget = json!({"metadata": {"name": "b"}, "spec": {"minAvailable": "50%"},
            "status": {"disruptionsAllowed": 2}});
        assert_eq!(
            (POD_DISRUPTION_BUDGET.cells)(&budget, now)[1..4],
            [json!("50%"), json!("N/A"), json!(2)]
        );
        let budget = json!({"spec": {"maxUnavailable": 1}});
        assert_eq!(
            (POD_DISRUPTION_BUDGET.cells)(&budget, now)[1..3],
            [json!("N/A"), json!("1")]
        );
        let class = json!({"metadata": {"name": "high"}, "value": 1000, "globalDefault": true,
            "preemptionPolicy": "Never"});
        assert_eq!(
            (PRIORITY_CLASS_TABLE.cells)(&class, now),
            [
                json!("high"),
                json!(1000),
                json!(true),
                json!("<unknown>"),
                json!("Never")
            ]
        );
        let runtime = json!({"metadata": {"name": "gvisor"}, "handler": "runsc"});
        assert_eq!((RUNTIME_CLASS.cells)(&runtime, now)[1], json!("runsc"));
    }

    #[test]
    fn t1_admission_policy_cells_show_validations_and_parameters() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let policy = json!({"metadata": {"name": "p"}, "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [{"expression": "true"}, {"expression": "false"}]}});
        assert_eq!(
            (VALIDATING_ADMISSION_POLICY.cells)(&policy, now)[1..3],
            [json!(2), json!("v1/ConfigMap")]
        );
        assert_eq!(
            (VALIDATING_ADMISSION_POLICY.cells)(&json!({}), now)[2],
            json!("<unset>")
        );
        let binding = |param: Value| {
            let binding = json!({"spec": {"policyName": "p", "paramRef": param}});
            (VALIDATING_ADMISSION_POLICY_BINDING.cells)(&binding, now)[2].clone()
        };
        assert_eq!(binding(json!({"name": "c", "namespace": "ns"})), json!("ns/c"));
        assert_eq!(binding(json!({"name": "c"})), json!("*/c"));
        assert_eq!(
            binding(json!({"selector": {"matchLabels": {"b": "2", "a": "1"},
                "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]}})),
            json!(
                "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
            )
        );
        assert_eq!(binding(json!({})), json!("<unset>"));
    }
}
