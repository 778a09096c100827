use serde_json::{Value, json};

use super::super::super::StructuralSchema;
use super::limits::over_budget;

fn compile(field: Value) -> Result<StructuralSchema, Vec<String>> {
    StructuralSchema::compile(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"field": field}}}}),
    )
    .map_err(|causes| {
        causes
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    })
}

#[test]
fn over_budget_prints_the_factor_as_kube_apiserver_does() {
    assert!(over_budget("estimated rule cost", 12_582_910, 10_000_000).contains("factor of 1.258291x "));
    assert!(over_budget("estimated rule cost", 19_000_000, 10_000_000).contains("factor of 1.9x "));
    assert!(
        over_budget("estimated rule cost", 2_000_000_000, 10_000_000).contains("factor of more than 100x ")
    );
}

#[test]
fn a_rule_on_items_of_an_unbounded_list_runs_once_per_item_a_request_holds() {
    let items = |max_items: Option<u64>| {
        let mut list = json!({"type": "array", "items": {"type": "object",
            "properties": {"name": {"type": "string", "maxLength": 10}},
            "x-kubernetes-validations": [{"rule": "self.name.matches('^[a-z]+$')"}]}});
        if let Some(max) = max_items {
            list["maxItems"] = json!(max);
        }
        list
    };
    let refused = compile(items(None)).err().unwrap_or_default();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].starts_with(
            "properties[spec].properties[field].items.x-kubernetes-validations[0].rule: Forbidden: \
             estimated rule cost exceeds budget by factor of 1.258291x"
        ),
        "{refused:?}"
    );
    assert!(compile(items(Some(1000))).is_ok());
}

#[test]
fn string_and_map_bounds_bring_a_rule_under_the_limit() {
    let unbounded = json!({"type": "object", "additionalProperties": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(k, self[k].contains('v'))"}]});
    assert!(compile(unbounded.clone()).is_err());
    let mut bounded = unbounded;
    bounded["maxProperties"] = json!(20);
    bounded["additionalProperties"]["maxLength"] = json!(30);
    assert!(compile(bounded).is_ok());
}

#[test]
fn an_evaluation_over_the_per_call_limit_stops_every_rule() {
    let schema = compile(
        json!({"type": "array", "maxItems": 500, "items": {"type": "string", "maxLength": 10},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y || x != y))"}]}),
    )
    .expect("admitted: under the estimated limit");
    let names = |n: usize| json!({"spec": {"field": (0..n).map(|i| format!("n{i}")).collect::<Vec<_>>()}});
    assert!(schema.validate(&names(10)).is_empty());
    let causes: Vec<String> = schema
        .validate(&names(500))
        .into_iter()
        .map(|c| c.message)
        .collect();
    assert_eq!(causes.len(), 1);
    assert!(
        causes[0].contains("'operation cancelled: actual cost limit exceeded'"),
        "{causes:?}"
    );
}
