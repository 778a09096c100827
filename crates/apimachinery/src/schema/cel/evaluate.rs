//! Evaluating the rules of a schema against an object, and on update against the old object too.

use std::sync::Arc;

use cel::{Context, ExecutionError, Value as Cel};
use serde_json::Value;

use super::super::messages::{self, child, index};
use super::super::node::Node;
use super::super::validate::{correlated_item, json_eq};
use super::cost::runtime::{Budget, Exceeded};
use super::library::ENV;
use super::rule::{Reason, Rule};
use super::values::{field_node, root_to_cel, to_cel};
use crate::FieldCause;

/// The causes of every failed rule in `object` (the root at `path` ""), `old` being the stored
/// object on update.
pub(crate) fn validate_rules(root: &Node, object: &Value, old: Option<&Value>, out: &mut Vec<FieldCause>) {
    let mut budget = Some(Budget::default());
    walk(root, object, old, "", true, &mut budget, out);
}

/// `budget` becomes `None` once a limit is exceeded: kube-apiserver then runs no further rule.
fn walk(
    node: &Node,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    is_root: bool,
    budget: &mut Option<Budget>,
    out: &mut Vec<FieldCause>,
) {
    if value.is_null() || budget.is_none() {
        return;
    }
    if !node.rules.is_empty() {
        let convert = |v: &Value| {
            if is_root {
                root_to_cel(node, v)
            } else {
                to_cel(Some(node), v)
            }
        };
        let this = convert(value);
        let previous = old.filter(|o| !o.is_null()).map(convert);
        // Ratcheting: a value equal to the one it correlates with in the stored object is not held
        // to the rules that read it alone; rules that compare it with `oldSelf` still run.
        let unchanged = old.is_some_and(|old| json_eq(old, value));
        for rule in &node.rules {
            if rule.transition && previous.is_none() && !rule.optional_old_self {
                continue;
            }
            if unchanged && !rule.transition {
                continue;
            }
            let Some(spending) = budget.as_mut() else {
                return;
            };
            let read: Vec<&Value> = [Some(value), old.filter(|_| rule.transition)]
                .into_iter()
                .flatten()
                .collect();
            if let Err(exceeded) = spending.charge(rule, node, rule.is_root, &read) {
                out.push(out_of_budget(rule, node, path, exceeded));
                *budget = None;
                return;
            }
            if let Some(cause) = check_rule(rule, node, &this, previous.as_ref(), path) {
                out.push(cause);
            }
        }
    }
    match value {
        Value::Object(map) => {
            for (name, field) in map {
                if let Some(field_schema) = field_node(Some(node), name) {
                    let old_field = old.and_then(|o| o.get(name));
                    // A map's entries are keys of it (`map[foo]`), a property a child (`spec.x`),
                    // as the CEL validator's field paths print them.
                    let field_path = match node.properties.contains_key(name) {
                        true => child(path, name),
                        false => messages::key(path, name),
                    };
                    walk(field_schema, field, old_field, &field_path, false, budget, out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = node.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    let old_item = correlated_item(node, item, old);
                    walk(item_schema, item, old_item, &index(path, i), false, budget, out);
                }
            }
        }
        _ => {}
    }
}

/// The cause reporting a rule that would exceed a cost limit, at the rule's node.
fn out_of_budget(rule: &Rule, node: &Node, path: &str, exceeded: Exceeded) -> FieldCause {
    let type_name = Value::String(node.ty.map(|t| t.name()).unwrap_or_default().to_owned());
    let detail = match exceeded {
        Exceeded::PerCall => format!(
            "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
            rule.error_string()
        ),
        Exceeded::PerObject => {
            "validation failed due to running out of cost budget, no further validation rules will be run"
                .to_owned()
        }
    };
    messages::invalid(path, &type_name, &detail)
}

/// The old item a new list item is compared with: only a `map` list's items correlate, by their keys.
fn check_rule(rule: &Rule, node: &Node, this: &Cel, old: Option<&Cel>, path: &str) -> Option<FieldCause> {
    if rule.transition && old.is_none() && !rule.optional_old_self {
        return None;
    }
    let mut context = Context::with_env(Arc::clone(&ENV));
    context.add_variable_from_value("self", this.clone());
    if rule.transition {
        let old_self = match old {
            Some(old) if rule.optional_old_self => optional_of(old.clone()),
            Some(old) => old.clone(),
            None => optional_none(),
        };
        context.add_variable_from_value("oldSelf", old_self);
    }
    let type_name = Value::String(node.ty.map(|t| t.name()).unwrap_or_default().to_owned());
    let field = format!("{path}{}", rule.field_suffix);
    match rule.program.execute(&context) {
        Ok(Cel::Bool(true)) => None,
        Ok(Cel::Bool(false)) => {
            let message = custom_message(rule, &context).unwrap_or_else(|| rule.message_or_default());
            Some(match rule.reason {
                Reason::Invalid => messages::invalid(field, &type_name, &message),
                Reason::Forbidden => messages::forbidden(field, &message),
                Reason::Required => messages::required(field, &message),
                Reason::Duplicate => messages::duplicate(field, &type_name),
            })
        }
        Ok(_) => Some(messages::invalid(
            field,
            &type_name,
            &format!(
                "rule did not evaluate to a bool evaluating rule: {}",
                rule.error_string()
            ),
        )),
        Err(error) => Some(messages::invalid(
            field,
            &type_name,
            &format!("{} evaluating rule: {}", go_error(&error), rule.error_string()),
        )),
    }
}

/// `messageExpression`'s string, when it evaluates to a non-blank single line; otherwise the
/// static message applies, as in kube-apiserver.
fn custom_message(rule: &Rule, context: &Context) -> Option<String> {
    let program = rule.message_expression.as_ref()?;
    match program.execute(context) {
        Ok(Cel::String(text)) if !text.trim().is_empty() && !text.contains('\n') => {
            Some(text.trim().to_owned())
        }
        _ => None,
    }
}

fn optional_of(value: Cel) -> Cel {
    Cel::Opaque(Arc::new(cel::objects::OptionalValue::of(value)))
}

fn optional_none() -> Cel {
    Cel::Opaque(Arc::new(cel::objects::OptionalValue::none()))
}

/// An evaluation error in cel-go's words, where they are known.
pub(crate) fn go_error(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::NoSuchOverload(_) => "no such overload".to_owned(),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of range: {}", go_cel(i)),
        other => other.to_string(),
    }
}

fn go_cel(value: &Cel) -> String {
    match value {
        Cel::Int(i) => i.to_string(),
        Cel::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    }
}
