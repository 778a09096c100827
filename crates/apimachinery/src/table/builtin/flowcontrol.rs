//! API priority and fairness: FlowSchemas and PriorityLevelConfigurations.

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, Doc, NAME, column, fields};

const FLOW_SCHEMA_SPEC: &str = "io.k8s.api.flowcontrol.v1.FlowSchemaSpec";

pub static FLOW_SCHEMA: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "PriorityLevel",
            Doc::Field(
                "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationReference",
                "name",
            ),
        ),
        column(
            "MatchingPrecedence",
            Doc::Field(FLOW_SCHEMA_SPEC, "matchingPrecedence"),
        ),
        column(
            "DistinguisherMethod",
            Doc::Field(FLOW_SCHEMA_SPEC, "distinguisherMethod"),
        ),
        AGE,
        column(
            "MissingPL",
            Doc::Text("references a broken or non-existent PriorityLevelConfiguration"),
        ),
    ],
    cells: flow_schema,
};

fn flow_schema(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let distinguisher = match o.pointer("/spec/distinguisherMethod") {
        Some(method) if method.is_object() => fields::text(method, "/type").to_owned(),
        _ => "<none>".into(),
    };
    // Whether the priority level it names is missing, as its Dangling condition says; `?` unknown.
    let missing = fields::items(o, "/status/conditions")
        .iter()
        .find(|c| fields::text(c, "/type") == "Dangling")
        .map_or("?", |c| fields::text(c, "/status"));
    vec![
        fields::name(o),
        json!(fields::text(o, "/spec/priorityLevelConfiguration/name")),
        json!(fields::int(o, "/spec/matchingPrecedence")),
        json!(distinguisher),
        fields::age(o, now),
        json!(missing),
    ]
}

const QUEUING: &str = "io.k8s.api.flowcontrol.v1.QueuingConfiguration";

pub static PRIORITY_LEVEL_CONFIGURATION: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Type",
            Doc::Field("io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationSpec", "type"),
        ),
        column(
            "NominalConcurrencyShares",
            Doc::Field(
                "io.k8s.api.flowcontrol.v1.LimitedPriorityLevelConfiguration",
                "nominalConcurrencyShares",
            ),
        ),
        column("Queues", Doc::Field(QUEUING, "queues")),
        column("HandSize", Doc::Field(QUEUING, "handSize")),
        column("QueueLengthLimit", Doc::Field(QUEUING, "queueLengthLimit")),
        AGE,
    ],
    cells: priority_level_configuration,
};

fn priority_level_configuration(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let none = || json!("<none>");
    let (mut shares, mut queues, mut hand_size, mut queue_length) = (none(), none(), none(), none());
    if let Some(limited) = o.pointer("/spec/limited").filter(|l| l.is_object()) {
        shares = json!(fields::int(limited, "/nominalConcurrencyShares"));
        if let Some(queuing) = limited
            .pointer("/limitResponse/queuing")
            .filter(|q| q.is_object())
        {
            queues = json!(fields::int(queuing, "/queues"));
            hand_size = json!(fields::int(queuing, "/handSize"));
            queue_length = json!(fields::int(queuing, "/queueLengthLimit"));
        }
    }
    vec![
        fields::name(o),
        json!(fields::text(o, "/spec/type")),
        shares,
        queues,
        hand_size,
        queue_length,
        fields::age(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_flow_schema_cells_show_level_precedence_and_dangling() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let schema = json!({"metadata": {"name": "system-leader-election"}, "spec": {
            "priorityLevelConfiguration": {"name": "leader-election"}, "matchingPrecedence": 100,
            "distinguisherMethod": {"type": "ByUser"}},
            "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        assert_eq!(
            (FLOW_SCHEMA.cells)(&schema, now),
            [
                json!("system-leader-election"),
                json!("leader-election"),
                json!(100),
                json!("ByUser"),
                json!("<unknown>"),
                json!("False")
            ]
        );
        let bare = (FLOW_SCHEMA.cells)(&json!({}), now);
        assert_eq!((bare[3].clone(), bare[5].clone()), (json!("<none>"), json!("?")));
    }

    #[test]
    fn t1_priority_level_cells_show_queuing_or_none() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let limited = json!({"metadata": {"name": "workload-low"}, "spec": {"type": "Limited",
            "limited": {"nominalConcurrencyShares": 100, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}});
        assert_eq!(
            (PRIORITY_LEVEL_CONFIGURATION.cells)(&limited, now)[1..6],
            [json!("Limited"), json!(100), json!(128), json!(6), json!(50)]
        );
        let exempt = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}});
        assert_eq!(
            (PRIORITY_LEVEL_CONFIGURATION.cells)(&exempt, now)[1..6],
            [
                json!("Exempt"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }
}
