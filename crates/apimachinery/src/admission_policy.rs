//! ValidatingAdmissionPolicy's expressions, as kube-apiserver evaluates them for one request and one
//! binding: `matchConditions` decide whether the policy applies, then `variables` are computed in
//! order (each may use the ones before it, as `variables.<name>`), then each validation either holds
//! or fails with `messageExpression`'s text, `message`, or `failed expression: <expression>`. An
//! expression that does not compile or fails to evaluate fails the request under `failurePolicy:
//! Fail` (the default) and is passed over under `Ignore`. Parameters (`paramKind`) and the
//! `authorizer` variable are not supported: `params` is null.

use std::{collections::HashMap, sync::Arc};

use cel::{Context, ExecutionError, Program, Value as Cel, objects::Key};
use serde_json::Value;

use crate::schema::cel::{evaluate::go_error, library::ENV, values::to_cel};

/// What the expressions of a policy see of a request.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The object as it would be stored; null for a delete.
    pub object: &'a Value,
    /// The current object; null for a create.
    pub old_object: &'a Value,
    /// The admission request's attributes (`kind`, `resource`, `name`, `operation`, `userInfo`...).
    pub request: &'a Value,
    /// The namespace of a namespaced request; null otherwise.
    pub namespace_object: &'a Value,
}

/// A validation that did not hold, or an expression that could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The text the request is refused with: the validation's message, or why its expression failed.
    pub message: String,
    /// The Status reason the request is refused with (`Invalid` unless the validation names one).
    pub reason: String,
}

/// The failures of `policy`'s validations (its `spec`) for a request; empty when it does not apply
/// (a match condition is false) or every validation holds.
pub fn failures(spec: &Value, inputs: &Inputs<'_>) -> Vec<Failure> {
    let ignore_errors = spec.get("failurePolicy").and_then(Value::as_str) == Some("Ignore");
    let error = |message: String| match ignore_errors {
        true => Vec::new(),
        false => vec![Failure {
            message,
            reason: "Invalid".to_owned(),
        }],
    };
    let mut scope = Scope::new(inputs);
    for condition in entries(spec, "matchConditions") {
        let expression = text(condition, "expression");
        match scope.run(expression) {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => return Vec::new(),
            Ok(_) => return error(format!("expression '{expression}' resulted in unexpected type")),
            Err(message) => return error(message),
        }
    }
    for variable in entries(spec, "variables") {
        scope.define(text(variable, "name"), text(variable, "expression"));
    }
    let mut failed = Vec::new();
    for validation in entries(spec, "validations") {
        let expression = text(validation, "expression");
        match scope.run(expression) {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => failed.push(Failure {
                message: message_of(&scope, validation),
                reason: validation
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("Invalid")
                    .to_owned(),
            }),
            Ok(other) => failed.extend(error(format!(
                "expression '{expression}' resulted in unexpected type {}",
                cel_type(&other)
            ))),
            Err(message) => failed.extend(error(message)),
        }
    }
    failed
}

/// Why a validation failed: `messageExpression`'s string when it is one non-blank line, else
/// `message`, else the expression.
fn message_of(scope: &Scope<'_>, validation: &Value) -> String {
    let expression = text(validation, "messageExpression");
    if !expression.is_empty()
        && let Ok(Cel::String(message)) = scope.run(expression)
        && !message.trim().is_empty()
        && !message.contains('\n')
    {
        return message.trim().to_owned();
    }
    match text(validation, "message").trim() {
        "" => format!("failed expression: {}", text(validation, "expression").trim()),
        message => message.to_owned(),
    }
}

/// The variables expressions run with, `variables` growing as each is defined.
struct Scope<'a> {
    inputs: &'a Inputs<'a>,
    values: HashMap<Key, Cel>,
    /// Variables that failed, with why: an expression that reads one fails with that.
    failed: HashMap<String, String>,
}

impl<'a> Scope<'a> {
    fn new(inputs: &'a Inputs<'a>) -> Self {
        Scope {
            inputs,
            values: HashMap::new(),
            failed: HashMap::new(),
        }
    }

    fn define(&mut self, name: &str, expression: &str) {
        let result = match self.compile(expression) {
            Ok(program) => self.execute(&program),
            Err(message) => Err(format!(
                "composited variable {name:?} fails to compile: {message}"
            )),
        };
        match result {
            Ok(value) => {
                self.values.insert(Key::from(name.to_owned()), value);
            }
            Err(message) => {
                self.failed.insert(
                    name.to_owned(),
                    format!("composited variable {name:?} fails to evaluate: {message}"),
                );
            }
        }
    }

