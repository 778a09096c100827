//! Validation, the stage after mutating admission: the kind's rules (a CRD's schema and transition
//! rules, a built-in's immutable fields, the workload kinds' rules), the metadata rules every kind
//! shares (V5), and what no update may do to an object being deleted.

use apimachinery::{
    FieldCause, meta,
    resource::ResourceType,
    validation::{NameRule, validate_metadata},
};
use serde_json::Value;

use crate::{
    error::{Error, Result},
    kinds,
};

/// Validates `object`, written over `old` (none: created), or says 422 with every cause.
pub fn validate(rt: &ResourceType, name: &str, object: &Value, old: Option<&Value>) -> Result<()> {
    if let Some(old) = old {
        refuse_new_finalizers_while_deleting(rt, name, old, object)?;
    }
    if let Some(schema) = &rt.schema {
        // The stored object feeds the CRD's transition rules (`oldSelf`, V4).
        let causes = schema.validate_update(object, old);
        if !causes.is_empty() {
            return Err(Error::invalid(rt, name, causes));
        }
    } else if rt.is_builtin()
        && let Some(old) = old
    {
        apimachinery::defaults::check_immutable(&rt.kind, old, object)
            .map_err(|e| Error::from_machinery_about(e, rt, name))?;
    }
    let causes = validate_common(rt, object);
    if !causes.is_empty() {
        return Err(Error::invalid(rt, name, causes));
    }
    Ok(())
}

/// Metadata rules every kind shares (V5).
/// So are the rules of the kinds that have no schema to say them (see [`kinds`]).
pub fn validate_common(rt: &ResourceType, object: &Value) -> Vec<FieldCause> {
    let kind = kinds::of(rt);
    let name_rule = kind.map_or(NameRule::Subdomain, |kind| kind.name_rule());
    let mut causes = validate_metadata(object, name_rule);
    if let Some(kind) = kind {
        causes.extend(kind.validate(rt, object));
    }
    causes
}

/// An object being deleted may lose finalizers but gain none.
fn refuse_new_finalizers_while_deleting(
    rt: &ResourceType,
    name: &str,
    old: &Value,
    next: &Value,
) -> Result<()> {
    if !meta::is_deleting(old) {
        return Ok(());
    }
    let before = meta::finalizers(old);
    let added: Vec<String> = meta::finalizers(next)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
    let cause = FieldCause::new(
        "FieldValueForbidden",
        "metadata.finalizers",
        format!(
            "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            quoted.join(", ")
        ),
    );
    // kube-apiserver's validation reports it twice (once for the object, once for its metadata), and
    // so does its answer.
    Err(Error::invalid(rt, name, vec![cause.clone(), cause]))
}
