//! Which resource types are served right now: the built-ins plus one entry per served CRD version.
//! Discovery, routing and validation all read from here, so a CRD change is visible at once (D5).

use std::{collections::BTreeMap, sync::Arc};

use apimachinery::resource::{self, Origin, ResourceType};

/// The served resource types, by group, version and plural.
#[derive(Debug, Clone)]
pub struct Registry {
    /// (group, version, plural) -> type.
    by_gvr: BTreeMap<(String, String, String), Arc<ResourceType>>,
    /// Counts the changes of the served types, so that what is computed from them (the OpenAPI
    /// documents) can be kept until they change.
    generation: u64,
}

impl Default for Registry {
    fn default() -> Self {
        let mut registry = Registry {
            by_gvr: BTreeMap::new(),
            generation: 0,
        };
        for rt in resource::builtins() {
            registry.insert(rt);
        }
        registry
    }
}

impl Registry {
    fn insert(&mut self, rt: ResourceType) {
        self.by_gvr.insert(
            (rt.group.clone(), rt.version.clone(), rt.plural.clone()),
            Arc::new(rt),
        );
    }

    /// The type served at `group`/`version`/`plural`, if any.
    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.by_gvr
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
            .cloned()
    }

    /// The type serving `kind` in `api_version` (for owner references and apply bodies).
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        self.by_gvr
            .values()
            .find(|rt| rt.kind == kind && rt.api_version() == api_version)
            .cloned()
    }

    /// Every version served for `group`/`plural` (one storage, many views).
    pub fn versions_of(&self, group: &str, plural: &str) -> Vec<Arc<ResourceType>> {
        self.by_gvr
            .values()
            .filter(|rt| rt.group == group && rt.plural == plural)
            .cloned()
            .collect()
    }

    /// Every type served, ordered by group, version and plural.
    pub fn all(&self) -> Vec<ResourceType> {
        self.by_gvr.values().map(|rt| (**rt).clone()).collect()
    }

    /// Which set of served types this is: it changes whenever a CRD's types are set or removed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Replaces whatever the CRD `crd_name` served with `types`.
    pub fn set_crd(&mut self, crd_name: &str, types: Vec<ResourceType>) {
        self.remove_crd(crd_name);
        for rt in types {
            self.insert(rt);
        }
    }

    /// Stops serving what the CRD `crd_name` served.
    pub fn remove_crd(&mut self, crd_name: &str) {
        self.generation += 1;
        self.by_gvr.retain(|_, rt| {
            rt.origin
                != Origin::Crd {
                    name: crd_name.to_owned(),
                }
        });
    }
}
