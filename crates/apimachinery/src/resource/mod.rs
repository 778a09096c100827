//! What a resource type is: the facts discovery, routing, validation and tables need about a kind.

use std::sync::Arc;

use serde_json::Value;

use crate::{FieldCause, schema::StructuralSchema};

mod builtins;
mod printer_column;
mod subresources;

pub use builtins::builtins;
pub use printer_column::PrinterColumn;
pub use subresources::{Subresource, subresources};

/// Where a resource type comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A kind kube-apiserver serves itself.
    BuiltIn,
    /// Served because of the CustomResourceDefinition with this name.
    Crd {
        /// The CRD's `metadata.name`, `<plural>.<group>`.
        name: String,
    },
}

/// One served resource (one group/version/plural).
#[derive(Debug, Clone)]
pub struct ResourceType {
    /// Empty for the core group.
    pub group: String,
    /// The version served, `v1`, `v1beta1` ...
    pub version: String,
    /// The kind of its objects, `Deployment`.
    pub kind: String,
    /// The version objects are stored at (a CRD's storage version), which names the storage version
    /// hash discovery publishes.
    pub storage_version: String,
    /// The lowercase plural, the resource's name in URLs: `deployments`.
    pub plural: String,
    /// The lowercase singular, which kubectl also accepts: `deployment`.
    pub singular: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
    /// Abbreviations kubectl accepts (`deploy`), as discovery lists them.
    pub short_names: Vec<String>,
    /// The groupings it belongs to (`all`), which `kubectl get <category>` expands.
    pub categories: Vec<String>,
    /// Has a `/status` subresource (C7).
    pub status_subresource: bool,
    /// Has a `/scale` subresource: where the replicas and the selector are.
    pub scale: Option<ScalePaths>,
    /// Verbs served on the main resource (`create`, `delete`, `deletecollection`, `get`, `list`,
    /// `patch`, `update`, `watch`).
    pub verbs: Vec<String>,
    /// CRDs only: validation, defaulting and pruning (V2, V3).
    pub schema: Option<Arc<StructuralSchema>>,
    /// CRDs only: the printer columns besides Name (T1), their `additionalPrinterColumns`.
    pub printer_columns: Vec<PrinterColumn>,
    /// CRDs only: the raw `openAPIV3Schema`, for OpenAPI documents (D8).
    pub openapi_schema: Option<Value>,
    /// Field selector labels allowed besides `metadata.name`/`metadata.namespace` (W2).
    pub field_labels: Vec<String>,
    /// Built in, or served for a CRD.
    pub origin: Origin,
}

/// Where a kind keeps what its `/scale` subresource (`autoscaling/v1` Scale) shows, as JSON paths
/// (`.spec.replicas`), the way a CRD's `subresources.scale` names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// The desired replicas, which a write to `/scale` sets: `.spec.replicas`.
    pub spec_replicas: String,
    /// The observed replicas, which `/scale` reports: `.status.replicas`.
    pub status_replicas: String,
    /// A CRD's `labelSelectorPath`, a string in the object; `None` for the built-ins, whose selector
    /// is `spec.selector`.
    pub label_selector: Option<String>,
    /// The built-in's `spec.selector` is a plain map of labels (a ReplicationController's), not a
    /// `LabelSelector`.
    pub selector_is_label_map: bool,
}

impl ScalePaths {
    fn builtin(plural: &str) -> ScalePaths {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
            selector_is_label_map: plural == "replicationcontrollers",
        }
    }
}

impl ResourceType {
    /// `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` (or `plural` for core), as in Status messages: `postgreswriters.demo.yash.com "w1" not found`.
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The kind of its lists, `<Kind>List`, as kube-apiserver names every list kind.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Whether kube-apiserver serves it itself rather than for a CRD.
    pub fn is_builtin(&self) -> bool {
        self.origin == Origin::BuiltIn
    }
}

