//! Compiling the `x-kubernetes-validations` of one schema node, with apiextensions-apiserver's
//! causes for rules it refuses.
//!
//! The `cel` crate parses but does not type-check, so the checks kube-apiserver's CEL checker makes
//! are partly made here by walking the parsed expression against the schema: a field that `self`
//! (or `oldSelf`) does not declare, and a rule that is a non-boolean literal or field. Deeper type
//! errors (`self.replicas == 'a'`) are only found when the rule runs.

use std::sync::Arc;

use cel::common::ast::{Expr, LiteralValue, SelectExpr};
use cel::{ParseErrors, Program};
use serde_json::{Map, Value};

use super::super::messages::{self, child, go_quote, index};
use super::super::node::{Additional, JsonType, Node};
use super::cost;
use super::library::ENV;
use super::rule::{Reason, Rule};
use crate::FieldCause;

/// The rules at `path` (relative to the schema root) of the node `node` compiled from `map`.
pub(crate) fn compile_rules(
    map: &Map<String, Value>,
    node: &Node,
    path: &str,
    causes: &mut Vec<FieldCause>,
) -> Vec<Arc<Rule>> {
    let Some(entries) = map.get("x-kubernetes-validations").and_then(Value::as_array) else {
        return Vec::new();
    };
    let list_path = child(path, "x-kubernetes-validations");
    let is_root = path.is_empty() || node.embedded_resource;
    entries
        .iter()
        .enumerate()
        .filter_map(|(i, entry)| compile_rule(entry, node, is_root, i, &index(&list_path, i), causes))
        .map(Arc::new)
        .collect()
}

fn compile_rule(
    entry: &Value,
    node: &Node,
    is_root: bool,
    position_in_list: usize,
    path: &str,
    causes: &mut Vec<FieldCause>,
) -> Option<Rule> {
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
    let source = text("rule").unwrap_or_default();
    let message = text("message").filter(|m| !m.is_empty());
    let expression_source = text("messageExpression").filter(|m| !m.is_empty());
    let reason_name = text("reason");
    let field_path = text("fieldPath").filter(|p| !p.is_empty());
    let optional_old_self = entry.get("optionalOldSelf").and_then(Value::as_bool);
    let before = causes.len();

    if source.trim().is_empty() {
        causes.push(messages::required(child(path, "rule"), ""));
    }
    let reason = match reason_name.as_deref() {
        None => Reason::Invalid,
        Some(name) => Reason::parse(name).unwrap_or_else(|| {
            causes.push(messages::not_supported(
                child(path, "reason"),
                &Value::String(name.to_owned()),
                &Reason::NAMES.map(str::to_owned),
            ));
            Reason::Invalid
        }),
    };
    let field_suffix = match &field_path {
        None => String::new(),
        Some(field_path) => field_suffix(node, field_path).unwrap_or_else(|| {
            causes.push(messages::invalid(
                child(path, "fieldPath"),
                &Value::String(field_path.clone()),
                "fieldPath must be a valid path",
            ));
            String::new()
        }),
    };
    let go_rule = || {
        go_validation_rule(
            &source,
            message.as_deref(),
            expression_source.as_deref(),
            reason_name.as_deref(),
            field_path.as_deref(),
            optional_old_self,
        )
    };
    let program = match ENV.compile(&source) {
        Ok(program) => Some(program),
        Err(errors) if !source.trim().is_empty() => {
            let detail = format!("compilation failed: {}", render_parse_errors(&source, &errors));
            causes.push(invalid_rule(child(path, "rule"), &go_rule(), &detail));
            None
        }
        Err(_) => None,
    };
    if let Some(program) = &program
        && let Some(problem) = check_against_schema(program, &source, node)
    {
        let detail = match problem {
            Problem::Undefined(position, rendered) => {
                format!("compilation failed: ERROR: <input>:{position}: {rendered}")
            }
            Problem::NotBool => "cel expression must evaluate to a bool".to_owned(),
        };
        causes.push(invalid_rule(child(path, "rule"), &go_rule(), &detail));
    }
    let message_expression = match &expression_source {
        None => None,
        Some(expression) => match ENV.compile(expression) {
            Ok(program) => Some(program),
            Err(errors) => {
                let detail = format!(
                    "messageExpression compilation failed: {}",
                    render_parse_errors(expression, &errors)
                );
                causes.push(messages::invalid(
                    child(path, "messageExpression"),
                    &Value::String(expression.clone()),
                    &detail,
                ));
                None
            }
        },
    };
    let program = program?;
    if causes.len() != before {
        return None;
    }
    let transition = program.references().has_variable("oldSelf");
    let estimated_cost = cost::estimated_cost(&program, node, is_root);
    let message_estimated_cost = message_expression
        .as_ref()
        .map(|expression| cost::estimated_cost(expression, node, is_root));
    Some(Rule {
        index: position_in_list,
        source,
        program,
        message,
        message_expression,
        reason,
        field_suffix,
        transition,
        optional_old_self: optional_old_self.unwrap_or(false),
        is_root,
        estimated_cost,
        message_estimated_cost,
    })
}

