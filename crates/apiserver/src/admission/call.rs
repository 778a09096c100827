//! One admission webhook call (A4-A7): the `AdmissionReview` (admission.k8s.io/v1) sent, and what its
//! answer means: allowed, denied with the webhook's Status, or patched; a webhook that cannot be
//! called fails the request or is skipped, as its `failurePolicy` says.

use apimachinery::resource::ResourceType;
use base64::Engine;
use serde_json::{Value, json};

use super::{
    attributes::{Attributes, Kind},
    matching::Matched,
};
use crate::{
    error::{Error, Result},
    token_holder,
    webhooks::{Converter, client, endpoint},
};

/// What an allowing webhook answered: the object it patched (at the request's version), if any, and
/// its warnings.
#[derive(Debug, Default)]
pub struct Allowed {
    pub patched: Option<Value>,
    pub warnings: Vec<String>,
}

/// Calls `matched` about `attributes`; `Err` is the request's answer (a denial, or a failure the
/// webhook's `failurePolicy: Fail` makes the request's).
pub async fn call(store: &crate::Store, matched: &Matched, attributes: &Attributes) -> Result<Allowed> {
    let name = matched.name().to_owned();
    if attributes.dry_run && !matched.safe_for_dry_run() {
        return Err(Error::BadRequest(format!(
            "admission webhook \"{name}\" does not support dry run"
        )));
    }
    let failed = |what: String| {
        if matched.ignores_failures() {
            tracing::warn!(webhook = %name, error = %what, "admission webhook failed; ignored as its failurePolicy says");
            Ok(Allowed::default())
        } else {
            Err(Error::Internal(format!(
                "failed calling webhook \"{name}\": {what}"
            )))
        }
    };
    let (object, old) = match at_version(store, attributes, &matched.as_type).await {
        Ok(objects) => objects,
        Err(error) => return failed(error.to_string()),
    };
    let uid = uuid::Uuid::new_v4().to_string();
    let review = match review(attributes, &matched.as_type, &uid, object.clone(), old) {
        Ok(review) => review,
        Err(what) => return failed(what),
    };
    let endpoint = match endpoint::resolve(store, matched.webhook.get("clientConfig").unwrap_or(&Value::Null))
    {
        Ok(endpoint) => endpoint,
        Err(error) => return failed(format!("failed to call webhook: {error}")),
    };
    let answer = match client::post(&endpoint, &review, matched.timeout()).await {
        Ok(answer) => answer,
        Err(error) => return failed(format!("failed to call webhook: {error}")),
    };
    if answer.status != 200 {
        return failed(format!(
            "failed to call webhook: the server responded with the status code {} but did not return more information",
            answer.status
        ));
    }
    let response = answer.body.get("response").cloned().unwrap_or(Value::Null);
    if response.get("uid").and_then(Value::as_str) != Some(uid.as_str()) {
        return failed(format!(
            "expected response.uid=\"{uid}\", got \"{}\"",
            response.get("uid").and_then(Value::as_str).unwrap_or_default()
        ));
    }
    let warnings: Vec<String> = response
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    if response.get("allowed").and_then(Value::as_bool) != Some(true) {
        return Err(denial(&name, response.get("status").unwrap_or(&Value::Null)));
    }
    let patched = match (response.get("patch").filter(|p| !p.is_null()), object) {
        (Some(encoded), Some(object)) => match patched(encoded, object) {
            Ok(patched) => Some(back_at_request_version(store, attributes, &matched.as_type, patched).await?),
            Err(what) => return failed(what),
        },
        _ => None,
    };
    Ok(Allowed { patched, warnings })
}

/// The object and old object at the version the webhook's rules name (A3).
async fn at_version(
    store: &crate::Store,
    attributes: &Attributes,
    as_type: &ResourceType,
) -> Result<(Option<Value>, Option<Value>)> {
    // A subresource's own kind (a Scale, an Eviction) is served at one version: sent as it is.
    if as_type.version == attributes.rt.version || attributes.kind.is_some() {
        return Ok((attributes.object.clone(), attributes.old.clone()));
    }
    let api_version = as_type.api_version();
    let convert = |object: Option<Value>| async {
        let Some(object) = object else { return Ok(None) };
        match Converter::of(store, &attributes.rt) {
            Some(converter) => converter.convert_one(store, object, &api_version).await.map(Some),
            None => Ok(Some(relabelled(object, &api_version))),
        }
    };
    Ok((
        convert(attributes.object.clone()).await?,
        convert(attributes.old.clone()).await?,
    ))
}

