//! Reset fields: what a kind's registry puts back on every write through one endpoint, whatever the
//! request said. A write owns none of them, so managedFields never record them for it. The status
//! subresource's split (the main resource resets `status`, `/status` all but `status`) is common to
//! every kind with one and handled where writes are recorded; this names the kinds whose registries
//! reset more.

use super::{
    ObjectSchema,
    field_set::{FieldSet, field_key},
};

/// The paths kind `kind` of `group` resets on a write to `subresource` (the main resource: `None`).
fn reset_paths(group: &str, kind: &str, subresource: Option<&str>) -> &'static [&'static [&'static str]] {
    match (group, kind, subresource) {
        // A CSR's spec is the requester's, filled in from who sent it; its conditions are the
        // approver's and its certificate the signer's, each through their own subresource.
        ("certificates.k8s.io", "CertificateSigningRequest", None) => &[&["spec"], &["status"]],
        ("certificates.k8s.io", "CertificateSigningRequest", Some("approval")) => {
            &[&["spec"], &["status", "certificate"]]
        }
        ("certificates.k8s.io", "CertificateSigningRequest", Some("status")) => {
            &[&["spec"], &["status", "conditions"]]
        }
        _ => &[],
    }
}

/// `set` without the fields `schema`'s kind resets on a write to `subresource`.
pub(super) fn without_reset_fields(
    set: FieldSet,
    schema: &ObjectSchema<'_>,
    subresource: Option<&str>,
) -> FieldSet {
    let ObjectSchema::BuiltIn { api_version, kind } = schema else {
        return set;
    };
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    reset_paths(group, kind, subresource)
        .iter()
        .fold(set, |set, path| {
            let prefix: Vec<String> = path.iter().map(|key| field_key(key)).collect();
            set.without_subtree(&prefix)
        })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::patch::{ObjectSchema, UpdateWrite, record_update};

    fn csr_write(subresource: Option<&str>) -> UpdateWrite<'_> {
        UpdateWrite {
            manager: "kubectl",
            subresource,
            schema: ObjectSchema::BuiltIn {
                api_version: "certificates.k8s.io/v1",
                kind: "CertificateSigningRequest",
            },
            status_subresource: true,
            now: "2026-11-22T00:00:00Z",
        }
    }

    #[test]
    fn a_csr_create_owns_nothing_its_registry_resets() {
        let mut csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": "c"}, "spec": {"signerName": "s", "usages": ["client auth"], "request": "UQ=="}});
        record_update(None, &mut csr, &csr_write(None));
        assert_eq!(csr["metadata"].get("managedFields"), None, "{csr}");

        let mut labelled = csr.clone();
        labelled["metadata"]["labels"] = json!({"team": "a"});
        record_update(None, &mut labelled, &csr_write(None));
        assert_eq!(
            labelled["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}})
        );
    }

    #[test]
    fn an_update_of_an_object_without_managed_fields_records_none() {
        let old = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": "c"}, "spec": {"signerName": "s"}, "status": {}});
        let mut approved = old.clone();
        approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True"}]});
        record_update(Some(&old), &mut approved, &csr_write(Some("approval")));
        assert_eq!(approved["metadata"].get("managedFields"), None::<&Value>);
    }
}
