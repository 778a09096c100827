//! What a reconcile writes with, under its controller's name: server-side apply of what it owns, its
//! status, Events, and the report of an object that is not ready (its Ready condition, its status and a
//! Warning Event in one step).

use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams},
    core::object::HasStatus,
};
use serde_json::json;

use super::{
    Kind,
    events::{EventRecorder, EventType},
};
use crate::Result;

/// A status with a Ready condition, as every kind's here has: what [`Toolkit::report_not_ready`] needs
/// of it. Implemented where the kinds' conditions are known (the controllers').
pub trait ReadyStatus: Clone + Default + PartialEq + serde::Serialize {
    /// This status with its Ready condition False for `reason` and `message`, describing the object's
    /// `generation` (its observedGeneration too); its transition time is kept when it was False
    /// already, and the rest of the status stays as it is.
    fn not_ready(self, reason: &str, message: &str, generation: Option<i64>) -> Self;
}

pub struct Toolkit {
    client: kube::Client,
    events: EventRecorder,
    /// The controller's name, as the field manager of everything it applies.
    manager: &'static str,
}

impl Toolkit {
    /// The toolkit of controller `name`, recording its Events with `events`.
    pub fn new(client: kube::Client, name: &'static str, events: EventRecorder) -> Self {
        Self {
            events,
            client,
            manager: name,
        }
    }

    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The API of kind `K` in `object`'s namespace.
    pub fn api_beside<K>(&self, object: &impl Resource) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), &object.namespace().unwrap_or_default())
    }

    /// Applies `object` (server-side apply under the controller's field manager, forced: the fields it
    /// sends are the controller's) and returns it as the API server stored it. Only for objects the
    /// controller owns: applying to someone else's would make its fields ours.
    pub async fn apply<K>(&self, object: &K) -> Result<K>
    where
        K: Kind + serde::Serialize,
    {
        let api: Api<K> = self.api_beside(object);
        Ok(api
            .patch(&object.name_any(), &self.apply_params(), &Patch::Apply(object))
            .await?)
    }

    /// Writes `status` to `object`'s status subresource, unless `object` already has it: a converged
    /// reconcile writes nothing.
    pub async fn write_status<K>(&self, object: &K, status: K::Status) -> Result<()>
    where
        K: Kind + HasStatus,
        K::Status: PartialEq + serde::Serialize,
    {
        if object.status() == Some(&status) {
            return Ok(());
        }
        let api: Api<K> = self.api_beside(object);
        let body = json!({"apiVersion": K::api_version(&()), "kind": K::kind(&()), "status": status});
        api.patch_status(&object.name_any(), &self.apply_params(), &Patch::Apply(body))
            .await?;
        Ok(())
    }

    /// Reports `object` not ready: its status with the Ready condition False for `reason` and
    /// `message`, written, and a Warning Event saying the same when that changes the status (so a
    /// resync that finds the same fault again repeats nothing). Returns the status write's error; the
    /// Event is recorded either way.
    pub async fn report_not_ready<K>(&self, object: &K, reason: &'static str, message: String) -> Result<()>
    where
        K: Kind + HasStatus,
        K::Status: ReadyStatus,
    {
        let status = object.status().cloned().unwrap_or_default();
        self.report_not_ready_in(object, status, reason, message).await
    }

    /// [`Self::report_not_ready`], over `status` rather than the status `object` has: for a status the
    /// reconcile computed (a phase, counts) whose Ready condition is the fault's.
    pub async fn report_not_ready_in<K>(
        &self,
        object: &K,
        status: K::Status,
        reason: &'static str,
        message: String,
    ) -> Result<()>
    where
        K: Kind + HasStatus,
        K::Status: ReadyStatus,
    {
        let status = status.not_ready(reason, &message, object.meta().generation);
        let changed = object.status() != Some(&status);
        let written = self.write_status(object, status).await;
        if changed {
            self.publish(object, EventType::Warning, reason, message);
        }
        written
    }

    /// Records an Event about `object`; returns at once (see [`EventRecorder`]).
    pub fn publish<K>(&self, object: &K, type_: EventType, reason: &'static str, note: String)
    where
        K: Resource<DynamicType = ()>,
    {
        self.events
            .publish(self.manager, object.object_ref(&()), type_, reason, note);
    }

    fn apply_params(&self) -> PatchParams {
        PatchParams::apply(self.manager).force()
    }
}
