//! `meta.k8s.io/v1` Table rendering (T1, T2): the columns kube-apiserver prints for each kind.
//!
//! - [`builtin`]: the built-in kinds' printers (a Deployment's READY, a Pod's STATUS ...).
//! - [`custom`]: custom resources' `additionalPrinterColumns`.
//! - Kinds with neither (CRDs, Roles) get Name and Created At, as kube-apiserver's default.

pub mod builtin;
mod columns;
pub mod custom;
pub mod duration;
pub mod json_path;

use serde_json::{Value, json};

pub use crate::resource::PrinterColumn;
pub use columns::ColumnDefinition;
use columns::{name_cell, object_meta_doc};
pub use duration::human_duration;

use crate::resource::ResourceType;

/// How the objects of one resource type are printed.
#[derive(Debug, Clone, Copy)]
pub enum Printer<'a> {
    /// A built-in kind's own columns.
    BuiltIn(&'static builtin::BuiltInTable),
    /// A custom resource's `additionalPrinterColumns` (Age when there are none).
    Custom(&'a [PrinterColumn]),
    /// Name and Created At.
    Default,
}

impl<'a> Printer<'a> {
    /// The printer kube-apiserver uses for `rt`'s objects.
    pub fn for_type(rt: &'a ResourceType) -> Printer<'a> {
        if !rt.is_builtin() {
            return Printer::Custom(&rt.printer_columns);
        }
        builtin::table(&rt.group, &rt.kind).map_or(Printer::Default, Printer::BuiltIn)
    }

    /// The Table's `columnDefinitions`, Name first.
    pub fn column_definitions(&self) -> Vec<ColumnDefinition> {
        match self {
            Printer::BuiltIn(table) => table.column_definitions(),
            Printer::Custom(columns) => custom::definitions(columns),
            Printer::Default => vec![
                ColumnDefinition::name(),
                ColumnDefinition {
                    name: "Created At".into(),
                    column_type: "date".into(),
                    format: String::new(),
                    description: object_meta_doc("creationTimestamp"),
                    priority: 0,
                },
            ],
        }
    }

    /// One row's cells for `object`, one per column definition; ages are measured up to `now`.
    pub fn cells(&self, object: &Value, now: jiff::Timestamp) -> Vec<Value> {
        match self {
            Printer::BuiltIn(table) => (table.cells)(object, now),
            Printer::Custom(columns) => custom::cells(columns, object, now),
            Printer::Default => vec![name_cell(object), json!(created_at(object))],
        }
    }
}

/// The creation time in RFC 3339, UTC, to the second; the zero time when there is none.
fn created_at(object: &Value) -> String {
    duration::timestamp(object.pointer("/metadata/creationTimestamp"))
        .map(|at| at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".into())
}

/// Renders objects as a Table. `with_headers` false omits `columnDefinitions` (T2: watch events after
/// the first). `now` computes the humanised ages.
/// What each row of a Table carries of its object (the request's `includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// Nothing: the row's `object` is `null`.
    None,
    /// The object's metadata, as a `PartialObjectMetadata` (what kubectl asks for, and the default).
    #[default]
    Metadata,
    /// The whole object, as it is served.
    Object,
}

impl IncludeObject {
    /// The policy `includeObject=<value>` names; an unknown one is refused in kube-apiserver's words.
    pub fn parse(value: Option<&str>) -> Result<IncludeObject, String> {
        match value.unwrap_or_default() {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be \
                 'Metadata', 'Object', 'None', or empty",
                crate::schema::messages::go_quote(other)
            )),
        }
    }

    fn row_object(self, object: &Value) -> Value {
        match self {
            IncludeObject::None => Value::Null,
            IncludeObject::Metadata => json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": object.get("metadata").cloned().unwrap_or(json!({})),
            }),
            IncludeObject::Object => object.clone(),
        }
    }
}

/// The `meta.k8s.io/v1` Table of `objects`, one row each, its row objects as `include` says.
/// `with_headers: false` leaves `columnDefinitions` empty, as kube-apiserver does for a watch's
/// events after the first; an empty `resource_version` is left out, as Go leaves it out. Ages are
/// measured up to `now`.
pub fn render_table(
    printer: &Printer,
    objects: &[&Value],
    with_headers: bool,
    include: IncludeObject,
    resource_version: &str,
    continue_token: Option<&str>,
    now: jiff::Timestamp,
) -> Value {
    let definitions: Vec<Value> = if with_headers {
        printer
            .column_definitions()
            .iter()
            .map(ColumnDefinition::to_json)
            .collect()
    } else {
        Vec::new()
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            json!({
                "cells": printer.cells(object, now),
                "object": include.row_object(object),
            })
        })
        .collect();
    // Go leaves an empty resourceVersion out (a Table of an object not stored: a dry run, a review).
    let mut metadata = json!({});
    if !resource_version.is_empty() {
        metadata["resourceVersion"] = json!(resource_version);
    }
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "columnDefinitions": definitions, "rows": rows})
}

/// The Table versions served: `meta.k8s.io/v1`, and `v1beta1`, the same Table under its older name.
pub const TABLE_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// `table` (as [`render_table`] makes it) in `meta.k8s.io/<version>`: the Table and the
/// `PartialObjectMetadata` of its rows take that apiVersion, as kube-apiserver converts them.
pub fn in_version(mut table: Value, version: &str) -> Value {
    let api_version = json!(format!("meta.k8s.io/{version}"));
    table["apiVersion"] = api_version.clone();
    for row in table["rows"].as_array_mut().into_iter().flatten() {
        if row["object"]["kind"] == "PartialObjectMetadata" {
            row["object"]["apiVersion"] = api_version.clone();
        }
    }
    table
}