pub(crate) const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The review kinds: created to ask the API server something, answered, never stored.
pub fn is_review(rt: &ResourceType) -> bool {
    rt.is_builtin() && rt.verbs == ["create"]
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The resource types a CustomResourceDefinition serves (one per served version). The CRD must already
/// have passed [`crate::schema::validate_crd`].
pub fn from_crd(crd: &Value) -> Result<Vec<ResourceType>, Vec<FieldCause>> {
    let text = |pointer: &str| {
        crd.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let kind = text("/spec/names/kind");
    let singular = Some(text("/spec/names/singular"))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| kind.to_lowercase());
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned();
    let mut types = Vec::new();
    for (index, version) in versions.iter().enumerate() {
        if version.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let raw_schema = version.pointer("/schema/openAPIV3Schema").cloned();
        let schema = match &raw_schema {
            Some(raw) => Some(Arc::new(StructuralSchema::compile(raw).map_err(|causes| {
                causes
                    .into_iter()
                    .map(|mut c| {
                        let prefix = format!("spec.versions[{index}].schema.openAPIV3Schema");
                        c.field = if c.field.is_empty() {
                            prefix
                        } else {
                            format!("{prefix}.{}", c.field)
                        };
                        c
                    })
                    .collect::<Vec<_>>()
            })?)),
            None => None,
        };
        let printer_columns = version
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|columns| {
                columns
                    .iter()
                    .map(|c| PrinterColumn {
                        name: c
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        column_type: c
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("string")
                            .to_owned(),
                        format: c
                            .get("format")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        description: c
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: c
                            .get("jsonPath")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        types.push(ResourceType {
            group: text("/spec/group"),
            version: version
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            kind: kind.clone(),
            storage_version: storage_version.clone(),
            plural: text("/spec/names/plural"),
            singular: singular.clone(),
            namespaced: text("/spec/scope") != "Cluster",
            short_names: strings(crd.pointer("/spec/names/shortNames")),
            categories: strings(crd.pointer("/spec/names/categories")),
            status_subresource: version.pointer("/subresources/status").is_some(),
            scale: version.pointer("/subresources/scale").map(|scale| {
                let path = |key: &str| scale.get(key).and_then(Value::as_str).map(str::to_owned);
                ScalePaths {
                    spec_replicas: path("specReplicasPath").unwrap_or_default(),
                    status_replicas: path("statusReplicasPath").unwrap_or_default(),
                    label_selector: path("labelSelectorPath"),
                    selector_is_label_map: false,
                }
            }),
            verbs: ALL_VERBS.iter().map(|v| (*v).to_owned()).collect(),
            schema,
            openapi_schema: raw_schema,
            printer_columns,
            // A CRD's selectable fields are the field labels its objects may be selected by.
            field_labels: version
                .get("selectableFields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                .map(|path| path.trim_start_matches('.').to_owned())
                .collect(),
            origin: Origin::Crd {
                name: text("/metadata/name"),
            },
        });
    }
    Ok(types)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn find<'a>(types: &'a [ResourceType], group: &str, plural: &str) -> &'a ResourceType {
        types
            .iter()
            .find(|rt| rt.group == group && rt.plural == plural)
            .unwrap()
    }

    #[test]
    fn b1_builtins_have_kubectl_short_names_scopes_and_status() {
        let types = builtins();
        let ns = find(&types, "", "namespaces");
        assert!(!ns.namespaced && ns.short_names == ["ns"]);
        assert!(!ns.verbs.contains(&"deletecollection".to_owned()));
        let deploy = find(&types, "apps", "deployments");
        assert_eq!(deploy.api_version(), "apps/v1");
        assert!(deploy.status_subresource && deploy.categories == ["all"]);
        assert_eq!(deploy.verbs.len(), 8);
        let crd = find(&types, "apiextensions.k8s.io", "customresourcedefinitions");
        assert!(!crd.namespaced && crd.short_names == ["crd", "crds"]);
        assert_eq!(
            crd.qualified_plural(),
            "customresourcedefinitions.apiextensions.k8s.io"
        );
        assert!(!find(&types, "rbac.authorization.k8s.io", "clusterrolebindings").namespaced);
        assert!(find(&types, "coordination.k8s.io", "leases").namespaced);
        assert_eq!(find(&types, "", "configmaps").list_kind(), "ConfigMapList");
    }

    #[test]
    fn b1_the_other_built_ins_have_kube_apiservers_scope_names_and_subresources() {
        let types = builtins();
        let controllers = find(&types, "", "replicationcontrollers");
        assert_eq!(controllers.short_names, ["rc"]);
        assert_eq!(controllers.categories, ["all"]);
        assert!(controllers.status_subresource);
        assert!(
            controllers
                .scale
                .as_ref()
                .is_some_and(|s| s.selector_is_label_map)
        );
        assert_eq!(controllers.field_labels, ["status.replicas"]);
        let volumes = find(&types, "", "persistentvolumes");
        assert!(!volumes.namespaced && volumes.status_subresource && volumes.short_names == ["pv"]);
        let autoscalers: Vec<&ResourceType> = types
            .iter()
            .filter(|rt| rt.plural == "horizontalpodautoscalers")
            .collect();
        assert_eq!(autoscalers.len(), 2);
        assert!(
            autoscalers
                .iter()
                .all(|rt| rt.storage_version == "v2" && rt.categories == ["all"])
        );
        assert_eq!(
            find(&types, "networking.k8s.io", "servicecidrs").storage_version,
            "v1beta1"
        );
        let policies = find(
            &types,
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
        );
        assert_eq!(policies.categories, ["api-extensions"]);
        assert!(find(&types, "storage.k8s.io", "csistoragecapacities").namespaced);
        assert!(find(&types, "apps", "daemonsets").scale.is_none());
    }

    #[test]
    fn w2_event_field_labels_for_both_event_groups() {
        let types = builtins();
        let core = find(&types, "", "events");
        assert!(core.field_labels.contains(&"involvedObject.uid".to_owned()));
        assert!(core.field_labels.contains(&"reason".to_owned()));
        let events = find(&types, "events.k8s.io", "events");
        assert!(events.field_labels.contains(&"regarding.name".to_owned()));
        assert!(events.field_labels.contains(&"reportingController".to_owned()));
    }

    fn crd() -> Value {
        json!({
            "metadata": {"name": "postgreswriters.demo.yash.com"},
            "spec": {
                "group": "demo.yash.com",
                "scope": "Namespaced",
                "names": {"kind": "PostgresWriter", "plural": "postgreswriters", "shortNames": ["pw"],
                          "categories": ["all"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}},
                     "additionalPrinterColumns": [
                         {"name": "Table", "type": "string", "jsonPath": ".spec.table", "priority": 1}
                     ],
                     "schema": {"openAPIV3Schema": {"type": "object",
                         "properties": {"spec": {"type": "object", "properties": {"table": {"type": "string"}}}}}}},
                    {"name": "v1alpha1", "served": false, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v2", "served": true, "storage": false, "scale": null,
                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
                ]
            }
        })
    }

    #[test]
    fn crd_serves_one_resource_type_per_served_version() {
        let types = from_crd(&crd()).unwrap();
        let versions: Vec<&str> = types.iter().map(|rt| rt.version.as_str()).collect();
        assert_eq!(versions, ["v1", "v2"]);
        let v1 = &types[0];
        assert_eq!(v1.api_version(), "demo.yash.com/v1");
        assert_eq!(
            v1.singular, "postgreswriter",
            "singular defaults to the lowercase kind"
        );
        assert!(v1.namespaced && v1.status_subresource && !types[1].status_subresource);
        assert_eq!(v1.short_names, ["pw"]);
        assert_eq!(v1.categories, ["all"]);
        assert_eq!(v1.printer_columns[0].name, "Table");
        assert_eq!(v1.printer_columns[0].json_path, ".spec.table");
        assert_eq!(v1.printer_columns[0].priority, 1);
        assert!(v1.schema.is_some());
        assert_eq!(v1.openapi_schema.as_ref().unwrap()["type"], "object");
        assert_eq!(
            v1.origin,
            Origin::Crd {
                name: "postgreswriters.demo.yash.com".into()
            }
        );
        assert!(!v1.is_builtin());
    }

    #[test]
    fn cluster_scoped_crd_is_not_namespaced() {
        let mut crd = crd();
        crd["spec"]["scope"] = json!("Cluster");
        crd["spec"]["names"]["singular"] = json!("pwriter");
        let types = from_crd(&crd).unwrap();
        assert!(!types[0].namespaced);
        assert_eq!(types[0].singular, "pwriter");
    }
}
