use serde_json::{Value, json};

use super::super::StructuralSchema;

fn spec_schema(spec: Value) -> StructuralSchema {
    StructuralSchema::compile(&json!({"type": "object", "properties": {"spec": spec}})).expect("compiles")
}

fn rendered(schema: &StructuralSchema, spec: Value, old: Option<Value>) -> Vec<String> {
    let old = old.map(|o| json!({"spec": o}));
    schema
        .validate_update(&json!({"spec": spec}), old.as_ref())
        .into_iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

fn rule_on(ty: Value, rule: &str) -> StructuralSchema {
    let mut node = ty;
    node["x-kubernetes-validations"] = json!([{"rule": rule}]);
    spec_schema(node)
}

#[test]
fn v4_kubernetes_list_functions_are_available() {
    let list = json!({"type": "array", "maxItems": 100, "items": {"type": "integer"}});
    for rule in [
        "self.isSorted()",
        "self.sum() == 6",
        "self.min() == 1 && self.max() == 3",
        "self.indexOf(2) == 1 && self.lastIndexOf(9) == -1",
        "self.all(x, x > 0) && self.exists(x, x == 3) && self.size() == 3",
    ] {
        assert!(
            rendered(&rule_on(list.clone(), rule), json!([1, 2, 3]), None).is_empty(),
            "{rule}"
        );
    }
    assert_eq!(
        rendered(&rule_on(list, "self.isSorted()"), json!([2, 1]), None),
        [r#"spec: Invalid value: "array": failed rule: self.isSorted()"#]
    );
}

#[test]
fn v4_string_functions_are_available() {
    let string = json!({"type": "string"});
    for rule in [
        "self.startsWith('ab') && self.endsWith('yz') && self.contains('m')",
        "self.matches('^[a-z]+$')",
        "self.upperAscii() == 'ABMYZ' && self.lowerAscii() == self",
        "self.indexOf('m') == 2 && self.substring(0, 2) == 'ab'",
    ] {
        assert!(
            rendered(&rule_on(string.clone(), rule), json!("abmyz"), None).is_empty(),
            "{rule}"
        );
    }
}

#[test]
fn v4_number_fields_are_doubles_even_when_written_as_integers() {
    let schema = rule_on(json!({"type": "number"}), "self < 1.5");
    assert!(rendered(&schema, json!(1), None).is_empty());
    assert_eq!(
        rendered(&schema, json!(2), None),
        [r#"spec: Invalid value: "number": failed rule: self < 1.5"#]
    );
}

#[test]
fn v4_transition_rules_run_only_when_an_old_value_exists() {
    let schema = rule_on(json!({"type": "integer"}), "self >= oldSelf");
    assert!(rendered(&schema, json!(1), None).is_empty(), "not on create");
    assert!(rendered(&schema, json!(3), Some(json!(2))).is_empty());
    assert_eq!(
        rendered(&schema, json!(1), Some(json!(2))),
        [r#"spec: Invalid value: "integer": failed rule: self >= oldSelf"#]
    );
}

#[test]
fn v4_optional_old_self_runs_on_create_with_no_value() {
    let schema = spec_schema(json!({"type": "string", "x-kubernetes-validations": [{
        "rule": "!oldSelf.hasValue() || oldSelf.value() == self", "optionalOldSelf": true,
        "message": "set once"}]}));
    assert!(rendered(&schema, json!("a"), None).is_empty());
    assert!(rendered(&schema, json!("a"), Some(json!("a"))).is_empty());
    assert_eq!(
        rendered(&schema, json!("b"), Some(json!("a"))),
        [r#"spec: Invalid value: "string": set once"#]
    );
}

#[test]
fn v4_message_expression_falls_back_to_the_message_when_it_fails() {
    let schema = spec_schema(json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.a > 0", "message": "a must be positive",
            "messageExpression": "self.nosuch"}]}));
    assert_eq!(
        rendered(&schema, json!({"a": 0}), None),
        [r#"spec: Invalid value: "object": a must be positive"#]
    );
}

#[test]
fn v4_required_and_duplicate_reasons_word_the_cause_as_those_types() {
    let schema = spec_schema(json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "has(self.a)", "message": "a is needed", "reason": "FieldValueRequired", "fieldPath": ".a"},
            {"rule": "false", "reason": "FieldValueDuplicate"}]}));
    assert_eq!(
        rendered(&schema, json!({}), None),
        [
            "spec.a: Required value: a is needed",
            r#"spec: Duplicate value: "object""#
        ]
    );
}

#[test]
fn v4_rules_are_not_run_over_values_of_the_wrong_type_and_the_refusal_says_so() {
    let schema = rule_on(json!({"type": "integer"}), "self > 0");
    assert_eq!(
        rendered(&schema, json!("x"), None),
        [
            r#"spec: Invalid value: "string": spec in body must be of type integer: "string""#,
            r#"<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#
        ]
    );
}

#[test]
fn v4_a_rule_that_does_not_parse_refuses_the_schema() {
    let causes = StructuralSchema::compile(&json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.a ==", "reason": "Nope"}]}))
    .expect_err("refused");
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "x-kubernetes-validations[0].reason",
            "x-kubernetes-validations[0].rule"
        ]
    );
    assert!(
        causes[1]
            .message
            .contains("compilation failed: ERROR: <input>:1:"),
        "{}",
        causes[1].message
    );
}
