//! CRD conversion webhooks (X1-X4): a custom resource whose CRD says `conversion.strategy: Webhook` is
//! kept at the version it was written in (the storage version, since writes are converted to it) and
//! converted by a `ConversionReview` (apiextensions.k8s.io/v1) whenever a client reads or writes it
//! at another version. Objects already at the wanted version are never sent.

use std::time::Duration;

use apimachinery::meta;
use apimachinery::resource::{Origin, ResourceType};
use kube::core::{
    TypeMeta,
    conversion::{ConversionRequest, ConversionReview},
};
use serde_json::{Value, json};

use super::{client, endpoint};
use crate::{
    error::{Error, Result},
    store::Store,
};

/// How long a conversion webhook may take: kube-apiserver's fixed 30 s.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The conversion webhook of one custom resource type.
#[derive(Debug, Clone)]
pub struct Converter {
    kind: String,
    /// The CRD's `spec.conversion.webhook.clientConfig`.
    client_config: Value,
    /// The version objects are stored at.
    pub storage_version: String,
}

impl Converter {
    /// The converter of `rt`, when its CRD asks for a conversion webhook; `None` for built-ins and
    /// for CRDs converting by `None` (a change of `apiVersion` alone).
    pub fn of(store: &Store, rt: &ResourceType) -> Option<Converter> {
        let Origin::Crd { name } = &rt.origin else {
            return None;
        };
        let crd = crate::kinds::crds::stored(store, name)?;
        if crd.pointer("/spec/conversion/strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let storage_version = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)?
            .iter()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))?
            .get("name")
            .and_then(Value::as_str)?
            .to_owned();
        Some(Converter {
            kind: rt.kind.clone(),
            client_config: crd
                .pointer("/spec/conversion/webhook/clientConfig")
                .cloned()
                .unwrap_or(Value::Null),
            storage_version,
        })
    }

    /// `objects` at `api_version`, in the same order: those at another version converted in one review.
    pub async fn convert(&self, store: &Store, objects: Vec<Value>, api_version: &str) -> Result<Vec<Value>> {
        let pending: Vec<usize> = (0..objects.len())
            .filter(|&i| objects[i].get("apiVersion").and_then(Value::as_str) != Some(api_version))
            .collect();
        if pending.is_empty() {
            return Ok(objects);
        }
        let sent: Vec<Value> = pending.iter().map(|&i| objects[i].clone()).collect();
        // The real server's messages name the version converted from.
        let from = sent[0]
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let failed = |what: String| {
            Error::Unclassified(format!(
                "conversion webhook for {from}, Kind={} failed: {what}",
                self.kind
            ))
        };
        let converted = self
            .call(store, sent.clone(), api_version)
            .await
            .map_err(failed)?;
        let mut objects = objects;
        for (index, object) in pending.into_iter().zip(converted) {
            objects[index] = object;
        }
        Ok(objects)
    }

    /// One object at `api_version`.
    pub async fn convert_one(&self, store: &Store, object: Value, api_version: &str) -> Result<Value> {
        let mut converted = self.convert(store, vec![object], api_version).await?;
        converted
            .pop()
            .ok_or_else(|| Error::Unclassified("the conversion webhook returned no object".into()))
    }

    /// One review; `Err` says what went wrong, for the caller to put in context.
    async fn call(
        &self,
        store: &Store,
        objects: Vec<Value>,
        api_version: &str,
    ) -> Result<Vec<Value>, String> {
        let uid = uuid::Uuid::new_v4().to_string();
        let review = ConversionReview {
            types: TypeMeta {
                api_version: "apiextensions.k8s.io/v1".into(),
                kind: "ConversionReview".into(),
            },
            request: Some(ConversionRequest {
                types: None,
                uid: uid.clone(),
                desired_api_version: api_version.to_owned(),
                objects: objects.clone(),
            }),
            response: None,
        };
        let review = serde_json::to_value(&review).map_err(|e| e.to_string())?;
        let endpoint = endpoint::resolve(store, &self.client_config).map_err(|e| e.0)?;
        let answer = client::post(&endpoint, &review, TIMEOUT).await.map_err(|e| e.0)?;
        if answer.status != 200 {
            return Err(format!(
                "the server responded with the status code {} but did not return more information",
                answer.status
            ));
        }
        let response = answer.body.get("response").cloned().unwrap_or(Value::Null);
        if response.get("uid").and_then(Value::as_str) != Some(uid.as_str()) {
            return Err(format!(
                "expected response uid \"{uid}\", got \"{}\"",
                response.get("uid").and_then(Value::as_str).unwrap_or_default()
            ));
        }
        if response.pointer("/result/status").and_then(Value::as_str) != Some("Success") {
            let message = response
                .pointer("/result/message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return Err(message.to_owned());
        }
        let converted = response
            .get("convertedObjects")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if converted.len() != objects.len() {
            return Err(format!(
                "returned {} objects, expected {}",
                converted.len(),
                objects.len()
            ));
        }
        objects
            .iter()
            .zip(converted)
            .enumerate()
            .map(|(index, (original, converted))| self.accept(index, original, converted, api_version))
            .collect()
    }

    /// A converted object, checked as the real server checks it: the wanted apiVersion, the same kind,
    /// and its metadata the original's but for labels and annotations (the only fields a conversion
    /// may change there).
    fn accept(
        &self,
        index: usize,
        original: &Value,
        mut converted: Value,
        api_version: &str,
    ) -> Result<Value, String> {
        let got = converted
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if got != api_version {
            return Err(format!(
                "invalid converted object at index {index}: invalid apiVersion \"{got}\", expected \"{api_version}\""
            ));
        }
        if converted.get("kind") != original.get("kind") {
            return Err(format!(
                "invalid converted object at index {index}: invalid kind {}, expected {}",
                converted.get("kind").unwrap_or(&Value::Null),
                original.get("kind").unwrap_or(&Value::Null)
            ));
        }
        let mut metadata = original.get("metadata").cloned().unwrap_or_else(|| json!({}));
        for field in ["labels", "annotations"] {
            match converted.pointer(&format!("/metadata/{field}")) {
                Some(value) => metadata[field] = value.clone(),
                None => {
                    if let Some(map) = metadata.as_object_mut() {
                        map.remove(field);
                    }
                }
            }
        }
        *meta::metadata_mut(&mut converted) = metadata.as_object().cloned().unwrap_or_default();
        Ok(converted)
    }
}

/// Stored objects as a client of `rt` sees them: converted to `rt`'s version by `converter` first
/// (when the CRD converts by webhook), then presented (apiVersion, kind, defaults) as usual.
pub async fn read(
    store: &Store,
    rt: &ResourceType,
    converter: Option<&Converter>,
    stored: Vec<Value>,
) -> Result<Vec<Value>> {
    let objects = match converter {
        Some(converter) => {
            let storage_api_version = format!("{}/{}", rt.group, converter.storage_version);
            let stored = stored
                .into_iter()
                .map(|mut object| {
                    // Objects written before the server stamped versions are at the storage version.
                    if object
                        .get("apiVersion")
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        object["apiVersion"] = json!(storage_api_version);
                    }
                    object
                })
                .collect();
            converter.convert(store, stored, &rt.api_version()).await?
        }
        None => stored,
    };
    Ok(objects
        .into_iter()
        .map(|object| apimachinery::stored_form::present_owned(rt, object))
        .collect())
}
