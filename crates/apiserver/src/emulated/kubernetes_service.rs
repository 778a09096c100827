//! The `kubernetes` Service in `default` (B6): the address in-cluster clients find the API server at.
//! kube-apiserver keeps it from start-up on, its target port the port it serves on, and puts it back
//! when it is deleted; so does this server.

use serde_json::{Value, json};

use crate::store::{State, Store, WriteOptions};

pub(super) const NAMESPACE: &str = "default";
pub(super) const NAME: &str = "kubernetes";

/// The port the server listens on, once it does: the Service's target port, kept to restore the
/// Service when it is deleted.
#[derive(Default, Clone, Copy)]
struct ServedPort(Option<u16>);

fn desired(port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
            "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "clusterIP": crate::kinds::services::KUBERNETES_IP.to_string(), "sessionAffinity": "None",
            "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
    })
}

/// Creates the Service, or points a kept one (from a data dir) at `port`, the port served now.
pub(super) fn reconcile(store: &Store, state: &mut State, port: u16) {
    *state.extensions.get::<ServedPort>() = ServedPort(Some(port));
    let Some(rt) = state.registry.resolve("", "v1", "services") else {
        return;
    };
    let desired = desired(port);
    let result = match store.stored(state, &rt, NAMESPACE, NAME) {
        None => crate::strategy::writes::create_locked(store, state, &rt, NAMESPACE, desired, &manager())
            .map(drop),
        Some(current) if current.pointer("/spec/ports") == desired.pointer("/spec/ports") => Ok(()),
        Some(current) => {
            let mut next = current.clone();
            next["spec"]["ports"] = desired["spec"]["ports"].clone();
            crate::strategy::writes::update_locked(
                store,
                state,
                &rt,
                NAMESPACE,
                NAME,
                current,
                next,
                &manager(),
                false,
            )
            .map(drop)
        }
    };
    if let Err(error) = result {
        tracing::warn!(%error, "could not keep the kubernetes Service");
    }
}

/// Puts the Service back after it was removed, as kube-apiserver's reconciler does.
pub(super) fn restore(store: &Store, state: &mut State) {
    if let ServedPort(Some(port)) = *state.extensions.get::<ServedPort>() {
        reconcile(store, state, port);
    }
}

fn manager() -> WriteOptions {
    WriteOptions {
        field_manager: Some("kube-apiserver".into()),
        ..WriteOptions::default()
    }
}
