//! Owner graphs over HTTP, for the garbage collection tests: objects created in two namespaces and at
//! cluster scope, then given owner references (self-references and cycles included), then deleted with
//! a propagation policy; and a model of what a garbage collector must leave behind.
//!
//! The model: an object is alive unless it was deleted, or it has owner references and none of them
//! names a live owner it can reach (a namespaced owner in its own namespace, or a cluster-scoped
//! owner). A live object keeps only its references to such owners: the collector drops the others
//! whenever it looks at an object that still has an owner, and it looks at each object written with
//! references and at each dependent of a removed owner. Foreground and Background end in the same
//! state; Orphan first drops every reference to the deleted owner.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures::{StreamExt, TryStreamExt, stream};
use kube::Client;
use serde_json::{Value, json};

use super::send;

/// The namespaces namespaced objects are spread over.
pub const NAMESPACES: [&str; 2] = ["owners-a", "owners-b"];
/// Requests in flight while a graph is built: a 10,000-object chain is built in seconds, not minutes.
const CONCURRENT_REQUESTS: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A ConfigMap in `NAMESPACES[i]`.
    Namespace(usize),
    /// A ClusterRole.
    Cluster,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Background,
    Foreground,
    Orphan,
}

impl Policy {
    fn as_str(self) -> &'static str {
        match self {
            Policy::Background => "Background",
            Policy::Foreground => "Foreground",
            Policy::Orphan => "Orphan",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Graph {
    pub scopes: Vec<Scope>,
    /// Per object, its owners: (index of the owner, blockOwnerDeletion).
    pub owners: Vec<Vec<(usize, bool)>>,
}

impl Graph {
    /// `len` objects in one namespace, each owned by the one before it; with `closed`, the first is
    /// owned by the last, which makes the chain a cycle.
    pub fn chain(len: usize, blocking: bool, closed: bool) -> Graph {
        let mut owners: Vec<Vec<(usize, bool)>> = (0..len)
            .map(|i| if i == 0 { vec![] } else { vec![(i - 1, blocking)] })
            .collect();
        if closed && len > 0 {
            owners[0].push((len - 1, blocking));
        }
        Graph {
            scopes: vec![Scope::Namespace(0); len],
            owners,
        }
    }

    pub fn len(&self) -> usize {
        self.scopes.len()
    }
}

/// A graph as created on a server: its objects' names (all labelled `graph=<label>`) and uids.
pub struct Built {
    label: String,
    scopes: Vec<Scope>,
    uids: Vec<String>,
}

fn name(label: &str, index: usize) -> String {
    format!("{label}-{index}")
}

fn collection(scope: Scope) -> String {
    match scope {
        Scope::Namespace(i) => format!("/api/v1/namespaces/{}/configmaps", NAMESPACES[i]),
        Scope::Cluster => "/apis/rbac.authorization.k8s.io/v1/clusterroles".to_owned(),
    }
}

fn type_meta(scope: Scope) -> (&'static str, &'static str) {
    match scope {
        Scope::Namespace(_) => ("v1", "ConfigMap"),
        Scope::Cluster => ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    }
}

/// Whether the server still answers `/version`.
pub async fn serves_version(client: &Client) -> bool {
    let (status, body) = send(client, "GET", "/version", "application/json", Value::Null).await;
    status == 200 && body.get("gitVersion").is_some()
}

pub async fn create_namespaces(client: &Client) {
    for namespace in NAMESPACES {
        let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        let (status, body) = send(client, "POST", "/api/v1/namespaces", "application/json", object).await;
        assert!(
            status == 201 || status == 409,
            "namespace {namespace}: {status} {body}"
        );
    }
}

/// Creates every object, then gives each its owner references. An object whose references all point
/// where no owner can be (another namespace) is collected on that write, and with it whatever it
/// owned: later patches of those find nothing (404), which the model expects.
pub async fn build(client: &Client, label: &str, graph: &Graph) -> Built {
    let uids: Vec<String> = stream::iter(0..graph.len())
        .map(|i| async move {
            let scope = graph.scopes[i];
            let (api_version, kind) = type_meta(scope);
            let object = json!({"apiVersion": api_version, "kind": kind,
                "metadata": {"name": name(label, i), "labels": {"graph": label}}});
            let (status, body) = send(client, "POST", &collection(scope), "application/json", object).await;
            assert_eq!(status, 201, "creating {}: {body}", name(label, i));
            body["metadata"]["uid"].as_str().expect("a uid").to_owned()
        })
        .buffered(CONCURRENT_REQUESTS)
        .collect()
        .await;
    let built = Built {
        label: label.to_owned(),
        scopes: graph.scopes.clone(),
        uids,
    };
    stream::iter(0..graph.len())
        .filter(|i| std::future::ready(!graph.owners[*i].is_empty()))
        .map(|i| {
            let built = &built;
            async move {
                let references: Vec<Value> = graph.owners[i]
                    .iter()
                    .map(|&(owner, blocking)| built.reference(owner, blocking))
                    .collect();
                let patch = json!({"metadata": {"ownerReferences": references}});
                let (status, body) = send(
                    client,
                    "PATCH",
                    &built.path(i),
                    "application/merge-patch+json",
                    patch,
                )
                .await;
                assert!(
                    status == 200 || status == 404,
                    "owners of {}: {status} {body}",
                    built.name(i)
                );
            }
        })
        .buffer_unordered(CONCURRENT_REQUESTS)
        .collect::<Vec<()>>()
        .await;
    built
}

impl Built {
    pub fn name(&self, index: usize) -> String {
        name(&self.label, index)
    }

    fn path(&self, index: usize) -> String {
        format!("{}/{}", collection(self.scopes[index]), self.name(index))
    }

    fn reference(&self, owner: usize, blocking: bool) -> Value {
        let (api_version, kind) = type_meta(self.scopes[owner]);
        json!({"apiVersion": api_version, "kind": kind, "name": self.name(owner),
            "uid": self.uids[owner], "blockOwnerDeletion": blocking})
    }

    /// Deletes one object; the HTTP status.
    pub async fn delete(&self, client: &Client, index: usize, policy: Policy) -> u16 {
        let options =
            json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": policy.as_str()});
        send(client, "DELETE", &self.path(index), "application/json", options)
            .await
            .0
    }

    /// The objects of this graph the server holds: index -> indices of the owners its references name.
    pub async fn observe(&self, client: &Client) -> BTreeMap<usize, BTreeSet<usize>> {
        let by_uid: HashMap<&str, usize> = self
            .uids
            .iter()
            .enumerate()
            .map(|(i, uid)| (uid.as_str(), i))
            .collect();
        let mut collections: Vec<String> = NAMESPACES
            .iter()
            .enumerate()
            .map(|(i, _)| collection(Scope::Namespace(i)))
            .collect();
        collections.push(collection(Scope::Cluster));
        let lists: Vec<Value> = stream::iter(collections)
            .then(|collection| async move {
                let path = format!("{collection}?labelSelector=graph%3D{}", self.label);
                let (status, list) = send(client, "GET", &path, "application/json", Value::Null).await;
                if status == 200 {
                    Ok(list)
                } else {
                    Err(format!("{path}: {status} {list}"))
                }
            })
            .try_collect()
            .await
            .expect("lists answer");
        let mut observed = BTreeMap::new();
        for item in lists
            .iter()
            .flat_map(|list| list["items"].as_array().into_iter().flatten())
        {
            let uid = item["metadata"]["uid"].as_str().unwrap_or_default();
            let index = *by_uid.get(uid).expect("an object of this graph");
            let owners = item["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|reference| {
                    let uid = reference["uid"].as_str().unwrap_or_default();
                    by_uid.get(uid).copied().unwrap_or(usize::MAX)
                })
                .collect();
            observed.insert(index, owners);
        }
        observed
    }
}

/// What a garbage collector must leave of a graph.
#[derive(Debug, Clone)]
pub struct Model {
    scopes: Vec<Scope>,
    alive: Vec<bool>,
    owners: Vec<BTreeSet<usize>>,
    /// Who names each object as an owner (as first built: references are only ever dropped).
    dependents: Vec<Vec<usize>>,
}

impl Model {
    /// The graph once every object has its owner references.
    pub fn new(graph: &Graph) -> Model {
        let mut dependents = vec![Vec::new(); graph.len()];
        for (dependent, owners) in graph.owners.iter().enumerate() {
            for &(owner, _) in owners {
                dependents[owner].push(dependent);
            }
        }
        let mut model = Model {
            scopes: graph.scopes.clone(),
            alive: vec![true; graph.len()],
            owners: graph
                .owners
                .iter()
                .map(|owners| owners.iter().map(|&(owner, _)| owner).collect())
                .collect(),
            dependents,
        };
        model.collect((0..graph.len()).collect());
        model
    }

