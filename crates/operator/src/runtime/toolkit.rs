//! What a reconcile writes with, under its controller's name: server-side apply of what it owns, its
//! status, and Events.

use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams},
    core::object::HasStatus,
};
use serde_json::json;

use super::events::{EventRecorder, EventType};
use crate::Result;

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
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::Serialize
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
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
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + HasStatus
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
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
