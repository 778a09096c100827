//! Refusing, when a CRD is written, rules whose estimated cost exceeds kube-apiserver's limits:
//! each rule (and `messageExpression`) times the number of times it can run in one object, and the
//! sum over the schema.

use super::super::super::messages::{self, child, index, key};
use super::super::super::node::{Additional, Node};
use super::bounds::{children_per_value, unbounded_cardinality};
use super::{ESTIMATED_PER_EXPRESSION_LIMIT, ESTIMATED_PER_SCHEMA_LIMIT};
use crate::FieldCause;

/// The causes for rules of `root` over the limits; paths are relative to the schema root, the
/// schema's own being "".
pub(crate) fn check_costs(root: &Node, causes: &mut Vec<FieldCause>) {
    let mut total = Total::default();
    walk(root, "", Some(1), &mut total, causes);
    if total.sum > ESTIMATED_PER_SCHEMA_LIMIT {
        for (path, _) in &total.most_expensive {
            causes.push(messages::forbidden(
                path.clone(),
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        causes.push(messages::forbidden(
            "",
            &over_budget(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total.sum,
                ESTIMATED_PER_SCHEMA_LIMIT,
            ),
        ));
    }
}

/// The sum of the estimates, and the (at most four) costliest rules that weigh at least 1% of the
/// schema's limit, costliest first.
#[derive(Default)]
struct Total {
    sum: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Total {
    fn observe(&mut self, path: String, cost: u64) {
        self.sum = self.sum.saturating_add(cost);
        if cost < ESTIMATED_PER_SCHEMA_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path, cost));
        self.most_expensive
            .sort_by_key(|entry| std::cmp::Reverse(entry.1));
        self.most_expensive.truncate(4);
    }
}

/// `cardinality`: how many times the node can occur in one object, `None` when some list or map
/// above it is unbounded.
fn walk(node: &Node, path: &str, cardinality: Option<u64>, total: &mut Total, causes: &mut Vec<FieldCause>) {
    let child_cardinality = match (cardinality, children_per_value(node)) {
        (Some(outer), Some(per_value)) => Some(outer.saturating_mul(per_value)),
        _ => None,
    };
    if let Some(items) = &node.items {
        walk(items, &child(path, "items"), child_cardinality, total, causes);
    }
    for (name, property) in &node.properties {
        walk(
            property,
            &key(&child(path, "properties"), name),
            child_cardinality,
            total,
            causes,
        );
    }
    if let Additional::Schema(values) = &node.additional {
        walk(
            values,
            &child(path, "additionalProperties"),
            child_cardinality,
            total,
            causes,
        );
    }
    let times = cardinality.unwrap_or_else(|| unbounded_cardinality(node));
    for rule in &node.rules {
        let rule_path = index(&child(path, "x-kubernetes-validations"), rule.index);
        let cost = times_cardinality(rule.estimated_cost, times);
        let field = child(&rule_path, "rule");
        if cost > ESTIMATED_PER_EXPRESSION_LIMIT {
            causes.push(messages::forbidden(
                field.clone(),
                &over_budget("estimated rule cost", cost, ESTIMATED_PER_EXPRESSION_LIMIT),
            ));
        }
        total.observe(field, cost);
        if let Some(message_cost) = rule.message_estimated_cost {
            let field = child(&rule_path, "messageExpression");
            if message_cost > ESTIMATED_PER_EXPRESSION_LIMIT {
                causes.push(messages::forbidden(
                    field.clone(),
                    &over_budget(
                        "estimated messageExpression cost",
                        message_cost,
                        ESTIMATED_PER_EXPRESSION_LIMIT,
                    ),
                ));
            }
            total.observe(field, message_cost);
        }
    }
}

/// A rule's cost times how often it runs; a free rule stays free however often it runs.
fn times_cardinality(cost: u64, times: u64) -> u64 {
    if cost == 0 { 0 } else { cost.saturating_mul(times) }
}

/// kube-apiserver's wording of a cost over its limit, with the factor printed as Go prints it.
pub(crate) fn over_budget(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}