    pub fn is_alive(&self, index: usize) -> bool {
        self.alive[index]
    }

    /// Deletes `index` as the server should; false when it was already gone.
    pub fn delete(&mut self, index: usize, policy: Policy) -> bool {
        if !self.alive[index] {
            return false;
        }
        if policy == Policy::Orphan {
            for (dependent, owners) in self.owners.iter_mut().enumerate() {
                if dependent != index {
                    owners.remove(&index);
                }
            }
        }
        self.alive[index] = false;
        self.collect(self.dependents[index].clone());
        true
    }

    /// Whether `dependent`'s reference to `owner` can find it: the collector looks a namespaced owner
    /// up in the dependent's own namespace.
    fn reaches(&self, dependent: usize, owner: usize) -> bool {
        match (self.scopes[dependent], self.scopes[owner]) {
            (_, Scope::Cluster) => true,
            (Scope::Namespace(d), Scope::Namespace(o)) => d == o,
            (Scope::Cluster, Scope::Namespace(_)) => false,
        }
    }

    fn holds(&self, dependent: usize) -> bool {
        self.owners[dependent].is_empty()
            || self.owners[dependent]
                .iter()
                .any(|&owner| self.alive[owner] && self.reaches(dependent, owner))
    }

    /// Removes, until none is left, every live object none of whose owners holds it, starting from
    /// `candidates` (the only objects whose owners changed).
    /// Then drops every reference of a live object to an owner that is gone or out of its reach.
    fn collect(&mut self, mut candidates: Vec<usize>) {
        while let Some(i) = candidates.pop() {
            if self.alive[i] && !self.holds(i) {
                self.alive[i] = false;
                candidates.extend(&self.dependents[i]);
            }
        }
        for dependent in 0..self.alive.len() {
            let kept: BTreeSet<usize> = self.owners[dependent]
                .iter()
                .copied()
                .filter(|&owner| self.alive[owner] && self.reaches(dependent, owner))
                .collect();
            self.owners[dependent] = kept;
        }
    }

    /// Whether `observed` is what the collector must leave: the same objects alive, each naming the
    /// owners the model keeps.
    pub fn matches(&self, observed: &BTreeMap<usize, BTreeSet<usize>>) -> Result<(), String> {
        let expected: BTreeSet<usize> = (0..self.alive.len()).filter(|&i| self.alive[i]).collect();
        let present: BTreeSet<usize> = observed.keys().copied().collect();
        if expected != present {
            return Err(format!(
                "alive: expected {expected:?}, found {present:?}; missing {:?}, extra {:?}",
                expected.difference(&present).collect::<Vec<_>>(),
                present.difference(&expected).collect::<Vec<_>>()
            ));
        }
        for (&i, found) in observed {
            if *found != self.owners[i] {
                return Err(format!(
                    "object {i} names owners {found:?}, expected {:?}",
                    self.owners[i]
                ));
            }
        }
        Ok(())
    }
}
