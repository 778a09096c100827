//! Validation of a `CustomResourceDefinition` object (V1), with apiextensions-apiserver's wording.

use serde_json::Value;

use super::StructuralSchema;
use super::cel::compile::UNCORRELATABLE;
use super::messages::{self, child, index};
use super::{crd_internal, crd_selectable};
use crate::FieldCause;
use crate::validation::names;

const SCOPES: [&str; 2] = ["Cluster", "Namespaced"];
const COLUMN_TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
const COLUMN_FORMATS: [&str; 8] = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

/// Validates a `CustomResourceDefinition` object (V1): name is `<plural>.<group>`, exactly one storage
/// version, names present, every schema structural, `status.storedVersions` (which the server sets
/// before it validates) consistent with the versions. Empty when valid.
pub fn validate_crd(crd: &Value) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let text = |pointer: &str| crd.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let (name, group, plural) = (
        text("/metadata/name"),
        text("/spec/group"),
        text("/spec/names/plural"),
    );

    if name != format!("{plural}.{group}") {
        causes.push(messages::invalid(
            "metadata.name",
            &Value::String(name.to_owned()),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        causes.push(messages::required("spec.group", ""));
    } else if !group.contains('.') {
        causes.push(messages::invalid(
            "spec.group",
            &str_value(group),
            "should be a domain with at least one dot",
        ));
    } else {
        push_name_errors(&mut causes, "spec.group", group, &names::dns1123_subdomain(group));
    }
    validate_names(crd.pointer("/spec/names").unwrap_or(&Value::Null), &mut causes);

    match crd.pointer("/spec/scope").and_then(Value::as_str) {
        None | Some("") => causes.push(messages::required("spec.scope", "")),
        Some(scope) if !SCOPES.contains(&scope) => causes.push(messages::not_supported(
            "spec.scope",
            &str_value(scope),
            &SCOPES.map(str::to_owned),
        )),
        Some(_) => {}
    }
    validate_versions(crd.pointer("/spec/versions"), &mut causes);
    validate_stored_versions(crd, &mut causes);
    causes
}

fn str_value(s: &str) -> Value {
    Value::String(s.to_owned())
}

/// One cause per field, messages joined as the apiextensions validation joins them.
fn push_name_errors(causes: &mut Vec<FieldCause>, field: &str, value: &str, errors: &[String]) {
    if !errors.is_empty() {
        causes.push(messages::invalid(field, &str_value(value), &errors.join(",")));
    }
}

fn validate_names(names_value: &Value, causes: &mut Vec<FieldCause>) {
    let text = |key: &str| names_value.get(key).and_then(Value::as_str).unwrap_or_default();
    let plural = text("plural");
    if plural.is_empty() {
        causes.push(messages::required("spec.names.plural", ""));
    } else {
        push_name_errors(causes, "spec.names.plural", plural, &names::dns1035_label(plural));
    }
    let singular = text("singular");
    if !singular.is_empty() {
        push_name_errors(
            causes,
            "spec.names.singular",
            singular,
            &names::dns1035_label(singular),
        );
    }
    let kind = text("kind");
    if kind.is_empty() {
        causes.push(messages::required("spec.names.kind", ""));
    } else {
        let errors = names::dns1035_label(&kind.to_lowercase());
        if !errors.is_empty() {
            let detail = format!(
                "may have mixed case, but should otherwise match: {}",
                errors.join(",")
            );
            causes.push(messages::invalid("spec.names.kind", &str_value(kind), &detail));
        }
    }
    if let Some(short_names) = names_value.get("shortNames").and_then(Value::as_array) {
        for (i, short) in short_names.iter().enumerate() {
            let short = short.as_str().unwrap_or_default();
            push_name_errors(
                causes,
                &index("spec.names.shortNames", i),
                short,
                &names::dns1035_label(short),
            );
        }
    }
}

fn validate_versions(versions: Option<&Value>, causes: &mut Vec<FieldCause>) {
    let list = versions
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    // kube-apiserver keeps a schema shared by every version once, as `spec.validation`, and names
    // its causes there; only schemas that differ are reported per version.
    let shared_schema = list
        .first()
        .and_then(|first| first.get("schema"))
        .filter(|first| !first.is_null() && list.iter().all(|v| v.get("schema") == Some(*first)));
    if let Some(first) = list.first().filter(|_| shared_schema.is_some()) {
        validate_schema_at(first, "spec.validation.openAPIV3Schema", causes);
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, version) in list.iter().enumerate() {
        let path = index("spec.versions", i);
        let name = version.get("name").and_then(Value::as_str).unwrap_or_default();
        push_name_errors(causes, &child(&path, "name"), name, &names::dns1035_label(name));
        seen.push(name);
        if shared_schema.is_none() {
            validate_version_schema(version, &path, causes);
        }
        validate_printer_columns(version, &path, causes);
    }
    crd_selectable::validate(list, &crd_internal::hoisted(list), causes);
    // The list-wide rules quote the whole list, as Go prints the internal type.
    let storage = list
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    let unique = seen.iter().enumerate().all(|(i, name)| !seen[..i].contains(name));
    for (broken, detail) in [
        (!unique, "must contain unique version names"),
        (
            storage != 1,
            "must have exactly one version marked as storage version",
        ),
    ] {
        if broken {
            let printed = crd_internal::versions(versions);
            causes.push(messages::invalid_printed("spec.versions", &printed, detail));
        }
    }
}

/// `status.storedVersions` against the versions served: the storage version must be among them, and
/// none may be dropped while objects may still be stored at it. On a create the list holds the first
/// storage version only, so a CRD without one is told so here too.
fn validate_stored_versions(crd: &Value, causes: &mut Vec<FieldCause>) {
    const FIELD: &str = "status.storedVersions";
    let stored: Vec<String> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    if stored.is_empty() {
        causes.push(messages::invalid_printed(
            FIELD,
            &crd_internal::strings(&stored),
            "must have at least one stored version",
        ));
        return;
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let name = |v: &Value| {
        v.get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    for version in versions {
        let storage = version.get("storage").and_then(Value::as_bool) == Some(true);
        if storage && !stored.contains(&name(version)) {
            causes.push(messages::invalid_printed(
                FIELD,
                &crd_internal::strings(&stored),
                &format!("must have the storage version {}", name(version)),
            ));
        }
    }
    for (i, gone) in stored.iter().enumerate() {
        if !versions.iter().any(|v| name(v) == *gone) {
            causes.push(messages::invalid(
                index(FIELD, i),
                &str_value(gone),
                &format!(
                    "missing from spec.versions; {gone} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {gone} and removes {gone} from status.storedVersions"
                ),
            ));
        }
    }
}

fn validate_version_schema(version: &Value, path: &str, causes: &mut Vec<FieldCause>) {
    let schema_path = child(&child(path, "schema"), "openAPIV3Schema");
    validate_schema_at(version, &schema_path, causes);
}

/// Validates one version's schema, its causes under `schema_path`.
fn validate_schema_at(version: &Value, schema_path: &str, causes: &mut Vec<FieldCause>) {
    match version.pointer("/schema/openAPIV3Schema") {
        None | Some(Value::Null) => causes.push(messages::required(schema_path, "schemas are required")),
        Some(schema) => {
            if let Err(schema_causes) = StructuralSchema::compile(schema) {
                causes.extend(schema_causes.into_iter().map(|mut cause| {
                    cause.field = if cause.field.is_empty() {
                        schema_path.to_owned()
                    } else {
                        child(schema_path, &cause.field)
                    };
                    if let Some(within) = cause.message.find(UNCORRELATABLE) {
                        let at = within + UNCORRELATABLE.len();
                        cause.message.insert_str(at, &format!("{schema_path}."));
                    }
                    cause
                }));
            }
        }
    }
}

fn validate_printer_columns(version: &Value, path: &str, causes: &mut Vec<FieldCause>) {
    let Some(columns) = version.get("additionalPrinterColumns").and_then(Value::as_array) else {
        return;
    };
    for (j, column) in columns.iter().enumerate() {
        let column_path = index(&child(path, "additionalPrinterColumns"), j);
        let text = |key: &str| column.get(key).and_then(Value::as_str).unwrap_or_default();
        if text("name").is_empty() {
            causes.push(messages::required(child(&column_path, "name"), ""));
        }
        let ty = text("type");
        if ty.is_empty() {
            causes.push(messages::required(child(&column_path, "type"), ""));
        } else if !COLUMN_TYPES.contains(&ty) {
            causes.push(messages::not_supported(
                child(&column_path, "type"),
                &str_value(ty),
                &COLUMN_TYPES.map(str::to_owned),
            ));
        }
        let format = text("format");
        if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
            causes.push(messages::not_supported(
                child(&column_path, "format"),
                &str_value(format),
                &COLUMN_FORMATS.map(str::to_owned),
            ));
        }
        if text("jsonPath").is_empty() {
            causes.push(messages::required(child(&column_path, "jsonPath"), ""));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "postgreswriters.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"kind": "PostgresWriter", "plural": "postgreswriters", "singular": "postgreswriter",
                          "shortNames": ["pgw"]},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"table": {"type": "string"}}}
                    }}},
                    "additionalPrinterColumns": [{"name": "Table", "type": "string", "jsonPath": ".spec.table"}]
                }]
            },
            "status": {"storedVersions": ["v1"]}
        })
    }

    fn rendered(crd: &Value) -> Vec<String> {
        validate_crd(crd)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn v1_valid_crd_has_no_causes() {
        assert_eq!(rendered(&crd()), Vec::<String>::new());
    }

    #[test]
    fn v1_name_must_be_plural_dot_group() {
        let mut bad = crd();
        bad["metadata"]["name"] = json!("writers.example.com");
        assert_eq!(
            rendered(&bad),
            [
                r#"metadata.name: Invalid value: "writers.example.com": must be spec.names.plural+"."+spec.group"#
            ]
        );
    }

    #[test]
    fn v1_group_kind_plural_and_scope_are_required() {
        let bad = json!({"metadata": {"name": "."}, "spec": {"names": {}, "versions": crd()["spec"]["versions"]},
                   "status": crd()["status"]});
        assert_eq!(
            rendered(&bad),
            [
                "spec.group: Required value",
                "spec.names.plural: Required value",
                "spec.names.kind: Required value",
                "spec.scope: Required value"
            ]
        );
    }

    #[test]
    fn v1_scope_must_be_namespaced_or_cluster() {
        let mut bad = crd();
        bad["spec"]["scope"] = json!("Global");
        assert_eq!(
            rendered(&bad),
            [r#"spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced""#]
        );
    }

    #[test]
    fn v1_exactly_one_storage_version_quoting_the_versions_as_go_prints_them() {
        let mut bad = crd();
        let mut second = bad["spec"]["versions"][0].clone();
        second["name"] = json!("v2");
        bad["spec"]["versions"].as_array_mut().unwrap().push(second);
        let causes = rendered(&bad);
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert!(
            causes[0].starts_with(
                "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion{Name:\"v1\""
            ),
            "{causes:?}"
        );
        assert!(causes[0].ends_with("}}: must have exactly one version marked as storage version"));
        assert_eq!(
            causes[1],
            r#"status.storedVersions: Invalid value: []string{"v1"}: must have the storage version v2"#
        );

        bad["spec"]["versions"] = json!([]);
        assert_eq!(
            rendered(&bad),
            [
                "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{}: must have exactly one version marked as storage version",
                "status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions",
            ]
        );
    }

    #[test]
    fn v1_a_crd_without_stored_versions_is_told_so() {
        let mut bad = crd();
        bad["spec"]["versions"][0]["storage"] = json!(false);
        bad["status"]["storedVersions"] = json!([]);
        let rendered = rendered(&bad);
        assert_eq!(
            rendered.last().map(String::as_str),
            Some(
                "status.storedVersions: Invalid value: []string(nil): must have at least one stored version"
            )
        );
    }

    #[test]
    fn v1_version_names_are_unique() {
        let mut bad = crd();
        let second = bad["spec"]["versions"][0].clone();
        bad["spec"]["versions"].as_array_mut().unwrap().push(second);
        let rendered = rendered(&bad);
        assert!(
            rendered
                .iter()
                .any(|r| r.starts_with("spec.versions: Invalid value: ")
                    && r.ends_with(": must contain unique version names")),
            "{rendered:?}"
        );
    }

    #[test]
    fn v1_a_schema_shared_by_every_version_is_reported_as_spec_validation() {
        let mut bad = crd();
        bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] =
            json!({"properties": {}});
        assert_eq!(
            rendered(&bad),
            [
                "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
            ]
        );
    }

    #[test]
    fn v1_schema_is_required() {
        let mut bad = crd();
        bad["spec"]["versions"][0]
            .as_object_mut()
            .unwrap()
            .remove("schema");
        assert_eq!(
            rendered(&bad),
            ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]
        );
    }

    #[test]
    fn v1_printer_columns_need_name_type_and_json_path() {
        let mut bad = crd();
        bad["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"type": "text"}]);
        assert_eq!(
            rendered(&bad),
            [
                "spec.versions[0].additionalPrinterColumns[0].name: Required value",
                r#"spec.versions[0].additionalPrinterColumns[0].type: Unsupported value: "text": supported values: "boolean", "date", "integer", "number", "string""#,
                "spec.versions[0].additionalPrinterColumns[0].jsonPath: Required value"
            ]
        );
    }

    #[test]
    fn v1_names_must_be_lowercase_labels() {
        let mut bad = crd();
        bad["spec"]["names"]["plural"] = json!("Writers");
        bad["metadata"]["name"] = json!("Writers.example.com");
        let causes = validate_crd(&bad);
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0].field, "spec.names.plural");
        assert!(
            causes[0]
                .message
                .contains("a DNS-1035 label must consist of lower case alphanumeric characters")
        );
    }
}