/// `field.Invalid` whose bad value is the rule printed as Go's `%#v` prints the internal struct.
fn invalid_rule(field: String, go_rule: &str, detail: &str) -> FieldCause {
    FieldCause::new(
        messages::INVALID,
        field,
        format!("Invalid value: {go_rule}: {detail}"),
    )
}

/// The rule as kube-apiserver prints it in a compile error. Go prints a set `reason` or
/// `optionalOldSelf` as a pointer address, which means nothing outside that process; the value
/// itself is printed in its place.
fn go_validation_rule(
    rule: &str,
    message: Option<&str>,
    message_expression: Option<&str>,
    reason: Option<&str>,
    field_path: Option<&str>,
    optional_old_self: Option<bool>,
) -> String {
    let reason = reason.map_or("(*apiextensions.FieldValueErrorReason)(nil)".to_owned(), |r| {
        format!("(*apiextensions.FieldValueErrorReason)({})", go_quote(r))
    });
    let optional = optional_old_self.map_or("(*bool)(nil)".to_owned(), |b| format!("(*bool)({b})"));
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
        go_quote(rule),
        go_quote(message.unwrap_or_default()),
        go_quote(message_expression.unwrap_or_default()),
        go_quote(field_path.unwrap_or_default()),
    )
}

/// Parse errors as cel-go words them: `ERROR: <input>:L:C: msg`, the line, and a caret under the column.
fn render_parse_errors(source: &str, errors: &ParseErrors) -> String {
    errors
        .errors
        .iter()
        .map(|error| {
            let (line, column) = (error.pos.0.max(1), error.pos.1.max(1));
            let mut text = format!("ERROR: <input>:{line}:{column}: {}", error.msg);
            if let Some(snippet) = source.lines().nth((line - 1) as usize) {
                let dots = ".".repeat((column - 1) as usize);
                text.push_str(&format!("\n | {snippet}\n | {dots}^"));
            }
            text
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `fieldPath` (`.a.b`, `['k']`) as the suffix of a field path, if every step exists in the schema.
fn field_suffix(node: &Node, field_path: &str) -> Option<String> {
    let mut rest = field_path;
    let mut current = node;
    let mut suffix = String::new();
    while !rest.is_empty() {
        let name;
        if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            name = &after[..end];
            rest = &after[end + 2..];
            suffix.push_str(&format!("[{name}]"));
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            name = &after[..end];
            if name.is_empty() {
                return None;
            }
            rest = &after[end..];
            suffix.push('.');
            suffix.push_str(name);
        } else {
            return None;
        }
        current = match current.properties.get(name) {
            Some(next) => next,
            None => match &current.additional {
                Additional::Schema(schema) => schema,
                _ => return None,
            },
        };
    }
    Some(suffix)
}

enum Problem {
    /// `line:column` and `undefined field 'x'` with its caret lines.
    Undefined(String, String),
    NotBool,
}

/// What cel-go's checker would refuse that a walk over the expression can see.
fn check_against_schema(program: &Program, source: &str, node: &Node) -> Option<Problem> {
    let root = program.expression();
    if let Some(problem) = find_undefined_field(&root.expr, root.id, program, source, node) {
        return Some(problem);
    }
    let not_bool = match &root.expr {
        Expr::Literal(LiteralValue::Boolean(_)) => false,
        Expr::Literal(_) | Expr::List(_) | Expr::Map(_) => true,
        Expr::Ident(name) if name == "self" || name == "oldSelf" => {
            node.ty.is_some_and(|t| t != JsonType::Boolean)
        }
        Expr::Select(select) => {
            resolve(&root.expr, node).is_some_and(|n| n.ty.is_some_and(|t| t != JsonType::Boolean))
                && !select.test
        }
        _ => false,
    };
    not_bool.then_some(Problem::NotBool)
}

/// The schema node an expression `self.a.b` (or `oldSelf...`) names, when the schema declares it.
fn resolve<'n>(expr: &Expr, node: &'n Node) -> Option<&'n Node> {
    match expr {
        Expr::Ident(name) if name == "self" || name == "oldSelf" => Some(node),
        Expr::Select(SelectExpr { operand, field, .. }) => {
            let parent = resolve(&operand.expr, node)?;
            parent.properties.get(field).or(match &parent.additional {
                Additional::Schema(schema) => Some(schema.as_ref()),
                _ => None,
            })
        }
        _ => None,
    }
}

