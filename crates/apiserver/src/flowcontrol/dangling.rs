//! Each FlowSchema's `Dangling` condition, as kube-apiserver's configuration controller writes it
//! (server-side apply of the status, as its own field manager): False when the priority level it
//! names exists, True when it does not. A FlowSchema whose priority level is missing classifies no
//! request.

use std::collections::HashSet;

use apimachinery::meta;
use apimachinery::patch::{self, ApplyRequest, ObjectSchema};
use serde_json::{Value, json};

use super::{FLOW_SCHEMAS, GROUP, PRIORITY_LEVELS};
use crate::{
    store::{State, Store, WriteOptions, storage_key},
    strategy::writes,
};

/// The field manager of kube-apiserver's configuration controller.
const CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";

/// Set while conditions are being written, or while the configuration is created at start-up: the
/// writes that follow do not each bring every condition up to date again (one pass after them does).
#[derive(Default)]
struct Paused(bool);

/// Brings every FlowSchema's `Dangling` condition up to date with the priority levels there are.
pub(crate) fn keep_dangling_conditions(store: &Store, state: &mut State) {
    if state.extensions.get::<Paused>().0 {
        return;
    }
    state.extensions.get::<Paused>().0 = true;
    update_conditions(store, state);
    state.extensions.get::<Paused>().0 = false;
}

/// Runs `writes` with the conditions left alone, then brings them up to date once.
pub(super) fn with_conditions_once(
    store: &Store,
    state: &mut State,
    writes: impl FnOnce(&Store, &mut State),
) {
    let was_paused = std::mem::replace(&mut state.extensions.get::<Paused>().0, true);
    writes(store, state);
    state.extensions.get::<Paused>().0 = was_paused;
    keep_dangling_conditions(store, state);
}

fn update_conditions(store: &Store, state: &mut State) {
    let (Some(schemas), Some(levels)) = (
        state.registry.resolve(GROUP, "v1", FLOW_SCHEMAS),
        state.registry.resolve(GROUP, "v1", PRIORITY_LEVELS),
    ) else {
        return;
    };
    let level_names: HashSet<String> = state
        .objects
        .get(&storage_key(&levels))
        .map(|objects| objects.keys().map(|(_, name)| name.clone()).collect())
        .unwrap_or_default();
    let flow_schemas: Vec<Value> = state
        .objects
        .get(&storage_key(&schemas))
        .map(|objects| objects.values().map(|stored| stored.decode()).collect())
        .unwrap_or_default();
    let now = meta::now_rfc3339();
    for flow_schema in flow_schemas {
        let level = flow_schema
            .pointer("/spec/priorityLevelConfiguration/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let wanted = condition(level, level_names.contains(level));
        let current = flow_schema
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Dangling"));
        let same = |field: &str| current.and_then(|c| c.get(field)) == wanted.get(field);
        if same("status") && same("reason") && same("message") || meta::is_deleting(&flow_schema) {
            continue;
        }
        let mut condition = wanted;
        condition["lastTransitionTime"] = json!(now);
        let name = meta::name(&flow_schema).to_owned();
        let applied = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "FlowSchema",
            "metadata": {"name": name}, "status": {"conditions": [condition]}});
        let written = patch::server_side_apply(&ApplyRequest {
            live: Some(&flow_schema),
            applied: &applied,
            manager: CONSUMER,
            force: true,
            subresource: Some("status"),
            schema: ObjectSchema::BuiltIn {
                api_version: "flowcontrol.apiserver.k8s.io/v1",
                kind: "FlowSchema",
            },
            status_subresource: true,
            now: &now,
        });
        match written {
            Ok(next) => {
                // The status write of kube-apiserver's own controller, through the strategy's stages.
                let options = WriteOptions::default();
                let written = writes::update_locked(
                    store,
                    state,
                    &schemas,
                    "",
                    &name,
                    flow_schema,
                    next,
                    &options,
                    true,
                );
                if let Err(error) = written {
                    tracing::warn!(%error, flow_schema = name, "writing a FlowSchema's status");
                }
            }
            Err(error) => tracing::warn!(%error, flow_schema = name, "writing a FlowSchema's status"),
        }
    }
}

/// The `Dangling` condition of a FlowSchema naming priority level `level`, which `exists` or not.
fn condition(level: &str, exists: bool) -> Value {
    let (status, reason, message) = match exists {
        true => (
            "False",
            "Found",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists"
            ),
        ),
        false => (
            "True",
            "NotFound",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object"
            ),
        ),
    };
    json!({"type": "Dangling", "status": status, "reason": reason, "message": message})
}
