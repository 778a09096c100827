//! Services get an immutable cluster IP from 10.96.0.0/12, as the real allocator hands out (B5).

use apimachinery::FieldCause;
use serde_json::{Value, json};

use crate::store::State;

/// Allocates a new Service's IP; on update, an omitted IP keeps the allocated one (so a re-applied
/// manifest without it converges) and a different one is 422, as kube-apiserver answers.
pub(super) fn admit(
    state: &mut State,
    old: Option<&Value>,
    object: &mut Value,
) -> Result<(), Vec<FieldCause>> {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    // The IP families come with the address: the stored ones, or a single IPv4 stack (the service
    // network here is IPv4 alone).
    if spec.get("type").and_then(Value::as_str) != Some("ExternalName") {
        for (field, single_stack) in [
            ("ipFamilies", json!(["IPv4"])),
            ("ipFamilyPolicy", json!("SingleStack")),
        ] {
            if spec.get(field).is_none_or(Value::is_null) {
                let kept = old.and_then(|o| o.pointer(&format!("/spec/{field}"))).cloned();
                spec.insert(field.into(), kept.unwrap_or(single_stack));
            }
        }
    }
    let requested = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if let Some(old_ip) = old.and_then(|o| o.pointer("/spec/clusterIP")).cloned() {
        if !requested.is_empty() && Some(requested.as_str()) != old_ip.as_str() {
            return Err(vec![FieldCause::new(
                "FieldValueInvalid",
                "spec.clusterIP",
                format!("Invalid value: {requested:?}: field is immutable"),
            )]);
        }
        spec.insert("clusterIP".into(), old_ip.clone());
        spec.insert("clusterIPs".into(), json!([old_ip]));
        return Ok(());
    }
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return Ok(());
    }
    if requested == "None" {
        // Headless: no address, and the list of addresses says so too.
        spec.insert("clusterIPs".into(), json!(["None"]));
        return Ok(());
    }
    let ip = if requested.is_empty() {
        let offset = state.next_cluster_ip;
        state.next_cluster_ip += 1;
        // 10.96.0.0/12: offsets count up from 10.96.0.1.
        format!(
            "10.{}.{}.{}",
            96 + (offset >> 16),
            (offset >> 8) & 0xff,
            offset & 0xff
        )
    } else {
        requested.to_owned()
    };
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    Ok(())
}
