//! The configuration kube-apiserver creates at start-up: its mandatory (`exempt`, `catch-all`) and
//! suggested FlowSchemas and PriorityLevelConfigurations, as kube-apiserver 1.33 writes them (field
//! manager, `apf.kubernetes.io/autoupdate-spec` annotation). One missing at start-up is created again.

use std::sync::Arc;

use apimachinery::meta;
use serde_json::Value;

use super::{FLOW_SCHEMAS, GROUP, PRIORITY_LEVELS};
use crate::store::{State, Store, WriteOptions};

/// The field manager of kube-apiserver's configuration producer.
const PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";

/// The objects, priority levels first, as kube-apiserver 1.33 serves them.
const OBJECTS: &str = include_str!("bootstrap.json");

/// Creates whichever of the objects is missing, then sets the schemas' conditions once.
pub(crate) fn ensure_configuration(store: &Store, state: &mut State) {
    super::dangling::with_conditions_once(store, state, create_missing);
}

fn create_missing(store: &Store, state: &mut State) {
    let Ok(objects) = serde_json::from_str::<Vec<Value>>(OBJECTS) else {
        tracing::error!("the built-in API Priority and Fairness configuration does not parse");
        return;
    };
    let options = WriteOptions {
        field_manager: Some(PRODUCER.to_owned()),
        ..WriteOptions::default()
    };
    for object in objects {
        let plural = match object.get("kind").and_then(Value::as_str) {
            Some("FlowSchema") => FLOW_SCHEMAS,
            _ => PRIORITY_LEVELS,
        };
        let Some(rt) = state.registry.resolve(GROUP, "v1", plural) else {
            continue;
        };
        if store.stored(state, &rt, "", meta::name(&object)).is_some() {
            continue;
        }
        if let Err(error) =
            crate::strategy::writes::create_locked(store, state, &Arc::clone(&rt), "", object, &options)
        {
            tracing::error!(%error, "creating the API Priority and Fairness configuration");
        }
    }
}