/// Whether kube-apiserver can answer `rt` (its `subresource`, if any) as a Table: its registry has a
/// table convertor. The reviews, the bindings and the subresources that act rather than store
/// (eviction, token, finalize, approval, ephemeral containers, resize, the streams) have none, nor
/// do the status subresources of CRDs, APIServices and ResourceClaims; a request that only takes a
/// Table is refused there with 406.
pub fn has_table_convertor(rt: &ResourceType, subresource: Option<&str>) -> bool {
    if crate::resource::is_review(rt) {
        return false;
    }
    match subresource {
        None | Some("scale") => true,
        Some("status") => !matches!(
            (rt.group.as_str(), rt.plural.as_str(), rt.is_builtin()),
            ("apiextensions.k8s.io", "customresourcedefinitions", true)
                | ("apiregistration.k8s.io", "apiservices", true)
                | ("resource.k8s.io", "resourceclaims", true)
        ),
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::builtins;

    #[test]
    fn t1_v1beta1_tables_are_the_same_table_under_their_older_name() {
        let object = json!({"metadata": {"name": "w1", "creationTimestamp": "2026-11-22T10:00:00Z"}});
        let now: jiff::Timestamp = "2026-11-22T10:05:03Z".parse().unwrap();
        let table = render_table(
            &Printer::Custom(&[]),
            &[&object],
            true,
            IncludeObject::Metadata,
            "",
            None,
            now,
        );
        assert_eq!(table["metadata"], json!({}));
        let beta = in_version(table.clone(), "v1beta1");
        assert_eq!(beta["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(beta["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(beta["columnDefinitions"], table["columnDefinitions"]);
    }

    #[test]
    fn t1_reviews_and_acting_subresources_have_no_table() {
        let types = builtins();
        let find = |group: &str, plural: &str| {
            types
                .iter()
                .find(|rt| rt.group == group && rt.plural == plural)
                .unwrap()
        };
        assert!(!has_table_convertor(
            find("authorization.k8s.io", "selfsubjectaccessreviews"),
            None
        ));
        assert!(!has_table_convertor(find("", "pods"), Some("eviction")));
        assert!(has_table_convertor(find("", "pods"), Some("status")));
        assert!(has_table_convertor(find("apps", "deployments"), Some("scale")));
        assert!(!has_table_convertor(
            find("apiextensions.k8s.io", "customresourcedefinitions"),
            Some("status")
        ));
        assert!(has_table_convertor(find("", "configmaps"), None));
    }

    #[test]
    fn t1_tables_carry_rows_metadata_and_headers_only_when_asked() {
        let object = json!({"metadata": {"name": "w1", "creationTimestamp": "2026-11-22T10:00:00Z"}});
        let now: jiff::Timestamp = "2026-11-22T10:05:03Z".parse().unwrap();
        let table = render_table(
            &Printer::Custom(&[]),
            &[&object],
            true,
            IncludeObject::Metadata,
            "7",
            Some("next"),
            now,
        );
        assert_eq!(table["columnDefinitions"][0]["name"], "Name");
        assert_eq!(table["rows"][0]["cells"], json!(["w1", "5m3s"]));
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(
            table["metadata"],
            json!({"resourceVersion": "7", "continue": "next"})
        );
        let plain = render_table(
            &Printer::Custom(&[]),
            &[&object],
            false,
            IncludeObject::Metadata,
            "7",
            None,
            now,
        );
        assert_eq!(plain["columnDefinitions"], json!([]));
    }

    #[test]
    fn t1_rows_carry_as_much_of_their_object_as_include_object_asks() {
        let object = json!({"metadata": {"name": "w1"}, "data": {"k": "v"}});
        let row_object = |value: Option<&str>| {
            let include = IncludeObject::parse(value).unwrap();
            let table = render_table(
                &Printer::Custom(&[]),
                &[&object],
                true,
                include,
                "7",
                None,
                jiff::Timestamp::UNIX_EPOCH,
            );
            table["rows"][0]["object"].clone()
        };
        assert_eq!(row_object(Some("None")), Value::Null);
        assert_eq!(row_object(Some("Object")), object);
        assert_eq!(row_object(None)["kind"], "PartialObjectMetadata");
        assert_eq!(row_object(Some("Metadata")), row_object(Some("")));
        assert_eq!(
            IncludeObject::parse(Some("Bogus")).unwrap_err(),
            "Unable to convert to Table as requested: includeObject: Invalid value: \"Bogus\": must be \
             'Metadata', 'Object', 'None', or empty"
        );
    }

    #[test]
    fn t1_kinds_without_a_printer_show_name_and_creation_time() {
        let types = builtins();
        let crds = types
            .iter()
            .find(|rt| rt.kind == "CustomResourceDefinition")
            .unwrap();
        let printer = Printer::for_type(crds);
        let names: Vec<String> = printer.column_definitions().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "Created At"]);
        let object = json!({"metadata": {"name": "a.b.c", "creationTimestamp": "2026-11-22T10:00:00+01:00"}});
        assert_eq!(
            printer.cells(&object, jiff::Timestamp::UNIX_EPOCH),
            [json!("a.b.c"), json!("2026-11-22T09:00:00Z")]
        );
    }
}