/// The first `.field` selected from a declared object that neither declares it nor allows others.
fn find_undefined_field(
    expr: &Expr,
    id: u64,
    program: &Program,
    source: &str,
    node: &Node,
) -> Option<Problem> {
    if let Expr::Select(SelectExpr { operand, field, .. }) = expr
        && let Some(parent) = resolve(&operand.expr, node)
        && parent.ty == Some(JsonType::Object)
        && !parent.preserve_unknown
        && matches!(
            parent.additional,
            Additional::Unspecified | Additional::Allowed(false)
        )
        && !parent.properties.contains_key(field)
    {
        let (line, column) = position(program, id, source);
        let line_text = source.lines().nth(line.saturating_sub(1)).unwrap_or_default();
        let dots = ".".repeat(column.saturating_sub(1));
        return Some(Problem::Undefined(
            format!("{line}:{column}"),
            format!("undefined field '{field}'\n | {line_text}\n | {dots}^"),
        ));
    }
    let mut found = None;
    visit_children(expr, &mut |child_expr, child_id| {
        if found.is_none() {
            found = find_undefined_field(child_expr, child_id, program, source, node);
        }
    });
    found
}

/// 1-based line and column of an expression, as cel-go reports a checker error.
fn position(program: &Program, id: u64, source: &str) -> (usize, usize) {
    let start = program
        .source_info()
        .offset_for(id)
        .map_or(0, |(start, _)| start as usize);
    // The offset is a byte offset into the source; one that falls inside a character counts as its end.
    let before = source.get(..start).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn visit_children(expr: &Expr, visit: &mut dyn FnMut(&Expr, u64)) {
    match expr {
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                visit(&target.expr, target.id);
            }
            for arg in &call.args {
                visit(&arg.expr, arg.id);
            }
        }
        Expr::Select(select) => visit(&select.operand.expr, select.operand.id),
        Expr::List(list) => {
            for element in &list.elements {
                visit(&element.expr, element.id);
            }
        }
        Expr::Comprehension(comprehension) => {
            for part in [
                &comprehension.iter_range,
                &comprehension.accu_init,
                &comprehension.loop_cond,
                &comprehension.loop_step,
                &comprehension.result,
            ] {
                visit(&part.expr, part.id);
            }
        }
        _ => {}
    }
}

/// The prefix of the message refusing `oldSelf` below a list whose items do not correlate; the CRD
/// validation puts the schema's own path in front of the relative path that follows it.
pub(crate) const UNCORRELATABLE: &str =
    "oldSelf cannot be used on the uncorrelatable portion of the schema within ";

/// Transition rules are refused under the items of a list that is not `x-kubernetes-list-type: map`
/// (its items have no identity to find the old item by).
pub(crate) fn check_correlation(node: &Node, path: &str, within: Option<&str>, causes: &mut Vec<FieldCause>) {
    if let Some(within) = within {
        for rule in node.rules.iter().filter(|r| r.transition) {
            let rule_path = index(&child(path, "x-kubernetes-validations"), rule.index);
            causes.push(messages::invalid(
                child(&rule_path, "rule"),
                &Value::String(rule.source.clone()),
                &format!("{UNCORRELATABLE}{within}"),
            ));
        }
    }
    for (name, property) in &node.properties {
        let property_path = super::super::messages::key(&child(path, "properties"), name);
        check_correlation(property, &property_path, within, causes);
    }
    if let Additional::Schema(schema) = &node.additional {
        check_correlation(schema, &child(path, "additionalProperties"), within, causes);
    }
    if let Some(items) = &node.items {
        let items_within = match within {
            Some(outer) => Some(outer.to_owned()),
            None if node.list_type == Some(super::super::node::ListType::Map) => None,
            None => Some(path.to_owned()),
        };
        check_correlation(items, &child(path, "items"), items_within.as_deref(), causes);
    }
}
