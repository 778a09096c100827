//! What kube-controller-manager and kubelet would do in a real cluster, done in-process (K1, K3):
//! garbage collection by owner references (L5), namespace teardown (L4), CRD teardown (L6), CRD
//! registration (V1), the `kubernetes` Service (B6),
//! workloads: Deployments, ReplicaSets, ReplicationControllers and Pods, run on a simulated node (K1,
//! `workloads`), the ServiceAccount `default` of each namespace (K4), and ResourceQuotas (Q1).
//!
//! What a kind's own rules set on its writes (a Service's addresses, a namespace's finalizer) is
//! not a controller's: see `kinds/`.
//!
//! These run inside the store's write lock, as consequences of the write that triggered them, so a
//! test sees a consistent world the moment its request returns: no background loop to wait for.

mod api_services;
mod cluster_role_aggregation;
mod crds;
mod garbage_collector;
mod kubernetes_service;
mod namespaces;
mod resource_quotas;
mod service_accounts;
mod work_list;
pub(crate) mod workloads;

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use apimachinery::{meta, resource::ResourceType};
use serde_json::Value;

pub use workloads::node::NEVER_READY_ANNOTATION;

use crate::{
    error::{Error, Subject},
    kinds::services::{self, addresses::ServiceAddresses},
    store::{
        AdmissionPlugins, DeletePropagation, Extensions, Hooks, Indexes, Lifecycle, Registry, State, Store,
        StoredEvent, WriteReactions, storage_key, subject,
    },
};

/// The emulated controllers, as the store's hooks: `ApiServer::start` opens the store with them.
#[derive(Debug, Default)]
pub struct Controllers {
    /// Counts the changes of FlowSchemas and PriorityLevelConfigurations, which every request is
    /// classified by: read without the lock, it says when the classification must be built again.
    flow_control_changes: AtomicU64,
}

impl Controllers {
    /// How many times the API Priority and Fairness configuration changed so far.
    pub fn flow_control_changes(&self) -> u64 {
        self.flow_control_changes.load(Ordering::Acquire)
    }
}

/// The hooks a store opens with: each kind's rules from the kinds' table, the rest from the
/// controllers.
impl From<Arc<Controllers>> for Hooks {
    fn from(controllers: Arc<Controllers>) -> Hooks {
        Hooks {
            lifecycle: controllers.clone(),
            kind_rules: Arc::new(crate::kinds::Table),
            admission: controllers.clone(),
            indexes: controllers.clone(),
            reactions: controllers,
        }
    }
}

fn is(rt: &ResourceType, group: &str, plural: &str) -> bool {
    rt.group == group && rt.plural == plural
}

impl Lifecycle for Controllers {
    fn open(
        &self,
        registry: &mut Registry,
        extensions: &mut Extensions,
        objects: &HashMap<String, BTreeMap<(String, String), Value>>,
    ) {
        crds::register_stored(registry, objects);
        extensions.set(ServiceAddresses::build(objects.get(services::STORAGE_KEY)));
    }

    fn populate(&self, store: &Store, state: &mut State) {
        namespaces::create_defaults(store, state);
        api_services::reconcile(store, state);
        crate::flowcontrol::ensure_configuration(store, state);
        cluster_role_aggregation::bootstrap(store, state);
    }

    fn recover(&self, state: &mut State) {
        state.extensions.get::<garbage_collector::Pending>().reset();
        // The workloads' timers are kept: they wait for a time, not for a drain.
        state.extensions.get::<workloads::Queue>().now.reset();
    }
}

