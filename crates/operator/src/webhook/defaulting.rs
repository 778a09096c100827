//! The defaulting webhook for VoteConfig v1: an option without a color gets the first palette color
//! no other option of the object uses (see [`crate::api::vote_config::palette`]). The default depends
//! on the other options, which a schema `default` cannot say; written into the object at admission,
//! it stays put when other options change later.

use kube::core::{
    DynamicObject,
    admission::{AdmissionRequest, AdmissionResponse, AdmissionReview},
};
use serde_json::{Value, json};

use crate::api::vote_config::palette;

/// Answers an AdmissionReview for a VoteConfig with the JSON patch that fills in missing colors.
pub fn review(body: &[u8]) -> Result<Value, String> {
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_slice(body).map_err(|e| format!("not an AdmissionReview: {e}"))?;
    let request: AdmissionRequest<DynamicObject> = review.try_into().map_err(|e| format!("{e}"))?;
    let mut response = AdmissionResponse::from(&request);
    let patch = request
        .object
        .as_ref()
        .map(|o| color_patch(&o.data))
        .unwrap_or_default();
    if !patch.is_empty() {
        // Our own JSON Patch operations always parse, and always serialize.
        let patch: json_patch_v4::Patch =
            serde_json::from_value(Value::Array(patch)).map_err(|e| e.to_string())?;
        response = response.with_patch(patch).map_err(|e| e.to_string())?;
    }
    serde_json::to_value(response.into_review()).map_err(|e| e.to_string())
}

/// JSON Patch operations adding a color to each option of `object` (a VoteConfig's body) that has none.
/// Anything not shaped like a VoteConfig is left to the schema to refuse.
pub fn color_patch(object: &Value) -> Vec<Value> {
    let Some(options) = object["spec"]["options"].as_array() else {
        return Vec::new();
    };
    let written: Vec<Option<&str>> = options.iter().map(|o| o["color"].as_str()).collect();
    palette::fill(&written)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| written[*i].is_none() && options[*i].is_object())
        .map(|(i, color)| json!({"op": "add", "path": format!("/spec/options/{i}/color"), "value": color}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_options_without_a_color_are_patched_with_unused_colors() {
        let object = json!({"spec": {"options": [
            {"id": "a", "label": "Cats"},
            {"id": "b", "label": "Dogs", "color": "#E6194B"},
            {"id": "c", "label": "Birds"}
        ]}});
        assert_eq!(
            color_patch(&object),
            [
                json!({"op": "add", "path": "/spec/options/0/color", "value": "#3CB44B"}),
                json!({"op": "add", "path": "/spec/options/2/color", "value": "#4363D8"}),
            ]
        );
        assert!(color_patch(&json!({"spec": {}})).is_empty());
    }

    #[test]
    fn a_review_answers_allowed_with_a_json_patch() {
        let body = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "u-2", "operation": "CREATE", "userInfo": {},
                "kind": {"group": "voting.schoolofdevops.com", "version": "v1", "kind": "VoteConfig"},
                "resource": {"group": "voting.schoolofdevops.com", "version": "v1", "resource": "voteconfigs"},
                "object": {"apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
                    "metadata": {"name": "pets"},
                    "spec": {"options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]}}
            }
        });
        let answer = review(&serde_json::to_vec(&body).unwrap()).unwrap();
        let response = &answer["response"];
        assert_eq!(
            (response["uid"].as_str(), response["allowed"].as_bool()),
            (Some("u-2"), Some(true))
        );
        assert_eq!(response["patchType"], "JSONPatch");
        // kube writes the patch's bytes as a JSON array of numbers, which Go decodes into []byte as
        // readily as base64.
        let bytes: Vec<u8> = serde_json::from_value(response["patch"].clone()).unwrap();
        let patch: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(patch.as_array().unwrap().len(), 2);
    }
}
