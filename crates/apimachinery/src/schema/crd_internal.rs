//! A CRD's versions in the internal form kube-apiserver validates, and as its causes quote them.
//!
//! The apiextensions validation runs on the internal type. The conversion from `v1` moves what every
//! version shares (schema, subresources, printer columns, selectable fields) up to the CRD first, so
//! the rules about those read them there ([`hoisted`]), and in each version they print as `nil`. A
//! list is quoted with Go's `%#v`, where a pointer that is set prints as its memory address. This
//! module writes that text from the `v1` JSON: Go's formatter has no counterpart in any crate, and the
//! shape is fixed by one Go type.

use serde_json::Value;

use super::messages::go_quote;

const PACKAGE: &str = "apiextensions";

/// `%#v` of the internal `[]CustomResourceDefinitionVersion` converted from `versions` (the `v1` list,
/// or `None`/null when absent).
pub fn versions(versions: Option<&Value>) -> String {
    let list_type = format!("[]{PACKAGE}.CustomResourceDefinitionVersion");
    let Some(list) = versions.and_then(Value::as_array) else {
        return format!("{list_type}(nil)");
    };
    let hoisted = hoisted(list);
    let items: Vec<String> = list.iter().map(|v| version(v, &hoisted)).collect();
    format!("{list_type}{{{}}}", items.join(", "))
}

/// `%#v` of a `[]string` such as `status.storedVersions`: `[]string(nil)` when empty, as the internal
/// object of a create carries no list at all.
pub fn strings(items: &[String]) -> String {
    if items.is_empty() {
        return "[]string(nil)".to_owned();
    }
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Which per-version fields the conversion moved up to the CRD (and so cleared in every version).
pub(super) struct Hoisted {
    pub schema: bool,
    pub subresources: bool,
    pub columns: bool,
    pub selectable: bool,
}

/// What every one of `list` (the `v1` versions) shares, as the conversion finds it.
pub(super) fn hoisted(list: &[Value]) -> Hoisted {
    let shared = |key: &str| {
        let first = list.first().and_then(|v| per_version(v, key));
        !list.is_empty() && list.iter().all(|v| same(per_version(v, key), first))
    };
    Hoisted {
        schema: shared("schema"),
        subresources: shared("subresources"),
        columns: shared("additionalPrinterColumns"),
        selectable: shared("selectableFields"),
    }
}

fn per_version<'a>(version: &'a Value, key: &str) -> Option<&'a Value> {
    version.get(key).filter(|v| !v.is_null())
}

/// Go's semantic equality: an empty list equals an absent one.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    let empty = |v: Option<&Value>| v.is_none_or(|v| v.as_array().is_some_and(Vec::is_empty));
    a == b || (empty(a) && empty(b))
}

fn version(v: &Value, hoisted: &Hoisted) -> String {
    let text = |key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default();
    let flag = |key: &str| v.get(key).and_then(Value::as_bool).unwrap_or(false);
    let kept = |key: &str, moved: bool| per_version(v, key).filter(|_| !moved);
    let fields = [
        format!("Name:{}", go_quote(text("name"))),
        format!("Served:{}", flag("served")),
        format!("Storage:{}", flag("storage")),
        format!("Deprecated:{}", flag("deprecated")),
        format!(
            "DeprecationWarning:{}",
            pointer("string", per_version(v, "deprecationWarning"))
        ),
        format!(
            "Schema:{}",
            pointer(
                &format!("{PACKAGE}.CustomResourceValidation"),
                kept("schema", hoisted.schema)
            )
        ),
        format!(
            "Subresources:{}",
            pointer(
                &format!("{PACKAGE}.CustomResourceSubresources"),
                kept("subresources", hoisted.subresources)
            )
        ),
        format!(
            "AdditionalPrinterColumns:{}",
            slice(
                "CustomResourceColumnDefinition",
                kept("additionalPrinterColumns", hoisted.columns),
                column
            )
        ),
        format!(
            "SelectableFields:{}",
            slice(
                "SelectableField",
                kept("selectableFields", hoisted.selectable),
                |f| format!("JSONPath:{}", go_quote(str_at(f, "jsonPath")))
            )
        ),
    ];
    format!(
        "{PACKAGE}.CustomResourceDefinitionVersion{{{}}}",
        fields.join(", ")
    )
}

fn column(c: &Value) -> String {
    let priority = c.get("priority").and_then(Value::as_i64).unwrap_or(0);
    format!(
        "Name:{}, Type:{}, Format:{}, Description:{}, Priority:{priority}, JSONPath:{}",
        go_quote(str_at(c, "name")),
        go_quote(str_at(c, "type")),
        go_quote(str_at(c, "format")),
        go_quote(str_at(c, "description")),
        go_quote(str_at(c, "jsonPath")),
    )
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `(*T)(nil)`, or `(*T)(0x…)` with the address of the value, as Go prints a set pointer.
fn pointer(type_name: &str, value: Option<&Value>) -> String {
    match value {
        None => format!("(*{type_name})(nil)"),
        Some(value) => format!("(*{type_name})({value:p})"),
    }
}

/// `[]pkg.T(nil)` when absent, else `[]pkg.T{pkg.T{…}, …}`.
fn slice(element: &str, items: Option<&Value>, fields: impl Fn(&Value) -> String) -> String {
    let element = format!("{PACKAGE}.{element}");
    match items.and_then(Value::as_array) {
        None => format!("[]{element}(nil)"),
        Some(items) => {
            let printed: Vec<String> = items
                .iter()
                .map(|item| format!("{element}{{{}}}", fields(item)))
                .collect();
            format!("[]{element}{{{}}}", printed.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_schema_every_version_shares_prints_as_nil() {
        let list = json!([{"name": "v1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}}]);
        assert_eq!(
            versions(Some(&list)),
            "[]apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion{\
             Name:\"v1\", Served:true, Storage:false, Deprecated:false, DeprecationWarning:(*string)(nil), \
             Schema:(*apiextensions.CustomResourceValidation)(nil), \
             Subresources:(*apiextensions.CustomResourceSubresources)(nil), \
             AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), \
             SelectableFields:[]apiextensions.SelectableField(nil)}}"
        );
    }

    #[test]
    fn what_versions_do_not_share_stays_with_each_version() {
        let list = json!([
            {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object"}},
             "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]},
            {"name": "v2", "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
             "additionalPrinterColumns": []},
        ]);
        let printed = versions(Some(&list));
        assert_eq!(
            printed
                .matches("Schema:(*apiextensions.CustomResourceValidation)(0x")
                .count(),
            2
        );
        assert!(printed.contains(
            "AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition{apiextensions.CustomResourceColumnDefinition{\
             Name:\"Age\", Type:\"date\", Format:\"\", Description:\"\", Priority:0, JSONPath:\".metadata.creationTimestamp\"}}"
        ));
        assert!(
            printed.contains("AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition{}")
        );
    }

    #[test]
    fn absent_lists_print_as_nil_slices() {
        assert_eq!(
            versions(None),
            "[]apiextensions.CustomResourceDefinitionVersion(nil)"
        );
        assert_eq!(
            versions(Some(&json!([]))),
            "[]apiextensions.CustomResourceDefinitionVersion{}"
        );
        assert_eq!(strings(&[]), "[]string(nil)");
        assert_eq!(strings(&["v1".into(), "v2".into()]), r#"[]string{"v1", "v2"}"#);
    }
}