    /// The value of `expression`, or kube-apiserver's message for why it has none.
    fn run(&self, expression: &str) -> Result<Cel, String> {
        let program = self
            .compile(expression)
            .map_err(|message| format!("compilation failed: {message}"))?;
        self.execute(&program)
            .map_err(|message| format!("expression '{expression}' resulted in error: {message}"))
    }

    fn compile(&self, expression: &str) -> Result<Program, String> {
        ENV.compile(expression).map_err(|error| error.to_string())
    }

    fn execute(&self, program: &Program) -> Result<Cel, String> {
        let mut context = Context::with_env(Arc::clone(&ENV));
        let inputs = self.inputs;
        context.add_variable_from_value("object", to_cel(None, inputs.object));
        context.add_variable_from_value("oldObject", to_cel(None, inputs.old_object));
        context.add_variable_from_value("request", to_cel(None, inputs.request));
        context.add_variable_from_value("namespaceObject", to_cel(None, inputs.namespace_object));
        context.add_variable_from_value("params", Cel::Null);
        context.add_variable_from_value("variables", Cel::from(self.values.clone()));
        program.execute(&context).map_err(|error| match &error {
            // Reading a variable that failed is that variable's failure.
            ExecutionError::NoSuchKey(key) => match self.failed.get(key.to_string().as_str()) {
                Some(why) => why.clone(),
                None => go_error(&error),
            },
            _ => go_error(&error),
        })
    }
}

fn entries<'v>(spec: &'v Value, key: &str) -> impl Iterator<Item = &'v Value> {
    spec.get(key).and_then(Value::as_array).into_iter().flatten()
}

fn text<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A CEL value's type as cel-go names it.
fn cel_type(value: &Cel) -> &'static str {
    match value {
        Cel::Int(_) => "int",
        Cel::UInt(_) => "uint",
        Cel::Float(_) => "double",
        Cel::String(_) => "string",
        Cel::Bytes(_) => "bytes",
        Cel::List(_) => "list",
        Cel::Map(_) => "map",
        Cel::Null => "null_type",
        _ => "dyn",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(replicas: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": replicas}})
    }

    fn run(spec: Value, object: &Value) -> Vec<Failure> {
        let inputs = Inputs {
            object,
            old_object: &Value::Null,
            request: &json!({"operation": "CREATE"}),
            namespace_object: &Value::Null,
        };
        failures(&spec, &inputs)
    }

    fn messages(failures: Vec<Failure>) -> Vec<String> {
        failures.into_iter().map(|f| f.message).collect()
    }

    #[test]
    fn variables_compose_and_messages_come_from_message_expression_message_or_expression() {
        let spec = json!({"variables": [
                {"name": "replicas", "expression": "object.spec.replicas"},
                {"name": "odd", "expression": "variables.replicas % 2 == 1"}],
            "validations": [
                {"expression": "variables.replicas > 1"},
                {"expression": "variables.odd", "messageExpression": "'even: ' + string(variables.replicas)"},
                {"expression": "variables.replicas < 5", "message": "too many", "reason": "Forbidden"}]});
        assert_eq!(messages(run(spec.clone(), &deployment(3))), Vec::<String>::new());
        assert_eq!(
            messages(run(spec.clone(), &deployment(0))),
            ["failed expression: variables.replicas > 1", "even: 0"]
        );
        let failures = run(spec, &deployment(6));
        assert_eq!(
            failures,
            [
                Failure {
                    message: "even: 6".into(),
                    reason: "Invalid".into()
                },
                Failure {
                    message: "too many".into(),
                    reason: "Forbidden".into()
                }
            ]
        );
    }

    #[test]
    fn a_variable_that_fails_fails_what_reads_it_unless_errors_are_ignored() {
        let spec = |policy: &str| {
            json!({"failurePolicy": policy, "variables": [
                    {"name": "broken", "expression": "object.spec.nosuch"},
                    {"name": "twice", "expression": "variables.broken * 2"}],
                "validations": [{"expression": "variables.twice == 2"}, {"expression": "true"}]})
        };
        assert_eq!(
            messages(run(spec("Fail"), &deployment(1))),
            [
                "expression 'variables.twice == 2' resulted in error: composited variable \"twice\" fails to \
              evaluate: composited variable \"broken\" fails to evaluate: no such key: nosuch"
            ]
        );
        assert!(run(spec("Ignore"), &deployment(1)).is_empty());
    }

    #[test]
    fn a_false_match_condition_leaves_the_request_alone() {
        let spec = json!({"matchConditions": [{"name": "big", "expression": "object.spec.replicas > 10"}],
            "validations": [{"expression": "false"}]});
        assert!(run(spec.clone(), &deployment(1)).is_empty());
        assert_eq!(run(spec, &deployment(11)).len(), 1);
    }
}