impl AdmissionPlugins for Controllers {
    /// NamespaceLifecycle: no object goes into a namespace that is missing or terminating.
    fn admit_into_namespace(
        &self,
        state: &State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Result<(), Error> {
        let stored = state
            .objects
            .get(namespaces::STORAGE_KEY)
            .and_then(|all| all.get(&(String::new(), namespace.to_owned())));
        match stored {
            None => Err(Error::NotFound(Subject {
                qualified_plural: "namespaces".into(),
                group: String::new(),
                plural: "namespaces".into(),
                name: namespace.to_owned(),
            })),
            Some(ns) if ns.is_deleting() => Err(Error::NamespaceTerminating {
                subject: subject(rt, name),
                namespace: namespace.to_owned(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// ResourceQuota.
    fn admit(
        &self,
        state: &mut State,
        rt: &ResourceType,
        old: Option<&Value>,
        object: &Value,
        subresource: Option<&str>,
    ) -> Result<(), String> {
        resource_quotas::admit(state, rt, old, object, subresource)
    }
}

impl Indexes for Controllers {
    fn indexed(&self, state: &mut State, key: &str, before: Option<&Value>, after: Option<&Value>) {
        if key == services::STORAGE_KEY {
            state.extensions.get::<ServiceAddresses>().record(before, after);
        }
    }
}

impl WriteReactions for Controllers {
    fn published(&self, event: &StoredEvent) {
        if crate::flowcontrol::configures(&event.resource) {
            self.flow_control_changes.fetch_add(1, Ordering::Release);
        }
    }

    fn after_write(
        &self,
        store: &Store,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        previous_references: &[Value],
        stored: &Value,
    ) {
        keep_flow_control(store, state, rt);
        cluster_role_aggregation::after_change(store, state, rt);
        if !garbage_collector::after_write(store, state, rt, namespace, name, previous_references, stored) {
            return;
        }
        workloads::after_write(store, state, rt, stored);
        resource_quotas::after_write(store, state, rt, namespace, stored);
        service_accounts::after_write(store, state, rt, stored);
        if is(rt, "apiextensions.k8s.io", "customresourcedefinitions") {
            crds::establish(store, state, rt, stored);
            api_services::reconcile(store, state);
        }
    }

    fn on_delete(
        &self,
        store: &Store,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        object: &Value,
        propagation: DeletePropagation,
    ) -> Option<Value> {
        if is(rt, "", "namespaces") {
            return Some(namespaces::terminate(store, state, rt, object));
        }
        if is(rt, "apiextensions.k8s.io", "customresourcedefinitions") {
            return Some(crds::terminate(store, state, rt, object));
        }
        match propagation {
            DeletePropagation::Background => None,
            DeletePropagation::Orphan => Some(garbage_collector::delete_orphaning(
                store, state, rt, namespace, object,
            )),
            DeletePropagation::Foreground => {
                garbage_collector::delete_in_foreground(store, state, rt, namespace, object)
            }
        }
    }

    /// Collects the dependents, finishes namespace or CRD teardown.
    fn after_remove(
        &self,
        store: &Store,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        object: &Value,
    ) {
        garbage_collector::after_remove(store, state, object);
        keep_flow_control(store, state, rt);
        cluster_role_aggregation::after_change(store, state, rt);
        workloads::after_remove(store, state, rt, object);
        resource_quotas::after_remove(store, state, rt, namespace);
        service_accounts::after_remove(store, state, rt, namespace, object);
        if is(rt, "", "services")
            && namespace == kubernetes_service::NAMESPACE
            && meta::name(object) == kubernetes_service::NAME
        {
            kubernetes_service::restore(store, state);
        }
        if !namespace.is_empty() {
            namespaces::finish_if_empty(store, state, namespace);
        }
        if rt.schema.is_some() || !rt.is_builtin() {
            crds::finish_if_empty(store, state, rt);
        }
    }
}

/// After a FlowSchema or PriorityLevelConfiguration was written or removed: the schemas' conditions
/// about the levels they name, as kube-apiserver's configuration controller keeps them.
fn keep_flow_control(store: &Store, state: &mut State, rt: &ResourceType) {
    if crate::flowcontrol::configures(&storage_key(rt)) {
        crate::flowcontrol::keep_dangling_conditions(store, state);
    }
}

/// Keeps the `kubernetes` Service pointing at `port`, where the server now listens (B6).
pub fn serve_on(store: &Store, port: u16) {
    let _ = store.write_step(|state| {
        kubernetes_service::reconcile(store, state, port);
        Ok(())
    });
}

/// Simulates a node from now on (see `workloads::node`), registering it if missing.
pub fn simulate_node(store: &Store) {
    let _ = store.write_step(|state| {
        workloads::node::start(store, state);
        Ok(())
    });
}

/// Syncs the workloads whose time has come (a Pod ready long enough to be available, a rollout past
/// its deadline) and the quotas whose resync is due; called about once a second.
pub fn tick(store: &Store) {
    let _ = store.write_step(|state| {
        workloads::tick(store, state);
        resource_quotas::resync_if_due(store, state);
        Ok(())
    });
}

/// After `namespaces/{name}/finalize`: a namespace being deleted that is empty and held by no one
/// else's finalizer any more goes, as the namespace controller would see to.
pub(crate) fn after_finalize(store: &Store, namespace: &str) -> Result<(), Error> {
    store.write_step(|state| {
        namespaces::finish_if_empty(store, state, namespace);
        Ok(())
    })
}
