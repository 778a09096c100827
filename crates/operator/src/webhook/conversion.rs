//! VoteConfig between v1alpha1 and v1, both ways, without loss: a v1 `spec.question` rides in the
//! [`QUESTION_ANNOTATION`] annotation while the object is seen as v1alpha1, and comes back from it.
//! An option whose color v1 left out gets the palette color the controller shows anyway, because
//! v1alpha1 requires one. Everything else (metadata, status, options) is carried over untouched: the
//! conversion works on the JSON, so it keeps even fields this operator does not know.

use kube::core::{
    Status,
    conversion::{ConversionRequest, ConversionResponse, ConversionReview},
};
use serde_json::{Map, Value};

use crate::api::vote_config::{GROUP, QUESTION_ANNOTATION, palette};

const V1: &str = "voting.schoolofdevops.com/v1";
const V1ALPHA1: &str = "voting.schoolofdevops.com/v1alpha1";

/// Answers a ConversionReview: every object converted, or the review failed as a whole with the
/// reason (the API server then fails the request that needed the conversion).
pub fn review(body: &[u8]) -> Result<Value, String> {
    let review: ConversionReview =
        serde_json::from_slice(body).map_err(|e| format!("not a ConversionReview: {e}"))?;
    let request = ConversionRequest::from_review(review).map_err(|e| e.to_string())?;
    let desired = request.desired_api_version.clone();
    let converted: Result<Vec<Value>, String> = request
        .objects
        .iter()
        .cloned()
        .map(|object| convert(object, &desired))
        .collect();
    let response = ConversionResponse::for_request(request);
    let response = match converted {
        Ok(objects) => response.success(objects),
        Err(why) => response.failure(Status::failure(&why, "ConversionFailed")),
    };
    serde_json::to_value(response.into_review()).map_err(|e| e.to_string())
}

/// `object` as `desired` (`group/version`).
pub fn convert(mut object: Value, desired: &str) -> Result<Value, String> {
    let from = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    match (from.as_str(), desired) {
        (from, to) if from == to => {}
        (V1ALPHA1, V1) => to_v1(&mut object),
        (V1, V1ALPHA1) => to_v1alpha1(&mut object),
        _ => {
            return Err(format!(
                "VoteConfig {name}: cannot convert {from} to {desired}: {GROUP} serves v1alpha1 and v1"
            ));
        }
    }
    if let Some(fields) = object.as_object_mut() {
        fields.insert("apiVersion".into(), Value::String(desired.to_owned()));
    }
    Ok(object)
}

fn to_v1(object: &mut Value) {
    let question = annotations(object).and_then(|a| a.remove(QUESTION_ANNOTATION));
    drop_empty_annotations(object);
    if let (Some(question), Some(spec)) = (question, object.get_mut("spec").and_then(Value::as_object_mut)) {
        spec.insert("question".into(), question);
    }
}

fn to_v1alpha1(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let question = spec.remove("question");
    if let Some(Value::Array(options)) = spec.get_mut("options") {
        let written: Vec<Option<String>> = options
            .iter()
            .map(|o| o["color"].as_str().map(str::to_owned))
            .collect();
        let written: Vec<Option<&str>> = written.iter().map(Option::as_deref).collect();
        for (option, color) in options.iter_mut().zip(palette::fill(&written)) {
            if let Some(option) = option.as_object_mut() {
                option.insert("color".into(), Value::String(color));
            }
        }
    }
    if let Some(question) = question
        && let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut)
        && let Some(annotations) = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
    {
        annotations.insert(QUESTION_ANNOTATION.into(), question);
    }
}

/// The annotations, if any (`get_mut`: indexing would insert a null where there are none).
fn annotations(object: &mut Value) -> Option<&mut Map<String, Value>> {
    object
        .get_mut("metadata")?
        .get_mut("annotations")?
        .as_object_mut()
}

/// An object that had no annotations before it went through v1alpha1 has none after.
fn drop_empty_annotations(object: &mut Value) {
    if annotations(object).is_some_and(|a| a.is_empty())
        && let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut)
    {
        metadata.remove("annotations");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn v1() -> Value {
        json!({
            "apiVersion": V1, "kind": "VoteConfig",
            "metadata": {"name": "pets", "namespace": "default", "labels": {"team": "x"}},
            "spec": {"question": "Which pet?", "options": [
                {"id": "a", "label": "Cats", "color": "#FF6B6B"},
                {"id": "b", "label": "Dogs", "color": "#4ECDC4"}
            ]},
            "status": {"optionCount": 2, "configMapName": "pets-config"}
        })
    }

    #[test]
    fn a_question_travels_in_an_annotation_and_comes_back() {
        let old = convert(v1(), V1ALPHA1).unwrap();
        assert_eq!(old["apiVersion"], V1ALPHA1);
        assert_eq!(old["metadata"]["annotations"][QUESTION_ANNOTATION], "Which pet?");
        assert!(old["spec"].get("question").is_none());
        assert_eq!(old["status"], v1()["status"]);
        assert_eq!(convert(old, V1).unwrap(), v1(), "nothing lost on the way");
    }

    #[test]
    fn an_object_made_as_v1alpha1_survives_the_round_trip_through_v1() {
        let mut old = convert(v1(), V1ALPHA1).unwrap();
        old["metadata"]["annotations"] = json!({"note": "kept"});
        let back = convert(convert(old.clone(), V1).unwrap(), V1ALPHA1).unwrap();
        assert_eq!(back, old);
        let mut bare = old.clone();
        bare["metadata"].as_object_mut().unwrap().remove("annotations");
        assert_eq!(
            convert(convert(bare.clone(), V1).unwrap(), V1ALPHA1).unwrap(),
            bare
        );
    }

    #[test]
    fn options_without_a_color_get_the_color_the_controller_shows() {
        let mut object = v1();
        object["spec"]["options"][1]
            .as_object_mut()
            .unwrap()
            .remove("color");
        let old = convert(object, V1ALPHA1).unwrap();
        assert_eq!(old["spec"]["options"][1]["color"], palette::PALETTE[0]);
    }

    #[test]
    fn an_unknown_version_is_refused_with_what_is_served() {
        let error = convert(v1(), "voting.schoolofdevops.com/v2").unwrap_err();
        assert_eq!(
            error,
            "VoteConfig pets: cannot convert voting.schoolofdevops.com/v1 to voting.schoolofdevops.com/v2: \
             voting.schoolofdevops.com serves v1alpha1 and v1"
        );
    }

    #[test]
    fn a_review_answers_with_the_request_uid_and_every_object_converted() {
        let body = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "u-1", "desiredAPIVersion": V1ALPHA1, "objects": [v1()]}
        });
        let answer = review(&serde_json::to_vec(&body).unwrap()).unwrap();
        assert_eq!(answer["response"]["uid"], "u-1");
        assert_eq!(answer["response"]["result"]["status"], "Success");
        assert_eq!(answer["response"]["convertedObjects"][0]["apiVersion"], V1ALPHA1);
        assert!(review(b"{}").is_err());
    }
}