async fn back_at_request_version(
    store: &crate::Store,
    attributes: &Attributes,
    as_type: &ResourceType,
    object: Value,
) -> Result<Value> {
    if as_type.version == attributes.rt.version || attributes.kind.is_some() {
        return Ok(object);
    }
    let api_version = attributes.rt.api_version();
    match Converter::of(store, &attributes.rt) {
        Some(converter) => converter.convert_one(store, object, &api_version).await,
        None => Ok(relabelled(object, &api_version)),
    }
}

fn relabelled(mut object: Value, api_version: &str) -> Value {
    object["apiVersion"] = Value::String(api_version.to_owned());
    object
}

/// The review sent. Written as JSON rather than with kube's `AdmissionRequest`, whose
/// `GroupVersionResource` would add an `api_version` field and whose empty options would show as
/// `null`; a webhook reads exactly the fields kube-apiserver sends, absent ones left out.
fn review(
    attributes: &Attributes,
    as_type: &ResourceType,
    uid: &str,
    object: Option<Value>,
    old: Option<Value>,
) -> Result<Value, String> {
    let kind = |rt: &ResourceType| Kind::of(attributes.kind.as_ref(), rt);
    let resource =
        |rt: &ResourceType| json!({"group": rt.group, "version": rt.version, "resource": rt.plural});
    let mut request = json!({
        "uid": uid,
        "kind": kind(as_type),
        "resource": resource(as_type),
        "requestKind": kind(&attributes.rt),
        "requestResource": resource(&attributes.rt),
        "operation": super::attributes::operation_name(&attributes.operation),
        "userInfo": {"username": token_holder::USER, "uid": token_holder::USER, "groups": token_holder::GROUPS},
        "object": object,
        "oldObject": old,
        "dryRun": attributes.dry_run,
        "options": attributes.options,
    });
    let fields = request.as_object_mut().ok_or("a review is an object")?;
    if let Some(subresource) = &attributes.subresource {
        fields.insert("subResource".into(), json!(subresource));
        fields.insert("requestSubResource".into(), json!(subresource));
    }
    // deletecollection names no object: kube-apiserver sends each object's review without a name.
    if !attributes.name.is_empty() {
        fields.insert("name".into(), json!(attributes.name));
    }
    if !attributes.namespace.is_empty() {
        fields.insert("namespace".into(), json!(attributes.namespace));
    }
    Ok(json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}))
}

/// `object` after the webhook's JSON patch: base64 text in the response, or, as Go's decoder also
/// takes for a byte slice (and kube-rs's `AdmissionResponse` writes), an array of byte values.
fn patched(encoded: &Value, object: Value) -> Result<Value, String> {
    let bytes = match encoded {
        Value::String(text) => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("the response patch is not base64: {e}"))?,
        Value::Array(values) => values
            .iter()
            .map(|v| v.as_u64().and_then(|b| u8::try_from(b).ok()))
            .collect::<Option<Vec<u8>>>()
            .ok_or("the response patch is an array of something other than bytes")?,
        _ => return Err("the response patch is neither base64 text nor bytes".into()),
    };
    let patch: Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("the response patch is not JSON: {e}"))?;
    apimachinery::patch::json_patch(&object, &patch).map_err(|e| e.to_string())
}

/// The Status a denial answers with: the webhook's code (at least 400) and reason, its message
/// prefixed with the webhook's name.
fn denial(name: &str, status: &Value) -> Error {
    let denied_by = format!("admission webhook \"{name}\" denied the request");
    let text = |key: &str| {
        status
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (message, reason) = (text("message"), text("reason"));
    let message = match (message.is_empty(), reason.is_empty()) {
        (false, _) => format!("{denied_by}: {message}"),
        (true, false) => format!("{denied_by}: {reason}"),
        (true, true) => format!("{denied_by} without explanation"),
    };
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| *code >= 400)
        .unwrap_or(400);
    Error::Refused {
        code,
        reason,
        message,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::patched;

    #[test]
    fn a_patch_is_read_as_base64_text_or_as_an_array_of_bytes() {
        let patch = br#"[{"op":"add","path":"/data/b","value":"2"}]"#;
        let object = json!({"data": {"a": "1"}});
        let expected = json!({"data": {"a": "1", "b": "2"}});
        let text = json!(base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            patch
        ));
        let bytes = json!(patch.to_vec());
        assert_eq!(patched(&text, object.clone()).unwrap(), expected);
        assert_eq!(patched(&bytes, object.clone()).unwrap(), expected);
        assert!(patched(&json!([256]), object.clone()).is_err());
        assert!(patched(&json!("not base64!"), object).is_err());
    }
}
